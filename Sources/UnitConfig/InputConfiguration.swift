import DriverKeys
import UnitCore

/// `[input.buttons]`, `[input.badge]` and `[input.serial]`: the driver's buttons, badge reader and
/// serial terminal. A section that is absent means the unit has no such device.
public struct InputConfiguration: Sendable, Equatable {
    public struct Buttons: Sendable, Equatable {
        /// An evdev device, e.g. `/dev/input/by-path/platform-gpio-keys-event`.
        public var device: String
        public var debounceMs: Int
        /// How long the key mapped to `sos` must be held.
        public var sosHoldMs: Int
        /// Key name (`KEY_F1`, or a decimal code) → what it does (`accept`, `pob 2`, `sos`).
        public var keys: [String: DriverCommand]
    }

    /// A badge or key-fob reader that types the badge number and ENTER, as an evdev keyboard.
    public struct Badge: Sendable, Equatable {
        /// e.g. `/dev/input/by-id/usb-…-event-kbd`.
        public var device: String
        /// The terminal still asks the badge's driver for the PIN (two factors).
        public var pin: Bool
    }

    public struct Serial: Sendable, Equatable {
        public var device: String
        public var baud: Int
        public var columns: Int
        public var rows: Int
        /// `ascii` or `utf-8`.
        public var charset: String
        /// This many character times of silence end a burst of bytes, which counts as keys or is
        /// dropped as line noise whole (`TerminalKeyDecoder`).
        public var noiseGuardCharacters: Int
        /// Key (`a`, `ENTER`, `PF1`, ...) → what it does.
        public var keys: [String: DriverCommand]
    }

    public var buttons: Buttons?
    public var badge: Badge?
    public var serial: Serial?
    /// `[input.ignition]`: the ignition line, as an evdev switch or key.
    public var ignition: Ignition?

    public struct Ignition: Sendable, Equatable {
        public var device: String
        public var signal: IgnitionSignal
    }

    /// `[input.meter]`: the taximeter, as an evdev hired/vacant signal or a serial line.
    public var meter: Meter?

    public enum Meter: Sendable, Equatable {
        /// Hired while the switch or key is set (`invert`: while it is not).
        case signal(device: String, signal: IgnitionSignal)
        /// Lines in `meterProtocol` on a serial port.
        case serial(port: String, baud: Int, meterProtocol: MeterProtocol)
    }

    public static let defaultButtonKeys = [
        "KEY_F1": "accept", "KEY_F2": "reject", "KEY_F3": "arrived", "KEY_F4": "pob", "KEY_F5": "clear",
        "KEY_F6": "duty", "KEY_F8": "drop unreachable", "KEY_F10": "sos",
    ]

    public static let defaultSerialKeys: [String: String] = {
        var keys = [
            "a": "accept", "r": "reject", "h": "arrived", "ENTER": "pob", "c": "clear", "n": "noshow",
            "d": "duty", "p": "pause next", "u": "resume", "i": "info", "s": "seats", "l": "login", "o": "logout",
            "g": "lang next", "b": "alert next", "m": "msg", "y": "reply", "t": "send", "e": "soon",
            "x": "drop unreachable", "v": "drop vehicle", "z": "drop other", "j": "jobs", "k": "bookings",
        ]
        for count in 1...8 { keys["\(count)"] = "pob \(count)" }
        return keys
    }()

    public static let baudRates = [1200, 2400, 4800, 9600, 19200, 38400, 57600, 115200]
    public static let charsets = ["ascii", "utf-8"]

    /// Reads `[input]`; every mapped key's text is parsed into what it does here, once.
    init(value: ConfigValue?, problems: inout [String]) {
        var section = SectionReader(path: "input", value: value, problems: &problems)
        let buttonsValue = section.table("buttons")
        let badgeValue = section.table("badge")
        let serialValue = section.table("serial")
        let ignitionValue = section.table("ignition")
        let meterValue = section.table("meter")
        section.finish(into: &problems)

        if let buttonsValue {
            var reader = SectionReader(path: "input.buttons", value: .table(buttonsValue), problems: &problems)
            let device = reader.requiredString("device")
            let debounceMs = reader.integer("debounce_ms", default: 30, in: 0...1000)
            let sosHoldMs = reader.integer("sos_hold_ms", default: 2000, in: 500...10000)
            let keys = Self.keyMap(reader.table("keys"), path: "input.buttons.keys", default: Self.defaultButtonKeys,
                                   isKey: { EvdevKeyNames.code(named: $0) != nil }, keyHelp: "a KEY_... name or a decimal code",
                                   problems: &problems)
            reader.finish(into: &problems)
            buttons = Buttons(device: device, debounceMs: debounceMs, sosHoldMs: sosHoldMs, keys: keys)
        }

        if let serialValue {
            var reader = SectionReader(path: "input.serial", value: .table(serialValue), problems: &problems)
            let device = reader.requiredString("device")
            let baud = reader.integer("baud", default: 9600, in: 1...1_000_000)
            if !Self.baudRates.contains(baud) {
                reader.reject("baud must be one of \(Self.baudRates.map(String.init).joined(separator: ", ")), found \(baud)")
            }
            let columns = reader.integer("columns", default: 20, in: 16...132)
            let rows = reader.integer("rows", default: 4, in: 4...48)
            let charset = reader.oneOf("charset", default: "ascii", allowed: Self.charsets)
            let noiseGuardCharacters = reader.integer("noise_guard_chars", default: 2, in: 0...100)
            let keys = Self.keyMap(reader.table("keys"), path: "input.serial.keys", default: Self.defaultSerialKeys,
                                   isKey: { TerminalKey(configName: $0) != nil },
                                   keyHelp: "one printable character, ENTER, UP, DOWN, LEFT, RIGHT or PF1-PF4",
                                   problems: &problems)
            reader.finish(into: &problems)
            serial = Serial(device: device, baud: baud, columns: columns, rows: rows, charset: charset, noiseGuardCharacters: noiseGuardCharacters, keys: keys)
        }

        if let ignitionValue {
            var reader = SectionReader(path: "input.ignition", value: .table(ignitionValue), problems: &problems)
            let device = reader.requiredString("device")
            let signal = Self.signal(&reader)
            reader.finish(into: &problems)
            ignition = Ignition(device: device, signal: signal)
        }

        if let meterValue {
            var reader = SectionReader(path: "input.meter", value: .table(meterValue), problems: &problems)
            meter = Self.meter(&reader)
            reader.finish(into: &problems)
        }

        if let badgeValue {
            var reader = SectionReader(path: "input.badge", value: .table(badgeValue), problems: &problems)
            let device = reader.requiredString("device")
            let pin = reader.bool("pin", default: false)
            // The PIN is typed on the terminal's keys.
            if pin && serial == nil { reader.reject("pin = true needs [input.serial], whose keys the PIN is typed on") }
            reader.finish(into: &problems)
            badge = Badge(device: device, pin: pin)
        }
    }

    /// An evdev switch or key that is on or off (`type`, `code`, `invert`): the ignition's, the meter's.
    private static func signal(_ reader: inout SectionReader) -> IgnitionSignal {
        let kind = IgnitionSignal.Kind(rawValue: reader.oneOf("type", default: "switch", allowed: IgnitionSignal.Kind.allCases.map(\.rawValue))) ?? .switch
        let name = reader.requiredString("code")
        let inverted = reader.bool("invert", default: false)
        let code = IgnitionSignal.code(named: name, kind: kind)
        if code == nil, !name.isEmpty {
            reader.reject("code must name a \(kind == .switch ? "switch (SW_DOCK, ...)" : "key (KEY_F12, ...)") or be its decimal code, found \"\(name)\"")
        }
        return IgnitionSignal(kind: kind, code: code ?? 0, inverted: inverted)
    }

    /// `device` (an evdev signal, read as `[input.ignition]` is) or `serial` (a port and its
    /// protocol), never both.
    private static func meter(_ reader: inout SectionReader) -> Meter? {
        let device = reader.optionalString("device")
        let port = reader.optionalString("serial")
        switch (device, port) {
        case (let device?, nil):
            return .signal(device: device, signal: signal(&reader))
        case (nil, let port?):
            let baud = reader.integer("baud", default: 9600, in: 1...1_000_000)
            if !baudRates.contains(baud) {
                reader.reject("baud must be one of \(baudRates.map(String.init).joined(separator: ", ")), found \(baud)")
            }
            let name = reader.oneOf("protocol", default: MeterProtocol.text.rawValue, allowed: MeterProtocol.allCases.map(\.rawValue))
            return .serial(port: port, baud: baud, meterProtocol: MeterProtocol(rawValue: name) ?? .text)
        case (_?, _?):
            reader.reject("device and serial exclude each other: an evdev hired/vacant signal or a meter's serial line, not both")
            return nil
        case (nil, nil):
            reader.reject("device or serial is missing: an evdev hired/vacant signal or a meter's serial line")
            return nil
        }
    }

    /// A `keys` table replaces the default map as a whole, so what the file says is all there is.
    private static func keyMap(
        _ table: [String: ConfigValue]?, path: String, default fallback: [String: String], isKey: (String) -> Bool, keyHelp: String,
        problems: inout [String]
    ) -> [String: DriverCommand] {
        let entries = table ?? fallback.mapValues(ConfigValue.string)
        var keys: [String: DriverCommand] = [:]
        for (key, value) in entries.sorted(by: { $0.key < $1.key }) {
            guard isKey(key) else {
                problems.append("\(path).\(key): unknown key; use \(keyHelp)")
                continue
            }
            guard case .string(let text) = value else {
                problems.append("\(path).\(key) must be a string, found \(value.typeName)")
                continue
            }
            switch mappedCommand(text) {
            case .success(let command): keys[key] = command
            case .failure(let problem): problems.append("\(path).\(key): \(problem)")
            }
        }
        return keys
    }

    /// What a key's text does: the parser `taxiunitctl press` goes through, session words included
    /// (`login`, `logout`, `lang it`, `alert blink`), but never a PIN written in a file.
    static func mappedCommand(_ text: String) -> Result<DriverCommand, MappingProblem> {
        switch DriverCommand.parse(text) {
        case .success(let command):
            if case .session(.login) = command.action { return .failure(MappingProblem(description: "a key cannot log a driver in; map it to \"login\" alone")) }
            return .success(command)
        case .failure(let problem):
            return .failure(MappingProblem(description: problem.description))
        }
    }

    struct MappingProblem: Error, CustomStringConvertible {
        var description: String
    }
}
