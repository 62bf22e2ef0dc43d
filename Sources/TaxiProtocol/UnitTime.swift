/// A moment as the unit tells it: whole milliseconds since the Unix epoch, on the unit clock (the
/// core's `UnitClock`) or, for a fix, on the receiver's clock. Arithmetic with `Duration` saturates
/// at the ends of the range, so no time from outside (a far-future `meeting_time`, a receiver in
/// 2106) can make the core trap. Encoded as the bare integer, as the wire and the snapshot have it.
public struct UnitTime: Sendable, Hashable, Comparable, Codable, CustomStringConvertible, ExpressibleByIntegerLiteral {
    public var milliseconds: Int64

    public init(milliseconds: Int64) {
        self.milliseconds = milliseconds
    }

    /// `seconds` since the epoch, rounded to the millisecond; held at the ends of the range.
    public init(seconds: Double) {
        self.milliseconds = Int64(millisecondsOf: seconds) ?? (seconds > 0 ? .max : .min)
    }

    public init(integerLiteral milliseconds: Int64) {
        self.milliseconds = milliseconds
    }

    public init(from decoder: any Decoder) throws {
        milliseconds = try decoder.singleValueContainer().decode(Int64.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(milliseconds)
    }

    public static let epoch = UnitTime(milliseconds: 0)
    /// The ends of the range, where arithmetic saturates.
    public static let min = UnitTime(milliseconds: .min)
    public static let max = UnitTime(milliseconds: .max)

    /// Seconds since the epoch, for display and for the wire's few fractional fields.
    public var seconds: Double { Double(milliseconds) / 1000 }

    public var description: String { String(milliseconds) }

    public static func < (lhs: UnitTime, rhs: UnitTime) -> Bool { lhs.milliseconds < rhs.milliseconds }

    // In 128 bits: a span may hold more milliseconds than `Int64` does.
    public static func + (time: UnitTime, span: Duration) -> UnitTime {
        UnitTime(milliseconds: Int64(clamping: Int128(time.milliseconds) + span.exactMilliseconds))
    }

    public static func - (time: UnitTime, span: Duration) -> UnitTime {
        UnitTime(milliseconds: Int64(clamping: Int128(time.milliseconds) - span.exactMilliseconds))
    }

    /// The span from `earlier` to `later`; negative when `later` is the earlier one.
    public static func - (later: UnitTime, earlier: UnitTime) -> Duration {
        .milliseconds(Int128(later.milliseconds) - Int128(earlier.milliseconds))
    }

    public static func += (time: inout UnitTime, span: Duration) { time = time + span }
}

extension Duration {
    /// The span in whole milliseconds, truncated toward zero; held at the ends of `Int64`'s range.
    public var wholeMilliseconds: Int64 { Int64(clamping: exactMilliseconds) }

    /// The span in whole milliseconds, truncated toward zero; every `Duration` fits.
    var exactMilliseconds: Int128 {
        let (seconds, attoseconds) = components
        return Int128(seconds) * 1000 + Int128(attoseconds / 1_000_000_000_000_000)
    }

    /// The span in whole seconds, truncated toward zero.
    public var wholeSeconds: Int64 { components.seconds }

    /// The span in seconds, with the fraction; for settings and texts that speak in seconds.
    public var secondsValue: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    /// `seconds` as a span, rounded to the millisecond; held at the ends of the range, zero when
    /// not a number. For settings read as seconds (`interval_s = 2.5`).
    public static func checkedSeconds(_ seconds: Double) -> Duration {
        guard !seconds.isNaN else { return .zero }
        return .milliseconds(Int64(millisecondsOf: seconds) ?? (seconds > 0 ? .max : .min))
    }
}
