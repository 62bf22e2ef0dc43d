import TaxiProtocol
import TestHarness
import Testing
import UnitCore
@testable import UnitRuntime

@Suite struct PositionCommitWindowTests {
    let start = ContinuousClock.now
    let firstFixTime = TestClock.now()

    func held(_ index: Int, report: Bool = true) -> PositionCommitWindow.HeldFix {
        .init(fix: Fix(time: firstFixTime + .milliseconds(index * 100), latitude: 46.5, longitude: 7.5), report: report, createdAt: UnitTime(milliseconds: Int64(index)))
    }

    @Test func theFirstFixIsCommittedAtOnce() {
        let window = PositionCommitWindow(window: .seconds(1))
        #expect(!window.holds(at: start))
    }

    @Test func fixesWithinTheWindowWaitAndTheFirstOneStartsTheTimer() {
        var window = PositionCommitWindow(window: .seconds(1))
        #expect(window.takeForCommit(at: start).isEmpty)
        #expect(window.holds(at: start + .milliseconds(100)))
        #expect(window.hold([held(1)]) == start + .seconds(1), "the first held fix asks for a timer at the window's close")
        #expect(window.hold([held(2, report: false)]) == nil, "later ones ride on that timer")
        #expect(!window.isDue(at: start + .milliseconds(999)))
        #expect(window.isDue(at: start + .seconds(1)))
        #expect(window.takeForCommit(at: start + .seconds(1)) == [held(1), held(2, report: false)], "in the order they came")
        #expect(window.held.isEmpty)
    }

    @Test func aCommitForAnotherReasonTakesTheHeldFixesAndRestartsTheWindow() {
        var window = PositionCommitWindow(window: .seconds(1))
        _ = window.takeForCommit(at: start)
        _ = window.hold([held(1)])
        // A reply at 300 ms commits at once, with the fix.
        #expect(window.takeForCommit(at: start + .milliseconds(300)) == [held(1)])
        #expect(!window.isDue(at: start + .seconds(1)), "the old window's timer finds nothing to commit")
        #expect(window.holds(at: start + .milliseconds(1100)), "the window now runs from the reply's commit")
        #expect(!window.holds(at: start + .milliseconds(1300)))
    }

    @Test func aOneHertzReceiverIsNeverHeld() {
        var window = PositionCommitWindow(window: .seconds(1))
        for second in 0..<10 {
            let now = start + .seconds(second)
            #expect(!window.holds(at: now), "fix \(second)")
            #expect(window.takeForCommit(at: now).isEmpty)
        }
    }

    /// Committing takes a moment after the fix came, and receivers jitter: a 1 Hz fix is seldom
    /// exactly a window after the last commit.
    @Test func aOneHertzReceiverWithJitterIsNeverHeld() {
        var window = PositionCommitWindow(window: .seconds(1))
        var now = start
        for (second, gap) in [999.2, 1000.7, 998.5, 1003.1, 999.9, 950.0].enumerated() {
            now = now + .microseconds(Int(gap * 1000))
            #expect(!window.holds(at: now), "fix \(second) after \(gap) ms")
            _ = window.takeForCommit(at: now)
        }
        #expect(window.holds(at: now + .milliseconds(500)), "a 2 Hz receiver still waits")
    }

    @Test func aZeroWindowCommitsEveryFix() {
        var window = PositionCommitWindow(window: .zero)
        _ = window.takeForCommit(at: start)
        #expect(!window.holds(at: start))
    }

    @Test func aTimerThatFiresEarlyLeavesTheFixesHeld() {
        var window = PositionCommitWindow(window: .milliseconds(500))
        _ = window.takeForCommit(at: start)
        _ = window.hold([held(1)])
        #expect(!window.isDue(at: start + .milliseconds(499)))
        #expect(window.held == [held(1)])
    }
}
