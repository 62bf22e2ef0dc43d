import TaxiProtocol

/// Message ids: time-ordered (version 7, RFC 9562) UUIDs in lowercase, unique forever so the
/// dispatcher can drop duplicates. The millisecond prefix makes each new id sort after the last, so
/// the outbox's unique index on them grows at its end instead of taking a random page per message. Formatted here because `UUID().uuidString.lowercased()` (an
/// NSString round trip and a Unicode-aware lowercasing) was a visible share of packing one live
/// message per fix.
enum MessageID {
    /// 74 random bits after the milliseconds: ids made in the same millisecond (a window of
    /// backfill) or by a clock set back never meet.
    static func timeOrdered(at time: UnitTime) -> String {
        var generator = SystemRandomNumberGenerator()
        let milliseconds = UInt64(truncatingIfNeeded: time.milliseconds) & 0xFFFF_FFFF_FFFF
        return format(high: milliseconds << 16 | generator.next() & 0x0FFF | 0x7000, low: generator.next())
    }

    /// `high` and `low` are the UUID's 16 bytes, big-endian, version included; the variant bits are set here.
    static func format(high: UInt64, low: UInt64) -> String {
        let low = low & ~(0xC000 << 48) | (0x8000 << 48)
        let digits = Array("0123456789abcdef".utf8)
        return String(unsafeUninitializedCapacity: 36) { text in
            var index = 0
            for nibble in 0..<32 {
                if nibble == 8 || nibble == 12 || nibble == 16 || nibble == 20 {
                    text[index] = UInt8(ascii: "-")
                    index += 1
                }
                let word = nibble < 16 ? high : low
                text[index] = digits[Int(word >> UInt64(60 - 4 * (nibble % 16)) & 0xF)]
                index += 1
            }
            return index
        }
    }
}
