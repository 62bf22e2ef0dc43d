/// What a taximeter says: hired (the flag is down, a ride is running), vacant, or the ride's fare.
public enum MeterReading: Sendable, Equatable {
    case hired
    case vacant
    /// The fare so far, in minor units of `currency` (ISO 4217, three capital letters).
    case fare(amount: Int64, currency: String)

    /// Hired or vacant: the meter's flag, not a fare.
    public var isFlag: Bool {
        switch self {
        case .hired, .vacant: true
        case .fare: false
        }
    }
}

/// Turns the bytes of a serial meter into readings, whatever way the line cuts them. One decoder
/// per meter protocol (`[input.meter] protocol`); each keeps its own partial line between calls.
public protocol MeterLineDecoder: Sendable {
    /// The readings completed by `bytes`.
    mutating func receive(_ bytes: some Sequence<UInt8>) -> [MeterReading]
    /// Lines that said nothing this decoder understands (counted and dropped), since it was made.
    var garbageLines: Int { get }
}

/// The meter protocols the unit speaks, by their configuration name.
public enum MeterProtocol: String, Sendable, CaseIterable {
    /// `TextMeterDecoder`.
    case text

    public func makeDecoder() -> any MeterLineDecoder {
        switch self {
        case .text: TextMeterDecoder()
        }
    }
}

/// The unit's own meter line format (docs/boards.md, "Taximeter"): ASCII lines ended by LF (a CR
/// before it is allowed), each one of `HIRED`, `VACANT` or `FARE <minor units> <currency>`, with
/// spaces around words ignored. A line longer than `maxLineLength` is dropped through its end, so a
/// meter babbling without newlines cannot grow the buffer.
public struct TextMeterDecoder: MeterLineDecoder {
    public static let maxLineLength = 64

    public private(set) var garbageLines = 0
    private var line: [UInt8] = []
    private var overlong = false

    public init() {}

    public mutating func receive(_ bytes: some Sequence<UInt8>) -> [MeterReading] {
        var readings: [MeterReading] = []
        for byte in bytes {
            guard byte == UInt8(ascii: "\n") else {
                if line.count < Self.maxLineLength { line.append(byte) } else { overlong = true }
                continue
            }
            if overlong {
                garbageLines += 1
            } else if let reading = Self.reading(line) {
                readings.append(reading)
            } else if !Self.isBlank(line) {
                garbageLines += 1
            }
            line.removeAll(keepingCapacity: true)
            overlong = false
        }
        return readings
    }

    private static func isBlank(_ line: [UInt8]) -> Bool {
        line.allSatisfy { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\r") }
    }

    /// One line without its LF; nil unless it is a whole reading.
    static func reading(_ line: [UInt8]) -> MeterReading? {
        var body = line[...]
        if body.last == UInt8(ascii: "\r") { body = body.dropLast() }
        guard body.allSatisfy({ $0 >= 0x20 && $0 < 0x7f }) else { return nil }
        let words = body.split(separator: UInt8(ascii: " ")).map { String(decoding: $0, as: UTF8.self) }
        switch words.first {
        case "HIRED" where words.count == 1: return .hired
        case "VACANT" where words.count == 1: return .vacant
        case "FARE" where words.count == 3:
            let digits = words[1]
            let currency = words[2]
            guard (1...12).contains(digits.count), digits.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
                let amount = Int64(digits),
                currency.utf8.count == 3, currency.utf8.allSatisfy({ $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") })
            else { return nil }
            return .fare(amount: amount, currency: currency)
        default: return nil
        }
    }
}
