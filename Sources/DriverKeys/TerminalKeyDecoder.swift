/// A key the serial terminal sent.
public enum TerminalKey: Sendable, Hashable {
    /// A printable ASCII character, exactly as typed (`a` and `A` differ).
    case character(Character)
    case enter
    case up, down, left, right
    /// The VT100 keypad's PF1...PF4.
    case function(Int)
    /// Ctrl-L: the driver asks for the whole screen again (after switching the terminal off and on).
    case redraw

    /// The name used in `[input.serial.keys]`: one printable character, or ENTER, UP, DOWN, LEFT,
    /// RIGHT, PF1...PF4.
    public init?(configName name: String) {
        switch name {
        case "ENTER": self = .enter
        case "UP": self = .up
        case "DOWN": self = .down
        case "LEFT": self = .left
        case "RIGHT": self = .right
        case "PF1", "PF2", "PF3", "PF4": self = .function(Int(String(name.last!))!)
        default:
            guard name.count == 1, let scalar = name.unicodeScalars.first, name.unicodeScalars.count == 1,
                  (0x21...0x7e).contains(scalar.value) else { return nil }
            self = .character(Character(scalar))
        }
    }
}

/// What the decoder makes of the line: a key, or a burst of line noise it dropped.
public enum TerminalInput: Sendable, Hashable {
    case key(TerminalKey)
    /// A burst held bytes no terminal key sends: all of it was dropped, any keys inside included.
    case discarded
}

/// Turns the bytes from a serial terminal into keys. Pure: the caller passes the time (µs, any
/// monotonic origin) and calls `tick` at `nextDeadline` when the line has nothing to read.
///
/// Bytes come in bursts: a burst is everything read until the line is seen quiet for `quietUs` (a
/// couple of character times, `quietTimeUs(characters:baud:)`), only a `tick` ends it, and it is
/// judged whole by what it holds, never by when the adapter got to read it (a busy machine reads a
/// driver's keys typed 80 ms apart in one read). A burst whose every byte is part of a key (printable
/// ASCII, ENTER, Ctrl-L, a complete escape sequence) is typing: all its keys count, in order, when
/// the line goes quiet. A burst holding anything else (a control byte, a byte with the high bit set, a
/// broken or over-long escape sequence, more than `maximumBurstKeys` keys) is line noise (a loose
/// cable, a spike): it is dropped whole and reported as `.discarded`, so the terminal can say so and
/// a login being typed starts its field again. Harmless keys count as neither: a lone ESC (after
/// `escapeTimeoutUs`), TAB, BS, DEL and complete but unknown escape sequences are ignored.
public struct TerminalKeyDecoder: Sendable {
    public let quietUs: Int64
    public let escapeTimeoutUs: Int64
    /// Longer than any sequence a terminal sends for a key: beyond it, the bytes are noise.
    static let maximumSequenceLength = 16
    /// More keys than a driver types ahead in one go (a whole login, `l`, an id, ENTER, a PIN, ENTER,
    /// is about 20): a longer burst is noise.
    public static let maximumBurstKeys = 32
    /// Start bit, 8 data bits, stop bit.
    static let bitsPerCharacter: Int64 = 10

    private enum Parse {
        case ground
        case escape(startedAt: Int64)
        case controlSequence(startedAt: Int64, bytes: [UInt8])
        case singleShift(startedAt: Int64)
    }

    /// What one byte completes.
    private enum Byte {
        case key(TerminalKey)
        case noise
        case nothing
    }

    /// The bytes read since the line was last seen quiet.
    private struct Burst {
        var keys: [TerminalKey] = []
        var noise = false
        var lastByteAt: Int64
    }

    private var parse = Parse.ground
    private var burst: Burst?

    public init(quietUs: Int64, escapeTimeoutUs: Int64 = 100_000) {
        self.quietUs = quietUs
        self.escapeTimeoutUs = escapeTimeoutUs
    }

    /// The time `characters` take on an 8N1 line at `baud`, rounded up to the µs.
    public static func quietTimeUs(characters: Int, baud: Int) -> Int64 {
        (Int64(characters) * bitsPerCharacter * 1_000_000 + Int64(baud) - 1) / Int64(max(1, baud))
    }

    public mutating func receive(_ bytes: some Sequence<UInt8>, at now: Int64) -> [TerminalInput] {
        var current = burst ?? Burst(lastByteAt: now)
        for byte in bytes {
            switch step(byte, at: now) {
            case .key(let key):
                if current.keys.count < Self.maximumBurstKeys { current.keys.append(key) } else { current.noise = true }
            case .noise: current.noise = true
            case .nothing: break
            }
        }
        current.lastByteAt = now
        burst = current
        // Without a guard every read is a burst of its own.
        return quietUs == 0 ? tick(at: now) : []
    }

    /// The line had nothing to read at `now`: ends the burst once the line was quiet for `quietUs`
    /// after it (and an escape sequence in it had its `escapeTimeoutUs` to finish).
    public mutating func tick(at now: Int64) -> [TerminalInput] {
        guard var ended = burst, let deadline = nextDeadline, now >= deadline else { return [] }
        switch parse {
        case .ground, .escape: break
        case .controlSequence, .singleShift: ended.noise = true
        }
        parse = .ground
        burst = nil
        return ended.noise ? [.discarded] : ended.keys.map { .key($0) }
    }

    /// When `tick` has something to decide, or nil when nothing is pending.
    public var nextDeadline: Int64? {
        guard let burst else { return nil }
        let quietAt = burst.lastByteAt + quietUs
        guard let started = sequenceStart else { return quietAt }
        return max(quietAt, started + escapeTimeoutUs)
    }

    private var sequenceStart: Int64? {
        switch parse {
        case .ground: nil
        case .escape(let started), .controlSequence(let started, _), .singleShift(let started): started
        }
    }

    /// Feeds one byte to the parser.
    private mutating func step(_ byte: UInt8, at now: Int64) -> Byte {
        switch parse {
        case .ground:
            switch byte {
            case 0x1b:
                parse = .escape(startedAt: now)
                return .nothing
            case 0x0d, 0x0a: return .key(.enter)
            case 0x0c: return .key(.redraw)
            case 0x21...0x7e: return .key(.character(Character(Unicode.Scalar(byte))))
            // Space, TAB, BS and DEL are keys of every keyboard that the unit does not use.
            case 0x20, 0x09, 0x08, 0x7f: return .nothing
            default: return .noise
            }
        case .escape(let started):
            switch byte {
            case UInt8(ascii: "["): parse = .controlSequence(startedAt: started, bytes: [])
            case UInt8(ascii: "O"): parse = .singleShift(startedAt: started)
            // A lone ESC key, and another one.
            case 0x1b: parse = .escape(startedAt: now)
            // Alt with a key.
            case 0x20...0x7e: parse = .ground
            default:
                parse = .ground
                return .noise
            }
            return .nothing
        case .singleShift:
            parse = .ground
            guard (0x20...0x7e).contains(byte) else { return .noise }
            return Self.singleShiftKey(byte).map { .key($0) } ?? .nothing
        case .controlSequence(let started, var bytes):
            switch byte {
            case 0x20...0x3f where bytes.count < Self.maximumSequenceLength:
                bytes.append(byte)
                parse = .controlSequence(startedAt: started, bytes: bytes)
                return .nothing
            case 0x40...0x7e:
                parse = .ground
                return Self.controlSequenceKey(parameters: bytes, final: byte).map { .key($0) } ?? .nothing
            default:
                parse = .ground
                return .noise
            }
        }
    }

    private static func singleShiftKey(_ final: UInt8) -> TerminalKey? {
        switch final {
        case UInt8(ascii: "A"): .up
        case UInt8(ascii: "B"): .down
        case UInt8(ascii: "C"): .right
        case UInt8(ascii: "D"): .left
        case UInt8(ascii: "P")...UInt8(ascii: "S"): .function(Int(final - UInt8(ascii: "P")) + 1)
        case UInt8(ascii: "M"): .enter
        default: nil
        }
    }

    private static func controlSequenceKey(parameters: [UInt8], final: UInt8) -> TerminalKey? {
        switch (parameters, final) {
        case ([], UInt8(ascii: "A")): .up
        case ([], UInt8(ascii: "B")): .down
        case ([], UInt8(ascii: "C")): .right
        case ([], UInt8(ascii: "D")): .left
        // xterm-style F1-F4 (ESC [ 11~ ... 14~), which many "VT100" terminals send for PF1-PF4.
        case (Array("11".utf8), UInt8(ascii: "~")): .function(1)
        case (Array("12".utf8), UInt8(ascii: "~")): .function(2)
        case (Array("13".utf8), UInt8(ascii: "~")): .function(3)
        case (Array("14".utf8), UInt8(ascii: "~")): .function(4)
        default: nil
        }
    }
}
