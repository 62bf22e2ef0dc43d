import Foundation
import TaxiProtocol
import Testing
@testable import UnitCore

/// The driver's working day (ShiftTracker.swift): counters, breaks, warnings once, limits off by
/// default, and the shift through a restart.
@Suite struct ShiftTrackerTests {
    let t = Scenario.t0

    func at(_ seconds: Int64) -> UnitTime { t + .seconds(seconds) }

    /// A tracker with a shift started on duty at t0.
    func started(_ settings: ShiftSettings = ShiftSettings()) -> ShiftTracker {
        var tracker = ShiftTracker(settings: settings)
        _ = tracker.stateChanged(to: .available, pauseReason: nil, at: t)
        return tracker
    }

    /// One fix a second from `from` to `to` (exclusive), moving at `speed`.
    func drive(_ tracker: inout ShiftTracker, from: Int64, to: Int64, speed: Double = 10) -> ShiftTracker.Outcome {
        var all = ShiftTracker.Outcome()
        for second in from..<to { all = all + tracker.fix(speed: speed, at: at(second)) }
        return all
    }

    @Test func goingOnDutyStartsTheShiftAndTheDispatcherHearsIt() throws {
        var tracker = ShiftTracker()
        let outcome = tracker.stateChanged(to: .available, pauseReason: nil, at: t)
        #expect(outcome.reports.map(\.what) == [.start])
        #expect(tracker.shift?.startedAt == t)
        #expect(tracker.stateChanged(to: .offDuty, pauseReason: nil, at: at(60)).reports.isEmpty, "off duty does not end the shift")
        #expect(tracker.stateChanged(to: .available, pauseReason: nil, at: at(120)).reports.map(\.what) != [.start], "one shift all day")
        let counters = try #require(tracker.shift).counters(at: at(180))
        #expect(counters.length == .seconds(180))
        #expect(counters.onDuty == .seconds(120), "the minute off duty is not on-duty time")
    }

    @Test func drivingCountsFixesAtSpeedAndCapsAGapInTheGPS() throws {
        var tracker = started()
        _ = drive(&tracker, from: 0, to: 61)
        #expect(tracker.shift?.driving == .seconds(60))
        _ = drive(&tracker, from: 61, to: 121, speed: 0.5)
        #expect(tracker.shift?.driving == .seconds(60), "standing in a queue is not driving")
        // The GPS lost for an hour, then moving again: the gap counts at most `longestGap`.
        _ = tracker.fix(speed: 10, at: at(121 + 3600))
        #expect(tracker.shift?.driving == .seconds(60) + ShiftTracker.longestGap)
        #expect(tracker.shift?.continuousDriving == tracker.shift?.driving)
        // Without a shift nothing is counted.
        var idle = ShiftTracker()
        _ = drive(&idle, from: 0, to: 10)
        #expect(idle.shift == nil)
    }

    @Test func aLongEnoughBreakResetsContinuousDrivingAndAShortOneDoesNot() throws {
        var tracker = started(ShiftSettings(breakMin: 30))
        _ = drive(&tracker, from: 0, to: 601)
        _ = tracker.stateChanged(to: .paused, pauseReason: .break, at: at(600))
        let short = tracker.stateChanged(to: .available, pauseReason: nil, at: at(600 + 29 * 60))
        #expect(short.reports.isEmpty)
        #expect(tracker.shift?.continuousDriving == .seconds(600))
        // A refuel stop is no break, however long.
        _ = tracker.stateChanged(to: .paused, pauseReason: .refuel, at: at(3000))
        #expect(tracker.stateChanged(to: .available, pauseReason: nil, at: at(3000 + 3600)).reports.isEmpty)
        _ = tracker.stateChanged(to: .paused, pauseReason: .break, at: at(7000))
        let long = tracker.stateChanged(to: .available, pauseReason: nil, at: at(7000 + 30 * 60))
        #expect(long.reports.map(\.what) == [.break])
        #expect(long.reports.first?.breakLength == .seconds(30 * 60))
        #expect(tracker.shift?.continuousDriving == .zero)
        #expect(tracker.shift?.driving == .seconds(600), "the day's driving stays")
    }

    /// Without a fleet's `break_min` any stop resets continuous driving, and none is reported: a
    /// dispatcher would otherwise hear of a "break" at every second off duty.
    @Test func withBreakMinZeroAnyRestResetsContinuousDrivingAndNoneIsReported() throws {
        var tracker = started()
        _ = drive(&tracker, from: 0, to: 601)
        _ = tracker.stateChanged(to: .offDuty, pauseReason: nil, at: at(601))
        let back = tracker.stateChanged(to: .available, pauseReason: nil, at: at(602))
        #expect(back.reports.isEmpty)
        #expect(tracker.shift?.continuousDriving == .zero && tracker.shift?.driving == .seconds(600))
        _ = tracker.stateChanged(to: .paused, pauseReason: .break, at: at(700))
        #expect(tracker.stateChanged(to: .available, pauseReason: nil, at: at(4300)).reports.isEmpty, "however long")
    }

    @Test func limitsAreOffByDefault() {
        var tracker = started()
        let outcome = drive(&tracker, from: 0, to: 2 * 3600)
        #expect(outcome.warnings.isEmpty && outcome.reports.isEmpty)
        #expect(tracker.fix(speed: 10, at: at(24 * 3600)).warnings.isEmpty)
    }

    @Test func eachWarningIsGivenOnceBeforeAndOnceAtTheLimit() {
        var tracker = started(ShiftSettings(maxContinuousDrivingMin: 10, breakMin: 1, warnBeforeMin: 2))
        let early = drive(&tracker, from: 0, to: 8 * 60)
        #expect(early.warnings.isEmpty)
        let soon = drive(&tracker, from: 8 * 60, to: 10 * 60)
        #expect(soon.warnings == [ShiftWarning(limit: .continuousDriving, reached: false, minutesLeft: 2)])
        #expect(soon.reports.isEmpty, "the dispatcher hears of a limit reached, not of the warning")
        let reached = drive(&tracker, from: 10 * 60, to: 30 * 60)
        #expect(reached.warnings == [ShiftWarning(limit: .continuousDriving, reached: true)])
        #expect(reached.reports.map(\.what) == [.limit])
        #expect(reached.reports.first?.limit == .continuousDriving)
        // After a break the warnings are due again.
        _ = tracker.stateChanged(to: .paused, pauseReason: .break, at: at(30 * 60))
        _ = tracker.stateChanged(to: .available, pauseReason: nil, at: at(32 * 60))
        let again = drive(&tracker, from: 32 * 60, to: 43 * 60)
        #expect(again.warnings.map(\.reached) == [false, true])
    }

    @Test func theShiftLengthLimitCountsPausesToo() {
        var tracker = started(ShiftSettings(maxShiftMin: 60))
        _ = tracker.stateChanged(to: .paused, pauseReason: .personal, at: at(10))
        let outcome = tracker.fix(speed: 0, at: at(3600))
        #expect(outcome.warnings == [ShiftWarning(limit: .shiftLength, reached: true)])
        #expect(outcome.reports.first?.counters.length == .seconds(3600))
        #expect(tracker.fix(speed: 0, at: at(3601)).warnings.isEmpty, "once")
    }

    @Test func theDriverStartsAndEndsTheShiftWithTheOdometer() throws {
        var tracker = ShiftTracker()
        let start = try tracker.start(at: t, odometerKm: 123_456, onDuty: false).get()
        #expect(start.reports.first?.odometerKm == 123_456)
        #expect(tracker.start(at: t, odometerKm: nil, onDuty: false) == .failure(.alreadyStarted))
        let end = try tracker.end(at: at(3600), odometerKm: 123_500).get()
        #expect(end.reports.map(\.what) == [.end])
        #expect(end.reports.first?.counters.length == .seconds(3600))
        #expect(tracker.shift == nil)
        #expect(tracker.end(at: at(3601), odometerKm: nil) == .failure(.noShift))
        #expect(DriverInput.parse("shift start 123456") == .success(.shift(.start(odometerKm: 123_456))))
        #expect(DriverInput.parse("shift end") == .success(.shift(.end(odometerKm: nil))))
        for bad in ["shift", "shift on", "shift start -1", "shift start 10000000", "shift end 12 km"] {
            guard case .failure(.badArgument) = DriverInput.parse(bad) else { Issue.record("\(bad) accepted"); continue }
        }
    }

    @Test func theMachineSendsShiftEventsAndRefusesToEndOnDuty() {
        var machine = Scenario.machine(in: .offDuty)
        let duty = machine.handle(.driver(.duty, at: t))
        #expect(duty.messages.contains { if case .shift(let report) = $0 { report.what == .start } else { false } })
        #expect(machine.handle(.driver(.shift(.end(odometerKm: nil)), at: at(10))).refusals == [.offDutyFirst])
        _ = machine.handle(.driver(.duty, at: at(20)))
        let end = machine.handle(.driver(.shift(.end(odometerKm: 7)), at: at(30)))
        #expect(end.told == ["Shift ended"])
        #expect(end.snapshot?.shift == nil && end.durability == .promised)
        #expect(machine.handle(.driver(.shift(.end(odometerKm: nil)), at: at(40))).refusals == [.noShift])
    }

    @Test func theShiftSurvivesARestartAndOldSnapshotsHaveNone() throws {
        var settings = UnitSettings()
        settings.shift = ShiftSettings(maxContinuousDrivingMin: 10, warnBeforeMin: 5)
        var machine = Scenario.machine(in: .offDuty, settings: settings)
        _ = machine.handle(.driver(.duty, at: t))
        var step = Step()
        for second in 0..<(6 * 60) {
            let time = at(Int64(second)).seconds
            step += machine.handle(.gps(GPSSample(mode: 3, time: time, latitude: 46.509 + Double(second) * 1e-5, longitude: 7.5, speed: 10)))
        }
        #expect(step.shiftWarnings.count == 1)
        let saved = try JSONEncoder().encode(machine.snapshot)
        let restored = try JSONDecoder().decode(UnitSnapshot.self, from: saved)
        #expect(restored == machine.snapshot)
        #expect(restored.shift?.warned.count == 1, "the warning is not given again after a restart")
        let old = try JSONDecoder().decode(UnitSnapshot.self, from: Data(#"{"v":3,"state":{"offDuty":{}},"answeredOffers":[]}"#.utf8))
        #expect(old.shift == nil)
    }
}
