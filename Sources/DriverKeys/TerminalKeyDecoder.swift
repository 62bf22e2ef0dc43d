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

/// Turns the bytes from a serial terminal into keys. Pure: the caller passes the time (µs, any
/// monotonic origin) and calls `tick` at `nextDeadline` when the line has nothing to read.
///
/// Whatever is not a key is dropped: bytes outside printable ASCII, unknown or broken escape
/// sequences (including a lone ESC, dropped after `escapeTimeoutUs`). Line noise is told from typing
/// by timing: a keypad sends one key per press, alone on the line, while noise (a loose cable, a
/// spike) comes as bursts at line speed, one character time apart or several bytes in one read. So
/// a key counts only when the line was quiet for `quietUs` before it and is seen quiet again
/// `quietUs` after it; every key in a burst, and one that a burst follows, is dropped. `quietUs` is
/// a couple of character times (`quietTimeUs(characters:baud:)`), so a lone key counts about 2 ms
/// after it arrived at 9600 baud and sooner on faster lines.
public struct TerminalKeyDecoder: Sendable {
    public let quietUs: Int64
    public let escapeTimeoutUs: Int64
    /// Longer than any sequence a terminal sends for a key: beyond it, the bytes are noise.
    static let maximumSequenceLength = 16
    /// Start bit, 8 data bits, stop bit.
    static let bitsPerCharacter: Int64 = 10

    private enum Parse {
        case ground
        case escape(startedAt: Int64, quietBefore: Bool)
        case controlSequence(startedAt: Int64, quietBefore: Bool, bytes: [UInt8])
        case singleShift(startedAt: Int64, quietBefore: Bool)
    }

    private var parse = Parse.ground
    private var lastByteAt: Int64?
    /// A key that was quiet before and now waits for the line to be seen quiet after it.
    private var pending: (key: TerminalKey, endedAt: Int64)?

    public init(quietUs: Int64, escapeTimeoutUs: Int64 = 100_000) {
        self.quietUs = quietUs
        self.escapeTimeoutUs = escapeTimeoutUs
    }

    /// The time `characters` take on an 8N1 line at `baud`, rounded up to the µs.
    public static func quietTimeUs(characters: Int, baud: Int) -> Int64 {
        (Int64(characters) * bitsPerCharacter * 1_000_000 + Int64(baud) - 1) / Int64(max(1, baud))
    }

    public mutating func receive(_ bytes: some Sequence<UInt8>, at now: Int64) -> [TerminalKey] {
        dropUnfinishedSequence(at: now)
        var keys: [TerminalKey] = []
        for byte in bytes {
            // Anything on the line before it was seen quiet after a key makes that key part of a
            // burst, however late this thread got to read it.
            pending = nil
            let quietBefore = lastByteAt.map { now - $0 >= quietUs } ?? true
            lastByteAt = now
            if let key = step(byte, at: now, quietBefore: quietBefore) {
                keys += decided(key, at: now)
            }
        }
        return keys
    }

    /// The line had nothing to read at `now`: releases a key whose quiet time after it has passed,
    /// and drops an escape sequence left unfinished.
    public mutating func tick(at now: Int64) -> [TerminalKey] {
        dropUnfinishedSequence(at: now)
        guard let waiting = pending, now - waiting.endedAt >= quietUs else { return [] }
        pending = nil
        return [waiting.key]
    }

    /// When `tick` has something to decide, or nil when nothing is pending.
    public var nextDeadline: Int64? {
        [pending.map { $0.endedAt + quietUs }, sequenceStart.map { $0 + escapeTimeoutUs }].compactMap { $0 }.min()
    }

    private mutating func dropUnfinishedSequence(at now: Int64) {
        if let started = sequenceStart, now - started >= escapeTimeoutUs {
            parse = .ground
        }
    }

    private var sequenceStart: Int64? {
        switch parse {
        case .ground: nil
        case .escape(let started, _), .controlSequence(let started, _, _), .singleShift(let started, _): started
        }
    }

    private mutating func decided(_ key: (TerminalKey, quietBefore: Bool), at now: Int64) -> [TerminalKey] {
        guard key.quietBefore else { return [] }
        if quietUs == 0 { return [key.0] }
        pending = (key.0, now)
        return []
    }

    /// Feeds one byte to the parser; returns a completed key and whether the line was quiet before it began.
    private mutating func step(_ byte: UInt8, at now: Int64, quietBefore: Bool) -> (TerminalKey, quietBefore: Bool)? {
        switch parse {
        case .ground:
            switch byte {
            case 0x1b:
                parse = .escape(startedAt: now, quietBefore: quietBefore)
                return nil
            case 0x0d, 0x0a: return (.enter, quietBefore)
            case 0x0c: return (.redraw, quietBefore)
            case 0x21...0x7e: return (.character(Character(Unicode.Scalar(byte))), quietBefore)
            default: return nil
            }
        case .escape(let started, let quiet):
            switch byte {
            case UInt8(ascii: "["): parse = .controlSequence(startedAt: started, quietBefore: quiet, bytes: [])
            case UInt8(ascii: "O"): parse = .singleShift(startedAt: started, quietBefore: quiet)
            case 0x1b: parse = .escape(startedAt: now, quietBefore: false)
            default: parse = .ground
            }
            return nil
        case .singleShift(_, let quiet):
            parse = .ground
            return Self.singleShiftKey(byte).map { ($0, quiet) }
        case .controlSequence(let started, let quiet, var bytes):
            switch byte {
            case 0x20...0x3f where bytes.count < Self.maximumSequenceLength:
                bytes.append(byte)
                parse = .controlSequence(startedAt: started, quietBefore: quiet, bytes: bytes)
                return nil
            case 0x40...0x7e:
                parse = .ground
                return Self.controlSequenceKey(parameters: bytes, final: byte).map { ($0, quiet) }
            case 0x1b:
                parse = .escape(startedAt: now, quietBefore: false)
                return nil
            default:
                parse = .ground
                return nil
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
