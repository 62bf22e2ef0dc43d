import TaxiProtocol
import Testing
import UnitCore

/// The ignition input: told to the dispatcher and in the status, a slower cadence while off, and
/// what an available driver is asked or made to do (`[ignition] off_while_available`).
@Suite struct IgnitionTests {
    let t = Scenario.t0

    func ignitionEvents(_ step: Step) -> [IgnitionChange] {
        step.messages.compactMap { if case .ignition(let change, _) = $0 { change } else { nil } }
    }

    @Test func offWhileAvailableAsksTheDriverAndOnAgainSaysSo() {
        var machine = Scenario.machine(in: .available)
        let off = machine.handle(.ignition(on: false, at: t))
        #expect(ignitionEvents(off) == [IgnitionChange(on: false, state: .available)])
        #expect(off.status?.ignitionOn == false)
        #expect(off.suggestsOffDuty)
        #expect(machine.state == .available, "asking changes nothing: the driver decides")
        #expect(machine.handle(.ignition(on: false, at: t + .milliseconds(1000))) == Step(), "the same reading again is no news")
        let on = machine.handle(.ignition(on: true, at: t + .milliseconds(2000)))
        #expect(ignitionEvents(on) == [IgnitionChange(on: true, state: .available)])
        #expect(on.timers.contains(.cancel(.ignitionOffDuty)))
        #expect(!on.suggestsOffDuty)
    }

    @Test func offDutyAfterAWhileUnlessTheIgnitionComesBackOrTheDriverLeavesAvailable() {
        var settings = UnitSettings()
        settings.ignitionOff = .offDuty(after: .seconds(300))
        var machine = Scenario.machine(in: .available, settings: settings)
        let off = machine.handle(.ignition(on: false, at: t))
        #expect(off.timers.contains(.start(.ignitionOffDuty, fireAt: t + .milliseconds(300_000))))
        #expect(!off.suggestsOffDuty)
        let due = machine.handle(.timerFired(.ignitionOffDuty, at: t + .milliseconds(300_000)))
        #expect(machine.state == .offDuty)
        #expect(due.messages.contains(.event(Transition(t: t + .milliseconds(300_000), from: .available, to: .offDuty, reason: "ignition_off"))))

        var backOn = Scenario.machine(in: .available, settings: settings)
        _ = backOn.handle(.ignition(on: false, at: t))
        _ = backOn.handle(.ignition(on: true, at: t + .milliseconds(1000)))
        _ = backOn.handle(.timerFired(.ignitionOffDuty, at: t + .milliseconds(300_000)))
        #expect(backOn.state == .available, "a firing that outlived its reason changes nothing")

        var offered = Scenario.machine(in: .available, settings: settings)
        _ = offered.handle(.ignition(on: false, at: t))
        _ = offered.handle(.inbound(.offer(Scenario.offer("J9", window: 3600)), receivedAt: t + .milliseconds(1000)))
        _ = offered.handle(.timerFired(.ignitionOffDuty, at: t + .milliseconds(300_000)))
        #expect(offered.state.name == .offered, "a driver who left available keeps the job")
    }

    @Test func ignoredItIsOnlyReported() {
        var settings = UnitSettings()
        settings.ignitionOff = .ignore
        var machine = Scenario.machine(in: .available, settings: settings)
        let off = machine.handle(.ignition(on: false, at: t))
        #expect(ignitionEvents(off).count == 1)
        #expect(!off.suggestsOffDuty && !off.timers.contains(.start(.ignitionOffDuty, fireAt: t + .milliseconds(300_000))))
        #expect(off.timers.allSatisfy { if case .start(.ignitionOffDuty, _) = $0 { false } else { true } })
    }

    @Test func whileOffPositionsFollowTheIgnitionOffRuleButNeverInPanic() {
        var machine = Scenario.machine(in: .available)
        let start = t.seconds
        #expect(!machine.handle(.gps(Scenario.sample(start))).fixes.isEmpty)
        _ = machine.handle(.ignition(on: false, at: t))
        // `available` reports every 30 s; parked with the engine off, every 600 s.
        let reported = (1...19).map { machine.handle(.gps(Scenario.sample(start + Double($0) * 31))).fixes.filter(\.report).count }.reduce(0, +)
        #expect(reported == 0)
        #expect(machine.handle(.gps(Scenario.sample(start + 601))).fixes.first?.report == true)
        _ = machine.handle(.driver(.sos, at: t + .milliseconds(602_000)))
        #expect(machine.handle(.gps(Scenario.sample(start + 603))).fixes.first?.report == true, "panic reports every fix")
    }

    @Test func offDutyAndPrivateNothingIsSaidOfTheIgnition() {
        var settings = UnitSettings()
        settings.positions.offDutyPositions = false
        var machine = Scenario.machine(in: .offDuty, settings: settings)
        let off = machine.handle(.ignition(on: false, at: t))
        #expect(ignitionEvents(off).isEmpty)
        #expect(off.status?.ignitionOn == nil && machine.status.ignitionOn == nil)
        _ = machine.handle(.driver(.duty, at: t + .milliseconds(1000)))
        #expect(machine.status.ignitionOn == false, "on duty the status says it again")
    }
}
