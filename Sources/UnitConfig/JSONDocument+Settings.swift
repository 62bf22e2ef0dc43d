import StrictJSON
import UnitCore

extension JSONDocument {
    /// The document as settings. Integers are literals without fraction or exponent that fit an
    /// `Int`; every other number must be finite as a `Double`.
    public func configValue(path: String = "") throws(ConfigError) -> ConfigValue {
        var problems: [String] = []
        let value = toConfigValue(path: path, problems: &problems)
        guard problems.isEmpty else { throw ConfigError(problems: problems) }
        return value
    }

    private func toConfigValue(path: String, problems: inout [String]) -> ConfigValue {
        func child(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }
        switch self {
        case .object(let members):
            var entries: [String: ConfigValue] = [:]
            for member in members { entries[member.key] = member.value.toConfigValue(path: child(member.key), problems: &problems) }
            return .table(entries)
        case .array(let elements):
            return .array(elements.enumerated().map { $1.toConfigValue(path: "\(path)[\($0)]", problems: &problems) })
        case .string(let text):
            return .string(text)
        case .bool(let flag):
            return .bool(flag)
        case .null:
            return .other(typeName: "null")
        case .number(let literal):
            if !literal.contains(where: { $0 == "." || $0 == "e" || $0 == "E" }) {
                if let integer = Int(literal) { return .integer(integer) }
                problems.append("\(path) is an integer too large: \(literal)")
                return .other(typeName: "integer")
            }
            guard let number = Double(literal), number.isFinite else {
                problems.append("\(path) is a number out of range: \(literal)")
                return .other(typeName: "number")
            }
            return .double(number)
        }
    }
}

extension JSONDocument {
    /// Settings as JSON, for showing what is in force. Dates and times have no JSON form and become null.
    public init(_ value: ConfigValue) {
        switch value {
        case .table(let entries): self = .object(entries.sorted { $0.key < $1.key }.map { ($0.key, JSONDocument($0.value)) })
        case .array(let elements): self = .array(elements.map(JSONDocument.init))
        case .string(let text): self = .string(text)
        case .integer(let number): self = .number(literal: String(number))
        case .double(let number): self = .number(literal: "\(number)")
        case .bool(let flag): self = .bool(flag)
        case .other: self = .null
        }
    }
}
