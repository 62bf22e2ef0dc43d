/// A badge or key-fob reader is a USB keyboard that types the badge number and ENTER. This turns
/// its key records into badge numbers: key-downs of digits (top row or keypad) and letters A-Z
/// collect, ENTER or keypad ENTER ends the number. A number longer than `maximumLength`, or one
/// with a pause over `gapMs` between keys (a reader types a whole badge in a few ms; a pause is a
/// person on a keyboard or a broken read), is dropped. Pure: the caller passes the time (ms, any
/// monotonic origin) and calls `tick` at `nextDeadline`.
public struct BadgeSequence: Sendable {
    public static let maximumLength = 32
    public static let gapMs: Int64 = 1000

    public enum Outcome: Sendable, Equatable {
        /// A whole badge number (digits and upper-case letters, 1...`maximumLength`).
        case badge(String)
        case dropped(Drop)
    }

    public enum Drop: String, Sendable, Equatable {
        case tooLong = "longer than 32 characters"
        case interrupted = "interrupted for more than 1 s"
    }

    private var typed = ""
    private var overflowed = false
    private var lastKeyAt: Int64 = 0

    public init() {}

    /// Key code → the character it types on a badge.
    static let characters: [UInt16: Character] = {
        var table: [UInt16: Character] = [:]
        for (name, code) in EvdevKeyNames.codes {
            let suffix = name.dropFirst(name.hasPrefix("KEY_KP") ? 6 : 4)
            guard name.hasPrefix("KEY_"), suffix.count == 1, let character = suffix.first,
                  character.isASCII, character.isNumber || character.isUppercase else { continue }
            table[code] = character
        }
        return table
    }()

    static let enterCodes: Set<UInt16> = [28, 96]

    /// One key record; auto-repeat, key-up and keys that type nothing on a badge (SHIFT) are ignored.
    public mutating func key(_ code: UInt16, _ value: InputEventRecord.KeyValue, at now: Int64) -> [Outcome] {
        guard value == .down else { return [] }
        var outcomes = tick(at: now)
        lastKeyAt = now
        if Self.enterCodes.contains(code) {
            if overflowed {
                outcomes.append(.dropped(.tooLong))
            } else if !typed.isEmpty {
                outcomes.append(.badge(typed))
            }
            reset()
        } else if let character = Self.characters[code] {
            if typed.count < Self.maximumLength { typed.append(character) } else { overflowed = true }
        }
        return outcomes
    }

    /// Drops a number whose next key is overdue.
    public mutating func tick(at now: Int64) -> [Outcome] {
        guard let deadline = nextDeadline, now > deadline else { return [] }
        reset()
        return [.dropped(.interrupted)]
    }

    /// While a number is being typed: when it is dropped unless another key comes.
    public var nextDeadline: Int64? {
        typed.isEmpty && !overflowed ? nil : (lastKeyAt > .max - Self.gapMs ? .max : lastKeyAt + Self.gapMs)
    }

    /// Forgets a partial number (the device went away).
    public mutating func reset() {
        typed = ""
        overflowed = false
    }
}
