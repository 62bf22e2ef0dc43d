import StrictJSON
import UnitCore

/// Reading what units publish: a field of the wrong type counts as absent, as the protocol says
/// receivers must take unknown and missing fields in their stride.
extension JSONDocument {
    func int(_ key: String) -> Int? {
        guard case .number(let literal)? = self[key] else { return nil }
        return Int(literal) ?? Double(literal).flatMap { $0.isFinite && abs($0) < 9e15 ? Int($0) : nil }
    }

    func double(_ key: String) -> Double? {
        guard case .number(let literal)? = self[key] else { return nil }
        return Double(literal).flatMap { $0.isFinite ? $0 : nil }
    }

    func string(_ key: String) -> String? {
        guard case .string(let text)? = self[key] else { return nil }
        return text
    }

    func bool(_ key: String) -> Bool? {
        guard case .bool(let flag)? = self[key] else { return nil }
        return flag
    }

    func strings(_ key: String) -> [String] {
        guard case .array(let elements)? = self[key] else { return [] }
        return elements.compactMap { if case .string(let text) = $0 { text } else { nil } }
    }

    /// The integer members of an object member (`config_versions`, `outbox`, `aside`).
    func counts(_ key: String) -> [String: Int] {
        guard case .object(let members)? = self[key] else { return [:] }
        var counts: [String: Int] = [:]
        for member in members {
            if case .number(let literal) = member.value, let count = Int(literal) { counts[member.key] = count }
        }
        return counts
    }
}

/// Building the `--json` answers.
extension JSONDocument {
    static func int(_ value: Int) -> JSONDocument { .number(literal: String(value)) }

    /// An object without the members whose value is unknown: the protocol omits them rather than
    /// writing null, and so does this tool.
    static func members(_ members: [(String, JSONDocument?)]) -> JSONDocument {
        .object(members.compactMap { key, value in value.map { (key: key, value: $0) } })
    }

    /// Compact and sorted, one line.
    public var text: String { String(decoding: canonicalBytes, as: UTF8.self) }
}
