/// Message ids: random (version 4) UUIDs in lowercase, unique forever so the dispatcher can drop
/// duplicates. Formatted here because `UUID().uuidString.lowercased()` (an NSString round trip and a
/// Unicode-aware lowercasing) was a visible share of packing one live message per fix.
enum MessageID {
    static func random() -> String {
        var generator = SystemRandomNumberGenerator()
        return format(high: generator.next(), low: generator.next())
    }

    /// `high` and `low` are the UUID's 16 bytes, big-endian; the version and variant bits are set here.
    static func format(high: UInt64, low: UInt64) -> String {
        let high = high & ~0xF000 | 0x4000
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
