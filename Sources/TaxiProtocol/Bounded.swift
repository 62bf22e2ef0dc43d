/// Arithmetic and text that outside data cannot make trap: times and counts saturate instead of
/// overflowing, doubles become integers only when they fit, and bytes are logged only as a short,
/// escaped excerpt.

extension Int64 {
    /// `self + other`, held at the ends of the range instead of trapping.
    public func saturatingAdd(_ other: Int64) -> Int64 {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? (other > 0 ? .max : .min) : sum
    }

    /// `self - other`, held at the ends of the range instead of trapping.
    public func saturatingSubtract(_ other: Int64) -> Int64 {
        let (difference, overflow) = subtractingReportingOverflow(other)
        return overflow ? (other < 0 ? .max : .min) : difference
    }

    /// `seconds` in whole milliseconds, rounded; nil when not finite or out of `Int64`'s range.
    public init?(millisecondsOf seconds: Double) {
        let milliseconds = (seconds * 1000).rounded()
        // 2^63 is exactly representable; every double below it converts.
        guard milliseconds.isFinite, milliseconds >= -9_223_372_036_854_775_808.0, milliseconds < 9_223_372_036_854_775_808.0 else { return nil }
        self.init(milliseconds)
    }

    /// `value` rounded, or nil when not finite or out of `Int64`'s range.
    public init?(roundingChecked value: Double) {
        let rounded = value.rounded()
        guard rounded.isFinite, rounded >= -9_223_372_036_854_775_808.0, rounded < 9_223_372_036_854_775_808.0 else { return nil }
        self.init(rounded)
    }
}

extension Int {
    /// `self + other`, held at the ends of the range instead of trapping.
    public func saturatingAdd(_ other: Int) -> Int {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? (other > 0 ? .max : .min) : sum
    }

    /// `self * other`, held at the ends of the range instead of trapping.
    public func saturatingMultiply(_ other: Int) -> Int {
        let (product, overflow) = multipliedReportingOverflow(by: other)
        return overflow ? ((self < 0) == (other < 0) ? .max : .min) : product
    }
}

/// What a log line may carry of bytes from outside: the first `limit` bytes, with everything that
/// is not printable ASCII escaped (`\n`, `\x00`, `\xc3`…), so no payload can forge a journal line
/// or a terminal escape, and a note of how much was left out.
public enum LogExcerpt {
    public static let defaultLimit = 120

    public static func of(_ bytes: some Collection<UInt8>, limit: Int = defaultLimit) -> String {
        var text = ""
        text.reserveCapacity(min(bytes.count, limit) + 16)
        for byte in bytes.prefix(limit) {
            switch byte {
            case UInt8(ascii: "\\"): text += "\\\\"
            case UInt8(ascii: "\n"): text += "\\n"
            case UInt8(ascii: "\r"): text += "\\r"
            case UInt8(ascii: "\t"): text += "\\t"
            case 0x20..<0x7F: text.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = Array("0123456789abcdef")
                text += "\\x" + String(hex[Int(byte >> 4)]) + String(hex[Int(byte & 0x0F)])
            }
        }
        if bytes.count > limit { text += "… (\(bytes.count) bytes)" }
        return text
    }

    public static func of(_ text: String, limit: Int = defaultLimit) -> String {
        of(text.utf8, limit: limit)
    }
}
