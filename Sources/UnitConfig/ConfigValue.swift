#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import TOMLKit

/// A configuration document as plain values, whatever it was written in (TOML on disk; JSON from
/// the fleet later), so that one validator reads both.
public indirect enum ConfigValue: Sendable, Equatable {
    case table([String: ConfigValue])
    case array([ConfigValue])
    case string(String)
    case integer(Int)
    case double(Double)
    case bool(Bool)
    /// TOML dates and times: not used by any setting, kept so they can be reported as the wrong type.
    case other(typeName: String)

    /// Integers and floats alike, as TOML writers mix them in coordinate lists.
    var number: Double? {
        switch self {
        case .integer(let value): Double(value)
        case .double(let value): value.isFinite ? value : nil
        default: nil
        }
    }

    var typeName: String {
        switch self {
        case .table: "table"
        case .array: "array"
        case .string: "string"
        case .integer: "integer"
        case .double: "number"
        case .bool: "boolean"
        case .other(let name): name
        }
    }
}

extension ConfigValue {
    /// Parses TOML text; a syntax error names its line and column.
    public static func parseTOML(_ text: String) throws(ConfigError) -> ConfigValue {
        do {
            return ConfigValue(toml: try TOMLTable(string: text))
        } catch let error as TOMLParseError {
            let where_ = "line \(error.source.begin.line), column \(error.source.begin.column)"
            throw ConfigError(problems: ["syntax error at \(where_): \(error.description)"])
        } catch {
            throw ConfigError(problems: ["syntax error: \(error)"])
        }
    }

    /// Reads a TOML file; unreadable files and syntax errors are one problem each.
    public static func loadTOML(path: String) throws(ConfigError) -> ConfigValue {
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            // A missing file is the usual slip: say so, and how to name another.
            let reason = FileManager.default.fileExists(atPath: path) ? describeFileError(error) : "no such file; name the configuration file with --config"
            throw ConfigError(problems: ["cannot read \(path): \(reason)"])
        }
        return try parseTOML(text)
    }

    init(toml table: TOMLTable) {
        var entries: [String: ConfigValue] = [:]
        for key in table.keys {
            if let value = table[key] { entries[key] = ConfigValue(tomlValue: value) }
        }
        self = .table(entries)
    }

    init(tomlValue value: TOMLValueConvertible) {
        switch value.type {
        case .table: self = ConfigValue(toml: value.table!)
        case .array: self = .array(value.array!.map { ConfigValue(tomlValue: $0) })
        case .string: self = .string(value.string!)
        case .int: self = .integer(value.int!)
        case .double: self = .double(value.double!)
        case .bool: self = .bool(value.bool!)
        case .date: self = .other(typeName: "date")
        case .time: self = .other(typeName: "time")
        case .dateTime: self = .other(typeName: "date-time")
        }
    }
}

/// Every problem found in a document, one human line each.
public struct ConfigError: Error, Sendable, Equatable, CustomStringConvertible {
    public var problems: [String]

    public init(problems: [String]) {
        self.problems = problems
    }

    public var description: String { problems.joined(separator: "\n") }
}
