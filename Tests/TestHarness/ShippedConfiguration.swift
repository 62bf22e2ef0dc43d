import Foundation
import UnitConfig

/// etc/taxiunitd.toml, the file the package ships: it names every key the unit reads, set or
/// commented out, so it is where the list of keys comes from.
public enum ShippedConfiguration {
    /// Keys by top-level section, as the shipped file names them (set or commented out);
    /// `[reporting.available]` counts as `reporting`, `[[zones]]` as `zones`.
    public static func keys() throws -> [String: Set<String>] {
        let path = Corpus.packageRoot + "/etc/taxiunitd.toml"
        let text = try String(contentsOf: URL(fileURLWithPath: path), encoding: .utf8)
        let header = #/^#?\s?\[\[?([a-z_.]+)\]\]?\s*$/#
        let key = #/^#? ?([a-z_]+) = /#
        var section: String?
        var keys: [String: Set<String>] = [:]
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if let match = line.wholeMatch(of: header) {
                section = String(match.1.split(separator: ".")[0])
            } else if let section, let match = line.prefixMatch(of: key) {
                keys[section, default: []].insert(String(match.1))
            }
        }
        return keys
    }

    /// The keys a fleet document may set, by section: `UnitConfiguration.remotelySettable` applied
    /// to the shipped keys.
    public static func remotelySettable() throws -> [String: Set<String>] {
        let shipped = try keys()
        return try UnitConfiguration.remotelySettable.reduce(into: [:]) { settable, entry in
            guard let all = shipped[entry.key] else { throw HarnessError("etc/taxiunitd.toml has no [\(entry.key)]") }
            switch entry.value {
            case .everyKey: settable[entry.key] = all
            case .only(let keys): settable[entry.key] = keys
            case .everyKeyExcept(let local): settable[entry.key] = all.subtracting(local)
            }
        }
    }
}
