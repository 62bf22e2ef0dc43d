import Testing
import UnitCore

@Suite struct UnitStateMachineTests {
    func sample(_ time: Double) -> GPSSample {
        GPSSample(mode: 3, time: time, latitude: 46.5, longitude: 7.5)
    }

    @Test func startsOffDutyAndDutyToggles() {
        var machine = UnitStateMachine()
        #expect(machine.state == .offDuty)
        let on = machine.handle(.driver(.duty))
        #expect(on == [.persist(UnitSnapshot(state: .available)), .statusChanged(.available), .tellDriver("available")])
        let off = machine.handle(.driver(.duty))
        #expect(off == [.persist(UnitSnapshot(state: .offDuty)), .statusChanged(.offDuty), .tellDriver("off_duty")])
    }

    @Test func restoresTheSnapshot() {
        let machine = UnitStateMachine(restoring: UnitSnapshot(state: .available))
        #expect(machine.state == .available)
    }

    @Test func everyValidFixIsRecordedButReportedAtMostEveryInterval() {
        var machine = UnitStateMachine(settings: UnitSettings(reportingIntervalS: 5))
        var reported: [Double] = []
        for second in 0..<12 {
            let actions = machine.handle(.gps(sample(1000 + Double(second))))
            guard case .recordFix(let fix, let report)? = actions.first, actions.count == 1 else {
                Issue.record("expected one recordFix, got \(actions)")
                return
            }
            #expect(fix.time == Int64(1000 + second) * 1000)
            if report { reported.append(Double(second)) }
        }
        #expect(reported == [0, 5, 10])
    }

    @Test func invalidSamplesDoNothing() {
        var machine = UnitStateMachine()
        #expect(machine.handle(.gps(GPSSample(mode: 1, time: 10, latitude: .nan, longitude: .nan))).isEmpty)
        _ = machine.handle(.gps(sample(20)))
        #expect(machine.handle(.gps(sample(20))).isEmpty)
    }

    @Test func aClockJumpBackwardsIsReportedAtOnce() {
        var machine = UnitStateMachine(settings: UnitSettings(reportingIntervalS: 60))
        _ = machine.handle(.gps(sample(5000)))
        #expect(machine.handle(.gps(sample(100))) == [.recordFix(Fix(time: 100_000, latitude: 46.5, longitude: 7.5), report: true)])
    }
}
