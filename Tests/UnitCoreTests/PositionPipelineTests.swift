import TaxiProtocol
import Testing
import UnitCore

/// A board whose system clock is not synchronised (it says 1970); `monotonicS` advances with the test.
func unsynchronised(_ monotonicS: Double) -> ClockSample {
    ClockSample(system: UnitTime(seconds: 0), systemSynchronised: false, monotonic: .checkedSeconds(monotonicS))
}

/// Fixes, reporting, heartbeat and zones through the state machine: one fix per second of fix time,
/// arriving at the same second of monotonic time, so the unit clock (GPS-derived) equals fix time.
@Suite struct PositionPipelineTests {
    static let t0 = 1_780_000_000.0

    func sample(_ second: Double, latitude: Double = 46.5) -> GPSSample {
        GPSSample(mode: 3, time: Self.t0 + second, latitude: latitude, longitude: 7.5)
    }

    func ms(_ second: Double) -> UnitTime { UnitTime(seconds: Self.t0 + second) }

    func feed(_ machine: inout UnitStateMachine, seconds: Range<Int>) -> [Step] {
        seconds.map { machine.handle(.gps(sample(Double($0)), at: unsynchronised(Double($0)))) }
    }

    func reportedSeconds(_ actions: [Step], from first: Int = 0) -> [Int] {
        actions.enumerated().compactMap { index, actions in
            actions.fixes.contains { $0.report } ? first + index : nil
        }
    }

    func onDuty() -> UnitStateMachine {
        var machine = UnitStateMachine()
        _ = machine.handle(.driver(.duty, at: 0))
        return machine
    }

    @Test func everyValidFixIsRecordedButReportedByTheStatesPolicy() {
        var machine = onDuty()
        let actions = feed(&machine, seconds: 0..<65)
        for (second, actions) in actions.enumerated() {
            guard let fix = actions.fixes.first?.fix else {
                Issue.record("second \(second): expected a recorded fix, got \(actions)")
                continue
            }
            #expect(fix.time == ms(Double(second)))
        }
        // Standing still while available: every 30 s.
        #expect(reportedSeconds(actions) == [0, 30, 60])
    }

    @Test func aStateChangeReportsTheNextFixAndFollowsTheNewPolicy() {
        var machine = UnitStateMachine()
        #expect(reportedSeconds(feed(&machine, seconds: 0..<10)) == [0])
        _ = machine.handle(.driver(.duty, at: ms(10)))
        #expect(reportedSeconds(feed(&machine, seconds: 10..<45), from: 10) == [10, 40])
    }

    @Test func panicReportsEveryFixUntilAcknowledged() {
        var machine = onDuty()
        _ = feed(&machine, seconds: 0..<2)
        _ = machine.handle(.driver(.sos, at: ms(2)))
        #expect(reportedSeconds(feed(&machine, seconds: 2..<6), from: 2) == [2, 3, 4, 5])
        _ = machine.handle(.inbound(.sosAck(SOSAck()), receivedAt: ms(6)))
        #expect(reportedSeconds(feed(&machine, seconds: 6..<40), from: 6) == [35], "back to available's 30 s after the last report at 5")
    }

    @Test func invalidSamplesDoNothing() {
        var machine = UnitStateMachine()
        #expect(machine.handle(.gps(GPSSample(mode: 1, time: Self.t0, latitude: .nan, longitude: .nan), at: unsynchronised(0))) == Step())
        _ = machine.handle(.gps(sample(1), at: unsynchronised(1)))
        #expect(machine.handle(.gps(sample(1), at: unsynchronised(1.2))) == Step())
    }

    @Test func aClockJumpBackwardsIsReportedAtOnce() {
        var machine = UnitStateMachine()
        _ = machine.handle(.gps(sample(5000), at: unsynchronised(0)))
        let actions = machine.handle(.gps(sample(100), at: unsynchronised(1)))
        #expect(actions == Step(fixes: [RecordedFix(Fix(time: ms(100), latitude: 46.5, longitude: 7.5), report: true)]))
    }

    @Test func theFirstValidFixStartsTheHeartbeatAndAnchorsTheClock() {
        var machine = onDuty()
        #expect(machine.positions.clock.reading(at: unsynchronised(3)).source == .unsynchronised)
        let actions = machine.handle(.gps(sample(0), at: unsynchronised(3)))
        #expect(actions.timers.contains(.start(.heartbeat, fireAt: ms(30))))
        #expect(machine.positions.clock.reading(at: unsynchronised(4)) == ClockReading(time: UnitTime(seconds: Self.t0 + 1), source: .gps))
        #expect(!machine.handle(.gps(sample(1), at: unsynchronised(4))).timers.contains { if case .start = $0 { true } else { false } })
    }

    @Test func aSilentReceiverGetsAStaleHeartbeatEveryInterval() {
        var machine = onDuty()
        _ = feed(&machine, seconds: 0..<4)
        let lastFix = Fix(time: ms(3), latitude: 46.5, longitude: 7.5)
        // The timer started at second 0 fires at 30: the last fix is only 27 s old, so it waits until 33.
        #expect(machine.handle(.timerFired(.heartbeat, at: ms(30))) == Step(timers: [.start(.heartbeat, fireAt: ms(33))]))
        #expect(machine.handle(.timerFired(.heartbeat, at: ms(33))) == Step(messages: [.stalePosition(lastFix, age: .seconds(30))], timers: [.start(.heartbeat, fireAt: ms(63))]))
        #expect(machine.handle(.timerFired(.heartbeat, at: ms(63))) == Step(messages: [.stalePosition(lastFix, age: .seconds(60))], timers: [.start(.heartbeat, fireAt: ms(93))]))
        // A valid fix again: the next timer finds it fresh and stays quiet.
        _ = machine.handle(.gps(sample(70), at: unsynchronised(70)))
        #expect(machine.handle(.timerFired(.heartbeat, at: ms(93))) == Step(timers: [.start(.heartbeat, fireAt: ms(100))]))
    }

    @Test func aStateChangeRetimesTheHeartbeat() {
        var machine = UnitStateMachine()
        _ = feed(&machine, seconds: 0..<2)
        // Off duty waited 300 s; available waits 30 s from the last valid fix.
        let actions = machine.handle(.driver(.duty, at: ms(11)))
        #expect(actions.timers.last == .start(.heartbeat, fireAt: ms(31)))
    }

    @Test func noFixNoHeartbeat() {
        var machine = UnitStateMachine()
        #expect(!machine.handle(.driver(.duty, at: 0)).timers.contains { if case .start = $0 { true } else { false } })
        #expect(machine.handle(.timerFired(.heartbeat, at: ms(500))) == Step())
    }

    @Test func enteringAZoneIsAnEventAndChangesTheStatus() {
        let rank = Zone(id: "rank-1", polygon: [
            .init(latitude: 46.49, longitude: 7.49), .init(latitude: 46.49, longitude: 7.51),
            .init(latitude: 46.51, longitude: 7.51), .init(latitude: 46.51, longitude: 7.49),
        ])
        var machine = UnitStateMachine(settings: UnitSettings(positions: PositionSettings(zones: [rank])))
        _ = machine.handle(.gps(sample(0, latitude: 46.48), at: unsynchronised(0)))
        let actions = machine.handle(.gps(sample(1, latitude: 46.5), at: unsynchronised(1)))
        #expect(actions.messages.contains(.zone(ZoneChange(from: nil, to: "rank-1"), at: ms(1))))
        #expect(actions.status == machine.status)
        #expect(machine.positions.zones.current == "rank-1")
    }

    @Test func inaccurateFixesAreDroppedByTheConfiguredLimit() {
        var machine = UnitStateMachine(settings: UnitSettings(positions: PositionSettings(maxHorizontalErrorM: 20)))
        var inaccurate = sample(0)
        inaccurate.horizontalError = 25
        #expect(machine.handle(.gps(inaccurate, at: unsynchronised(0))) == Step())
    }
}
