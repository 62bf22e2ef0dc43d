#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// Renders control answers for people: one `label  value` line per field, nested objects indented,
/// known fields first in a fixed order. It works on the JSON, so fields a newer daemon adds show up
/// without a change here (their names turned into words).
public enum HumanReadable {
    /// The order fields appear in; others follow alphabetically.
    static let order = [
        "unit", "state", "pauseReason", "job", "seatsLeft", "zone", "ignition", "meter", "sosPending", "gps", "clock", "broker", "outbox", "droppedPositions",
        "storedPositions", "config", "connected", "since", "lastFixAgeS", "lastFixTime", "clockSource", "lastError",
        "messageClass", "topic", "id", "createdAt", "passengers", "pickupTime", "dropTime", "distanceM",
        "depth", "inFlight", "byClass", "depthByClass", "oldest",
    ]

    /// Known labels; anything else is its camelCase name split into words.
    static let labels = [
        "gps": "gpsd", "lastFixAgeS": "last fix age", "lastFixTime": "last fix at", "lastError": "last error",
        "inFlight": "in flight", "byClass": "by class", "depthByClass": "waiting by class", "storedPositions": "stored positions",
        "droppedPositions": "dropped positions", "seatsLeft": "seats left", "pauseReason": "paused because", "sosPending": "SOS pending",
        "createdAt": "stored at", "messageClass": "class", "distanceM": "distance", "pickupTime": "pickup at", "dropTime": "drop at",
        "aside": "set aside", "refused": "refused since start", "runningForS": "running for", "downForS": "down for",
        "onDutyS": "on duty", "drivingS": "driving", "continuousDrivingS": "continuous driving",
    ]

    /// Class order for outbox maps: most urgent first.
    static let classOrder = ["alarm", "reply", "event", "position"]

    public static func render(_ value: some Encodable) -> String {
        guard let data = try? JSONEncoder().encode(value), let json = try? JSONDecoder().decode(JSONValue.self, from: data) else { return "" }
        return lines(json, indent: "").joined(separator: "\n")
    }

    static func lines(_ json: JSONValue, indent: String) -> [String] {
        switch json {
        case .object(let object):
            let keys = object.keys.filter { object[$0] != .null }.sorted(by: isOrderedBefore)
            let width = keys.map { label($0).count }.max() ?? 0
            return keys.flatMap { key -> [String] in
                let name = label(key)
                switch object[key]! {
                case .array([]), .object([:]):
                    // An empty map or list is said, not left as a heading with nothing under it.
                    return ["\(indent)\(padded(name, to: width))  none"]
                case .object(var nested):
                    // A link (gpsd, broker) leads with its state: "broker  connected", details below.
                    if case .bool(let connected)? = nested.removeValue(forKey: "connected") {
                        let header = "\(indent)\(padded(name, to: width))  \(connected ? "connected" : "disconnected")"
                        return [header] + lines(.object(nested), indent: indent + "  ")
                    }
                    return ["\(indent)\(name):"] + lines(.object(nested), indent: indent + "  ")
                case .array(let list):
                    return ["\(indent)\(name):"] + list.flatMap { item in
                        let itemLines = lines(item, indent: indent + "    ")
                        guard let first = itemLines.first else { return [String]() }
                        return [indent + "  - " + first.dropFirst(indent.count + 4)] + itemLines.dropFirst()
                    }
                case let scalar:
                    return ["\(indent)\(padded(name, to: width))  \(format(scalar, key: key))"]
                }
            }
        case .array(let list):
            // A blank line between entries (rides) keeps them apart.
            return list.enumerated().flatMap { index, item in (index > 0 ? [""] : []) + lines(item, indent: indent) }
        case let scalar:
            return [indent + format(scalar, key: "")]
        }
    }

    static func isOrderedBefore(_ a: String, _ b: String) -> Bool {
        let rankA = order.firstIndex(of: a) ?? classOrder.firstIndex(of: a).map { order.count + $0 } ?? Int.max
        let rankB = order.firstIndex(of: b) ?? classOrder.firstIndex(of: b).map { order.count + $0 } ?? Int.max
        return rankA != rankB ? rankA < rankB : a < b
    }

    static func label(_ key: String) -> String {
        if let known = labels[key] { return known }
        var words = ""
        for character in key {
            if character.isUppercase && !words.isEmpty { words += " " }
            words += character.lowercased()
        }
        return words
    }

    static func format(_ value: JSONValue, key: String) -> String {
        switch value {
        case .bool(let flag):
            return flag ? "yes" : "no"
        case .number(let number):
            if isTimestamp(key), number > 1e12 { return localTime(millisecondsSince1970: number) }
            if key.hasSuffix("AgeS") { return printf("%.1f s ago", number) }
            if key.hasSuffix("M") { return printf("%.0f m", number) }
            if key.hasSuffix("S") { return duration(number) }
            return number == number.rounded() && abs(number) < 1e15 ? String(Int64(number)) : String(number)
        case .string(let text):
            // A JSON document given as text (remote settings): an empty one is nothing.
            return text == "{}" || text == "[]" ? "none" : text
        case .null:
            return "-"
        case .object, .array:
            return ""
        }
    }

    /// A span in whole seconds, minutes and hours: "42 s", "3 min 5 s", "26 h 4 min".
    static func duration(_ seconds: Double) -> String {
        guard seconds.isFinite, seconds >= 0, seconds < 1e12 else { return printf("%g s", seconds) }
        let whole = Int64(seconds.rounded())
        if whole < 60 { return "\(whole) s" }
        if whole < 3600 { return "\(whole / 60) min \(whole % 60) s" }
        return "\(whole / 3600) h \((whole % 3600) / 60) min"
    }

    static func isTimestamp(_ key: String) -> Bool {
        key == "since" || key == "t" || key.hasSuffix("Time") || key.hasSuffix("At")
    }

    static func padded(_ text: String, to width: Int) -> String {
        text + String(repeating: " ", count: max(0, width - text.count))
    }

    /// C's printf formatting of one number: `String(format:)` would link Foundation's ICU data
    /// (bench/README.md, "Footprint").
    static func printf(_ format: String, _ number: Double) -> String {
        var buffer = [CChar](repeating: 0, count: 64)
        let length = withVaList([number]) { vsnprintf(&buffer, buffer.count, format, $0) }
        return String(decoding: buffer.prefix(max(0, min(Int(length), buffer.count - 1))).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// `yyyy-MM-dd HH:mm:ss +hh:mm` in the machine's time zone, with its offset from UTC: a board's
    /// local time is no one's guess.
    static func localTime(millisecondsSince1970 milliseconds: Double) -> String {
        var parts = tm()
        var buffer = [CChar](repeating: 0, count: 40)
        guard var seconds = time_t(exactly: (milliseconds / 1000).rounded(.down)), localtime_r(&seconds, &parts) != nil else {
            return String(milliseconds)
        }
        let length = strftime(&buffer, buffer.count, "%Y-%m-%d %H:%M:%S %z", &parts)
        var text = String(decoding: buffer.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        // strftime's +hhmm as +hh:mm.
        if text.count >= 5 { text.insert(":", at: text.index(text.endIndex, offsetBy: -2)) }
        return text
    }
}

/// Any JSON, decoded without losing the difference between `true` and `1`.
enum JSONValue: Decodable, Equatable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    init(from decoder: Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let flag = try? container.decode(Bool.self) {
            self = .bool(flag)
        } else if let number = try? container.decode(Double.self) {
            self = .number(number)
        } else if let text = try? container.decode(String.self) {
            self = .string(text)
        } else if let list = try? container.decode([JSONValue].self) {
            self = .array(list)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }
}
