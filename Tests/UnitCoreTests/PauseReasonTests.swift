import TaxiProtocol
import Testing
import UnitCore

/// One key for every pause reason, and a reason that can change while paused.
@Suite struct PauseReasonTests {
    let t = Scenario.t0

    @Test func pauseNextStartsWithABreakAndStepsThroughTheReasons() {
        var machine = Scenario.machine(in: .available)
        var reasons: [String?] = []
        for step in 0..<5 {
            let performed = machine.handle(.driver(.pauseNext, at: t + .milliseconds(step)))
            reasons += performed.messages.compactMap { if case .event(let transition) = $0 { transition.reason } else { nil } }
        }
        #expect(reasons == ["break", "refuel", "personal", "other", "break"])
        #expect(machine.state == .paused(.break))
        #expect(machine.status.pauseReason == .break)
    }

    @Test func aNamedReasonChangesThePauseAndTheSameOneIsRefused() {
        var machine = Scenario.machine(in: .paused)
        let changed = machine.handle(.driver(.pause(.personal), at: t))
        #expect(changed.messages == [.event(Transition(t: t, from: .paused, to: .paused, reason: "personal"))])
        #expect(changed.status?.pauseReason == .personal)
        #expect(machine.handle(.driver(.pause(.personal), at: t + .milliseconds(1))).refusals == [.alreadyPaused])
        #expect(DriverInput.parse("pause next") == .success(.pauseNext))
        #expect(DriverInput.parse("pause") == .success(.pause(.other)))
    }

    @Test func onlyFromAvailableOrPaused() {
        var machine = Scenario.machine(in: .enRoute)
        #expect(machine.handle(.driver(.pauseNext, at: t)).refusals == [.pauseOnlyWhenAvailable])
    }
}
