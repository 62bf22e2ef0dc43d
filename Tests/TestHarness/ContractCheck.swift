import Foundation
import MQTTLink

/// Validates recorded MQTT messages against the machine-readable contract (docs/schemas) with the
/// dispatcher teams' own tool, contrib/taxiunit_contract.py, on Debian's python3 and python3-jsonschema.
public enum ContractCheck {
    /// One line per problem; empty when every message conforms.
    public static func problems(in messages: [MQTTMessage]) throws -> [String] {
        let scratch = try ScratchDirectory("taxiunitd-contract")
        let file = scratch.file("messages.jsonl")
        var lines: [String] = []
        var problems: [String] = []
        for message in messages {
            guard let text = String(validating: message.payload, as: UTF8.self) else {
                problems.append("\(message.topic): payload is not UTF-8")
                continue
            }
            let record = try JSONSerialization.data(withJSONObject: ["topic": message.topic, "payload": text])
            lines.append(String(decoding: record, as: UTF8.self))
        }
        try (lines.joined(separator: "\n") + "\n").write(toFile: file, atomically: true, encoding: .utf8)
        let result = try runCommand("/usr/bin/python3", [Corpus.packageRoot + "/contrib/taxiunit_contract.py", "validate", file])
        let reported = result.output.split(separator: "\n").map(String.init).filter { !$0.hasPrefix("contract: ") }
        guard result.exitCode == 0 || !reported.isEmpty else { throw HarnessError("the contract check failed: \(result.output)") }
        return problems + reported
    }
}
