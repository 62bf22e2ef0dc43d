import JournalLog
import Testing

/// An invented clock: whole seconds, so every window edge is exact.
struct TestInstant: InstantProtocol {
    var seconds: Int64
    func advanced(by duration: Duration) -> TestInstant { TestInstant(seconds: seconds + duration.components.seconds) }
    func duration(to other: TestInstant) -> Duration { .seconds(other.seconds - seconds) }
    static func < (lhs: TestInstant, rhs: TestInstant) -> Bool { lhs.seconds < rhs.seconds }
}

func at(_ seconds: Int64) -> TestInstant { TestInstant(seconds: seconds) }

struct RepeatLimiterTests {
    @Test func firstLinePassesRepeatsWithinTheMinuteAreSwallowed() {
        var limiter = RepeatLimiter<TestInstant>(window: .seconds(60))
        #expect(limiter.record("broker down", at: at(0)) == .emit(suppressed: 0))
        for second in 1...59 {
            #expect(limiter.record("broker down", at: at(Int64(second))) == .suppress)
        }
    }

    @Test func nextLineAfterTheWindowCarriesTheCount() {
        var limiter = RepeatLimiter<TestInstant>(window: .seconds(60))
        _ = limiter.record("broker down", at: at(0))
        for second in stride(from: 2, to: 60, by: 2) { _ = limiter.record("broker down", at: at(Int64(second))) }
        #expect(limiter.record("broker down", at: at(60)) == .emit(suppressed: 29))
        // A new window starts with the emitted line, and its count starts again.
        #expect(limiter.record("broker down", at: at(61)) == .suppress)
        #expect(limiter.record("broker down", at: at(120)) == .emit(suppressed: 1))
    }

    @Test func differentLinesAreLimitedSeparately() {
        var limiter = RepeatLimiter<TestInstant>(window: .seconds(60))
        #expect(limiter.record("broker down", at: at(0)) == .emit(suppressed: 0))
        #expect(limiter.record("gpsd down", at: at(1)) == .emit(suppressed: 0))
        #expect(limiter.record("broker down", at: at(2)) == .suppress)
        #expect(limiter.record("gpsd down", at: at(3)) == .suppress)
    }

    @Test func aQuietLineIsNotDelayed() {
        var limiter = RepeatLimiter<TestInstant>(window: .seconds(60))
        #expect(limiter.record("broker down", at: at(0)) == .emit(suppressed: 0))
        #expect(limiter.record("broker down", at: at(600)) == .emit(suppressed: 0))
    }

    @Test func manyDistinctLinesDoNotGrowWithoutBound() {
        var limiter = RepeatLimiter<TestInstant>(window: .seconds(60), maxKeys: 4)
        for index in 0..<4 { _ = limiter.record("line \(index)", at: at(0)) }
        // After the window, old keys are dropped when a fifth arrives; a repeat then counts as new.
        #expect(limiter.record("line 4", at: at(100)) == .emit(suppressed: 0))
        #expect(limiter.record("line 0", at: at(101)) == .emit(suppressed: 0))
        #expect(limiter.record("line 0", at: at(102)) == .suppress)
    }
}
