import DriverKeys
import Testing

@Suite struct BadgeSequenceTests {
    static func code(_ name: String) -> UInt16 { EvdevKeyNames.code(named: name)! }

    /// Types `keys` (names without `KEY_`) as a reader does: each key down and up, `stepMs` apart.
    static func type(_ keys: [String], into sequence: inout BadgeSequence, from start: Int64 = 0, stepMs: Int64 = 5) -> [BadgeSequence.Outcome] {
        var outcomes: [BadgeSequence.Outcome] = []
        var now = start
        for key in keys {
            outcomes += sequence.key(code("KEY_" + key), .down, at: now)
            outcomes += sequence.key(code("KEY_" + key), .up, at: now + 1)
            now += stepMs
        }
        return outcomes
    }

    @Test func digitsUpToEnterAreOneBadge() {
        var sequence = BadgeSequence()
        #expect(Self.type(["0", "0", "4", "2", "7", "9"], into: &sequence).isEmpty)
        #expect(sequence.nextDeadline == 25 + BadgeSequence.gapMs)
        #expect(Self.type(["ENTER"], into: &sequence, from: 30) == [.badge("004279")])
        #expect(sequence.nextDeadline == nil)
        // The next badge starts afresh.
        #expect(Self.type(["1", "ENTER"], into: &sequence, from: 100) == [.badge("1")])
    }

    @Test func keypadDigitsLettersAndKeypadEnterCountShiftAndRepeatsDoNot() {
        var sequence = BadgeSequence()
        var outcomes = Self.type(["KP1", "KP0", "A"], into: &sequence)
        // SHIFT (42) types nothing; an auto-repeat is not a second key.
        outcomes += sequence.key(42, .down, at: 20)
        outcomes += sequence.key(Self.code("KEY_F"), .down, at: 21)
        outcomes += sequence.key(Self.code("KEY_F"), .autoRepeat, at: 22)
        outcomes += sequence.key(Self.code("KEY_KPENTER"), .down, at: 23)
        #expect(outcomes == [.badge("10AF")])
        // ENTER alone is no badge.
        #expect(Self.type(["ENTER", "KPENTER"], into: &sequence, from: 100).isEmpty)
    }

    @Test func aNumberLongerThanTheLimitIsDroppedWhole() {
        var sequence = BadgeSequence()
        let longest = Array(repeating: "9", count: BadgeSequence.maximumLength)
        #expect(Self.type(longest + ["ENTER"], into: &sequence) == [.badge(String(repeating: "9", count: BadgeSequence.maximumLength))])
        #expect(Self.type(longest + ["1", "2", "ENTER"], into: &sequence, from: 1000) == [.dropped(.tooLong)])
        // Nothing of it is left over for the next badge.
        #expect(Self.type(["5", "ENTER"], into: &sequence, from: 2000) == [.badge("5")])
    }

    @Test func aPauseOverASecondDropsWhatWasTyped() {
        var sequence = BadgeSequence()
        _ = Self.type(["1", "2"], into: &sequence)
        // Within the gap nothing happens; after it, the tick drops the partial number.
        #expect(sequence.tick(at: 5 + BadgeSequence.gapMs).isEmpty)
        #expect(sequence.tick(at: 6 + BadgeSequence.gapMs) == [.dropped(.interrupted)])
        #expect(sequence.nextDeadline == nil)
        #expect(Self.type(["3", "ENTER"], into: &sequence, from: 2000) == [.badge("3")])
        // A key after the gap (no tick came) drops the old part and starts a new number.
        _ = Self.type(["7", "7"], into: &sequence, from: 3000)
        #expect(Self.type(["8", "ENTER"], into: &sequence, from: 5000) == [.dropped(.interrupted), .badge("8")])
    }
}
