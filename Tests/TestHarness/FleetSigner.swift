import Foundation

/// The fleet side, through the real `taxifleet gen-key` and `sign-config`.
public final class FleetSigner: Sendable {
    public let keyPath: String
    /// The line `gen-key` prints for the unit's [fleet] section.
    public let pubkeysLine: String

    public init(in directory: ScratchDirectory, name: String = "fleet") throws {
        keyPath = directory.file("\(name).key")
        let (output, code) = try runCommand(Corpus.binary("taxifleet"), ["gen-key", "--out", keyPath])
        guard code == 0, output.hasPrefix("config_pubkeys = [") else { throw HarnessError("gen-key failed: \(output)") }
        pubkeysLine = output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// `[fleet]` for the unit's file: trust this key.
    public func fleetSection(rollbackAfterS: Double = 120) -> String {
        "[fleet]\n\(pubkeysLine)\nrollback_after_s = \(rollbackAfterS)\n"
    }

    /// `json` signed for `topic`, as `sign-config` prints it.
    public func sign(_ json: String, topic: String) throws -> String {
        let document = URL(fileURLWithPath: keyPath).deletingLastPathComponent().appendingPathComponent("doc-\(UUID().uuidString).json").path
        try json.write(toFile: document, atomically: true, encoding: .utf8)
        let (output, code) = try runCommand(Corpus.binary("taxifleet"), ["sign-config", "--key", keyPath, "--topic", topic, document])
        guard code == 0 else { throw HarnessError("sign-config failed: \(output)") }
        return output.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
