/// JSON written byte by byte, for the writers that cannot afford `JSONEncoder` (the outbox's
/// position messages: a 24 h backlog is thousands of batches) and for `JSONDocument`'s canonical
/// form. One escaper for both: a signature and a message never disagree on a string.
///
/// Strings are escaped as the Foundation encoder escapes them (`"` and `\`, the short forms
/// `\b \f \n \r \t`, `\u00XX` for the other control characters; `/` and non-ASCII as is), so a
/// receiver cannot tell the two apart. Callers write object keys in the order they need.
public struct JSONWriter {
    @usableFromInline var storage: [UInt8] = []

    @inlinable public init(capacity: Int) {
        storage.reserveCapacity(capacity)
    }

    @inlinable public var bytes: [UInt8] { storage }

    /// Text written as it is: punctuation, keys with their quotes, literals.
    @inlinable public mutating func raw(_ text: StaticString) {
        text.withUTF8Buffer { storage.append(contentsOf: $0) }
    }

    /// Text written as it is, from a runtime value (a number literal kept as received).
    @inlinable public mutating func text(_ text: String) {
        storage.append(contentsOf: text.utf8)
    }

    @inlinable public mutating func byte(_ ascii: Unicode.Scalar) {
        storage.append(UInt8(ascii: ascii))
    }

    /// `value` as a JSON string, quoted and escaped.
    @inlinable public mutating func string(_ value: String) {
        byte("\"")
        for unit in value.utf8 {
            switch unit {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"): storage += [UInt8(ascii: "\\"), unit]
            case 0x08: raw(#"\b"#)
            case 0x0C: raw(#"\f"#)
            case 0x0A: raw(#"\n"#)
            case 0x0D: raw(#"\r"#)
            case 0x09: raw(#"\t"#)
            case 0..<0x20:
                raw(#"\u00"#)
                storage += [Self.hexDigit(unit >> 4), Self.hexDigit(unit & 0xF)]
            default: storage.append(unit)
            }
        }
        byte("\"")
    }

    @inlinable static func hexDigit(_ value: UInt8) -> UInt8 {
        value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "a") + value - 10
    }

    /// The decimal digits straight into the bytes, as `description` spells them: a backfill
    /// batch is ~300 integers, mostly one or two digits.
    @inlinable public mutating func integer(_ value: Int64) {
        if value < 0 { byte("-") }
        var magnitude = value.magnitude
        if magnitude < 10 {
            storage.append(UInt8(ascii: "0") + UInt8(magnitude))
        } else if magnitude < 100 {
            storage.append(UInt8(ascii: "0") + UInt8(magnitude / 10))
            storage.append(UInt8(ascii: "0") + UInt8(magnitude % 10))
        } else {
            let first = storage.count
            while magnitude > 0 {
                storage.append(UInt8(ascii: "0") + UInt8(magnitude % 10))
                magnitude /= 10
            }
            storage[first...].reverse()
        }
    }
}
