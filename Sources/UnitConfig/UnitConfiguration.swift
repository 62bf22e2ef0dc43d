import Foundation
import UnitCore

/// The daemon's settings, validated. Build it with `load(path:)` or `init(document:)`.
public struct UnitConfiguration: Sendable, Equatable {
    public struct Unit: Sendable, Equatable {
        public var id: String
        public var fleet: String
        /// The terminal's language: a catalogue `<language>.toml` in `catalogues`.
        public var language: String
        public var catalogues: String
    }

    public struct GPSD: Sendable, Equatable {
        public var host: String
        public var port: Int
    }

    public struct MQTT: Sendable, Equatable {
        public var host: String
        public var port: Int
        public var keepaliveS: Int
        public var topicPrefix: String
        /// Reconnect backoff bounds: capped exponential with full jitter between them.
        public var reconnectMinS: Double
        public var reconnectMaxS: Double
        /// Messages handed to libmosquitto at once; the rest wait in SQLite.
        public var maxInflight: Int
    }

    public struct Store: Sendable, Equatable {
        public var path: String
    }

    public struct Control: Sendable, Equatable {
        public var socket: String
    }

    public struct Reporting: Sendable, Equatable {
        public var intervalS: Double
    }

    public struct Log: Sendable, Equatable {
        public var level: String
    }

    public var unit: Unit
    public var gpsd: GPSD
    public var mqtt: MQTT
    public var store: Store
    public var control: Control
    public var reporting: Reporting
    public var log: Log
    public var input: InputConfiguration

    public static let logLevels = ["trace", "debug", "info", "notice", "warning", "error", "critical"]

    /// Validates the whole document and reports every problem at once.
    public init(document: ConfigValue) throws(ConfigError) {
        var problems: [String] = []
        guard case .table(let root) = document else {
            throw ConfigError(problems: ["the document must be a table"])
        }
        let known = ["unit", "gpsd", "mqtt", "store", "control", "reporting", "log", "input"]
        for key in root.keys.sorted() where !known.contains(key) {
            problems.append("unknown section [\(key)]")
        }

        var unitSection = SectionReader(path: "unit", value: root["unit"], problems: &problems)
        let unit = Unit(
            id: unitSection.string("id", default: nil) ?? "",
            fleet: unitSection.string("fleet", default: nil) ?? "",
            language: unitSection.string("language", default: "en")!,
            catalogues: unitSection.string("catalogues", default: "/usr/share/taxiunitd/lang")!
        )
        if !Self.isLanguageCode(unit.language) {
            unitSection.reject("language must be a language code such as en, it or zu, found \"\(unit.language)\"")
        }
        for (key, value) in [("id", unit.id), ("fleet", unit.fleet)] where !value.isEmpty && !Self.isTopicSafe(value) {
            unitSection.reject("\(key) may use only letters, digits, '-' and '_', found \"\(value)\"")
        }
        unitSection.finish(into: &problems)

        var gpsdSection = SectionReader(path: "gpsd", value: root["gpsd"], problems: &problems)
        let gpsd = GPSD(
            host: gpsdSection.string("host", default: "127.0.0.1")!,
            port: gpsdSection.integer("port", default: 2947, in: 1...65535)
        )
        gpsdSection.finish(into: &problems)

        var mqttSection = SectionReader(path: "mqtt", value: root["mqtt"], problems: &problems)
        let mqtt = MQTT(
            host: mqttSection.string("host", default: "127.0.0.1")!,
            port: mqttSection.integer("port", default: 1883, in: 1...65535),
            keepaliveS: mqttSection.integer("keepalive_s", default: 30, in: 5...3600),
            topicPrefix: mqttSection.string("topic_prefix", default: "taxi")!,
            reconnectMinS: mqttSection.number("reconnect_min_s", default: 1, in: 0.1...3600),
            reconnectMaxS: mqttSection.number("reconnect_max_s", default: 300, in: 0.1...3600),
            maxInflight: mqttSection.integer("max_inflight", default: 10, in: 1...1000)
        )
        if mqtt.reconnectMinS > mqtt.reconnectMaxS {
            mqttSection.reject("reconnect_min_s must not exceed reconnect_max_s")
        }
        if !Self.isTopicSafe(mqtt.topicPrefix, allowing: "/") {
            mqttSection.reject("topic_prefix may not contain '+', '#' or empty levels, found \"\(mqtt.topicPrefix)\"")
        }
        mqttSection.finish(into: &problems)

        var storeSection = SectionReader(path: "store", value: root["store"], problems: &problems)
        let store = Store(path: storeSection.string("path", default: "/var/lib/taxiunitd/unit.sqlite")!)
        storeSection.finish(into: &problems)

        var controlSection = SectionReader(path: "control", value: root["control"], problems: &problems)
        let control = Control(socket: controlSection.string("socket", default: "/run/taxiunitd/control.sock")!)
        controlSection.finish(into: &problems)

        var reportingSection = SectionReader(path: "reporting", value: root["reporting"], problems: &problems)
        let reporting = Reporting(intervalS: reportingSection.number("interval_s", default: 5, in: 0...86400))
        reportingSection.finish(into: &problems)

        var logSection = SectionReader(path: "log", value: root["log"], problems: &problems)
        let log = Log(level: logSection.oneOf("level", default: "info", allowed: Self.logLevels))
        logSection.finish(into: &problems)

        let input = InputConfiguration(value: root["input"], isDriverInput: Self.driverInputProblem, problems: &problems)

        guard problems.isEmpty else { throw ConfigError(problems: problems) }
        self.unit = unit
        self.gpsd = gpsd
        self.mqtt = mqtt
        self.store = store
        self.control = control
        self.reporting = reporting
        self.log = log
        self.input = input
    }

    /// Reads and validates a TOML file.
    public static func load(path: String) throws(ConfigError) -> UnitConfiguration {
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw ConfigError(problems: ["cannot read \(path): \(error.localizedDescription)"])
        }
        return try UnitConfiguration(document: ConfigValue.parseTOML(text))
    }

    /// Unit and fleet ids become topic levels, so MQTT wildcards and separators are not allowed.
    static func isTopicSafe(_ text: String, allowing extra: Character? = nil) -> Bool {
        guard !text.isEmpty else { return false }
        if let extra, text.split(separator: extra, omittingEmptySubsequences: false).contains(where: \.isEmpty) {
            return false
        }
        return text.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" || $0 == extra) }
    }

    /// `en`, `zu`, `pt-BR`: it names a file, so nothing else is allowed.
    static func isLanguageCode(_ text: String) -> Bool {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), let base = parts.first, (2...3).contains(base.count),
              base.allSatisfy({ $0.isASCII && $0.isLowercase }) else { return false }
        return parts.count == 1 || (2...8).contains(parts[1].count) && parts[1].allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) }
    }

    /// Why a mapped key's text is not a driver input, or nil when it is one.
    static func driverInputProblem(_ text: String) -> String? {
        let words = ["duty", "accept", "reject", "arrived", "pob", "clear", "noshow", "pause", "resume", "sos"]
        guard let first = text.split(separator: " ").first, words.contains(String(first)) else {
            return "unknown input \"\(text)\"; known: \(words.joined(separator: ", "))"
        }
        return nil
    }

    public var unitSettings: UnitSettings {
        UnitSettings(reportingIntervalS: reporting.intervalS)
    }

    /// `{prefix}/{fleet}/{unit}/`
    public var unitTopicBase: String { "\(mqtt.topicPrefix)/\(unit.fleet)/\(unit.id)/" }
}
