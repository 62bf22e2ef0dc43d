/// Reads one table of a document, collecting every problem instead of stopping at the first,
/// and reporting keys nobody asked for as unknown.
struct SectionReader {
    let path: String
    private let entries: [String: ConfigValue]
    private var consumed: Set<String> = []
    private(set) var problems: [String] = []

    init(path: String, value: ConfigValue?, problems: inout [String]) {
        self.path = path
        switch value {
        case .table(let entries)?:
            self.entries = entries
        case nil:
            self.entries = [:]
        case let other?:
            self.entries = [:]
            problems.append("[\(path)] must be a table, found \(other.typeName)")
        }
    }

    var isPresent: Bool { !entries.isEmpty }

    private func name(_ key: String) -> String { "\(path).\(key)" }

    private mutating func take(_ key: String) -> ConfigValue? {
        consumed.insert(key)
        return entries[key]
    }

    func has(_ key: String) -> Bool { entries[key] != nil }

    /// The value as written, for nested tables and arrays that get their own reader.
    mutating func value(_ key: String) -> ConfigValue? {
        take(key)
    }

    /// The key's text, or `fallback` when it is absent (or wrong, with the problem noted).
    mutating func string(_ key: String, default fallback: String) -> String {
        text(key) ?? fallback
    }

    /// The key's text; a missing key is a problem, and "" stands in until the problems are reported.
    mutating func requiredString(_ key: String) -> String {
        guard has(key) else {
            problems.append("\(name(key)) is missing")
            return ""
        }
        return text(key) ?? ""
    }

    /// The key's text, nil when it is absent or "" (how the file says "none", as for a path).
    mutating func optionalString(_ key: String) -> String? {
        text(key, emptyAllowed: true).flatMap { $0.isEmpty ? nil : $0 }
    }

    /// The text of `key`; nil when absent, or when it is not a string or empty (problems noted).
    private mutating func text(_ key: String, emptyAllowed: Bool = false) -> String? {
        guard let value = take(key) else { return nil }
        guard case .string(let text) = value else {
            problems.append("\(name(key)) must be a string, found \(value.typeName)")
            return nil
        }
        if !emptyAllowed && text.isEmpty {
            problems.append("\(name(key)) must not be empty")
            return nil
        }
        return text
    }

    mutating func integer(_ key: String, default fallback: Int, in range: ClosedRange<Int>) -> Int {
        guard let value = take(key) else { return fallback }
        guard case .integer(let number) = value else {
            problems.append("\(name(key)) must be an integer, found \(value.typeName)")
            return fallback
        }
        guard range.contains(number) else {
            problems.append("\(name(key)) must be between \(range.lowerBound) and \(range.upperBound), found \(number)")
            return fallback
        }
        return number
    }

    /// Accepts integers too: `interval_s = 5` is as natural as `5.0`.
    mutating func number(_ key: String, default fallback: Double, in range: ClosedRange<Double>) -> Double {
        guard let value = take(key) else { return fallback }
        let number: Double
        switch value {
        case .integer(let int): number = Double(int)
        case .double(let double): number = double
        default:
            problems.append("\(name(key)) must be a number, found \(value.typeName)")
            return fallback
        }
        guard number.isFinite, range.contains(number) else {
            problems.append("\(name(key)) must be between \(range.lowerBound) and \(range.upperBound), found \(number)")
            return fallback
        }
        return number
    }

    mutating func bool(_ key: String, default fallback: Bool) -> Bool {
        guard let value = take(key) else { return fallback }
        guard case .bool(let flag) = value else {
            problems.append("\(name(key)) must be true or false, found \(value.typeName)")
            return fallback
        }
        return flag
    }

    /// A sub-table (`[input.serial]`, `[input.serial.keys]`); nil when absent.
    mutating func table(_ key: String) -> [String: ConfigValue]? {
        guard let value = take(key) else { return nil }
        guard case .table(let entries) = value else {
            problems.append("\(name(key)) must be a table, found \(value.typeName)")
            return nil
        }
        return entries
    }

    /// A list of strings; absent means empty.
    mutating func strings(_ key: String) -> [String] {
        guard let value = take(key) else { return [] }
        guard case .array(let elements) = value else {
            problems.append("\(name(key)) must be an array of strings, found \(value.typeName)")
            return []
        }
        var texts: [String] = []
        for (index, element) in elements.enumerated() {
            guard case .string(let text) = element else {
                problems.append("\(name(key))[\(index)] must be a string, found \(element.typeName)")
                continue
            }
            texts.append(text)
        }
        return texts
    }

    mutating func oneOf(_ key: String, default fallback: String, allowed: [String]) -> String {
        let text = string(key, default: fallback)
        guard allowed.contains(text) else {
            problems.append("\(name(key)) must be one of \(allowed.joined(separator: ", ")), found \"\(text)\"")
            return fallback
        }
        return text
    }

    /// A rule across keys of this table was broken; `problem` starts with the key it is about.
    mutating func reject(_ problem: String) {
        problems.append("\(path).\(problem)")
    }

    /// Call last: everything not read is a key this version does not know.
    mutating func finish(into all: inout [String]) {
        for key in entries.keys.sorted() where !consumed.contains(key) {
            problems.append("unknown key \(name(key))")
        }
        all.append(contentsOf: problems)
    }
}
