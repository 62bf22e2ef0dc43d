import TaxiProtocol
import Testing
import UnitCore

/// The taximeter's hired/vacant signal drives the job: passengers on board at the pickup, a street
/// hail while free, the clear with passengers on board, and nothing anywhere else.
@Suite struct MeterTests {
    let t = Scenario.t0

    func machine(through events: [UnitEvent]) -> UnitStateMachine {
        var machine = UnitStateMachine()
        for event in events { _ = machine.handle(event) }
        return machine
    }

    var atPickup: [UnitEvent] {
        [.driver(.duty, at: t), .inbound(.offer(Scenario.offer("J1")), receivedAt: t), .driver(.accept, at: t), .driver(.arrived, at: t)]
    }

    func transition(_ step: Step) -> Transition? {
        step.messages.lazy.compactMap { if case .event(let transition) = $0 { transition } else { nil } }.first
    }

    @Test func hiredAtThePickupPutsThePassengersOnBoard() throws {
        var machine = machine(through: atPickup)
        let step = machine.handle(.meter(hired: true, at: t + .seconds(30)))
        guard case .onBoard(let job, let since) = machine.state else { Issue.record("not on board: \(machine.state.name)"); return }
        #expect(job.id == "J1" && since.time == t + .seconds(30) && since.arrivedAt == t)
        let event = try #require(transition(step))
        #expect(event.from == .atPickup && event.to == .onBoard && event.job == "J1" && event.reason == "meter")
    }

    @Test func vacantWithPassengersOnBoardClearsWithTheMetersFare() throws {
        var machine = machine(through: atPickup + [.meter(hired: true, at: t)])
        _ = machine.handle(.meterFare(amount: 2710, currency: "EUR", at: t + .seconds(600)))
        let step = machine.handle(.meter(hired: false, at: t + .seconds(601)))
        let ride = try #require(step.ride)
        #expect(ride.job == "J1" && ride.fare == Fare(amount: 2710, currency: "EUR", source: .meter))
        #expect(machine.state == .available)
        #expect(transition(step)?.reason == "completed")
        #expect(step.messages.last == .ride(ride))
    }

    @Test func hiredWhileAvailableOrPausedIsAStreetHailTheUnitReports() throws {
        for free: [UnitEvent] in [[.driver(.duty, at: t)], [.driver(.duty, at: t), .driver(.pause(.break), at: t)]] {
            var machine = machine(through: free)
            let from = machine.state.name
            let step = machine.handle(.meter(hired: true, at: t + .seconds(5)))
            guard case .onBoard(let job, _) = machine.state else { Issue.record("no hail from \(from)"); continue }
            #expect(job.id == "hail-\((t + .seconds(5)).milliseconds)")
            let event = try #require(transition(step))
            #expect(event.from == from && event.to == .onBoard && event.job == job.id && event.reason == "hail")
            #expect(step.status?.state == .onBoard && step.status?.job == job.id, "the dispatcher sees the taxi busy")
            #expect(step.snapshot?.state == machine.state, "the hail is kept across a restart")
            // The hail ends as any ride does: vacant clears it.
            let cleared = machine.handle(.meter(hired: false, at: t + .seconds(900)))
            #expect(cleared.ride?.job == job.id && machine.state == .available)
        }
    }

    @Test func twoHailsGetTwoJobIDs() {
        var machine = machine(through: [.driver(.duty, at: t)])
        _ = machine.handle(.meter(hired: true, at: t + .seconds(1)))
        let first = machine.state.job?.id
        _ = machine.handle(.meter(hired: false, at: t + .seconds(2)))
        _ = machine.handle(.meter(hired: true, at: t + .seconds(3)))
        #expect(first != nil && machine.state.job?.id != nil && first != machine.state.job?.id)
    }

    @Test func theSignalWhereItMeansNothingChangesNothing() {
        let cases: [(String, [UnitEvent], Bool)] = [
            ("hired off duty", [], true),
            ("vacant off duty", [], false),
            ("vacant while available", [.driver(.duty, at: t)], false),
            ("hired while offered", [.driver(.duty, at: t), .inbound(.offer(Scenario.offer("J1")), receivedAt: t)], true),
            ("hired on the way", [.driver(.duty, at: t), .inbound(.offer(Scenario.offer("J1")), receivedAt: t), .driver(.accept, at: t)], true),
            ("vacant at the pickup", atPickup, false),
            ("hired on board by the driver's key", atPickup + [.driver(.passengersOnBoard(nil), at: t)], true),
        ]
        for (name, events, hired) in cases {
            var machine = machine(through: events)
            let before = machine.state
            let step = machine.handle(.meter(hired: hired, at: t + .seconds(1)))
            #expect(machine.state == before && step.snapshot == nil && step.messages.isEmpty && !step.notes.isEmpty, "\(name)")
        }
    }

    @Test func theSameSignalTwiceActsOnce() {
        var machine = machine(through: atPickup + [.meter(hired: true, at: t)])
        _ = machine.handle(.driver(.clear, at: t + .seconds(60)))
        // The driver cleared by hand while the meter still runs: its repeated "hired" is no new hail.
        let step = machine.handle(.meter(hired: true, at: t + .seconds(61)))
        #expect(machine.state == .available && step.messages.isEmpty)
        #expect(machine.meterHired == true)
    }

    /// After a restart the driver may have cleared a hail by key with the meter still running: the
    /// meter found hired makes no phantom hail, and its next change acts again.
    @Test func theMeterFoundHiredWhileFreeMakesNoHailAndTellsTheDriver() throws {
        for free: [UnitEvent] in [[.driver(.duty, at: t)], [.driver(.duty, at: t), .driver(.pause(.break), at: t)]] {
            var machine = machine(through: free)
            let before = machine.state
            let found = machine.handle(.meterFound(hired: true, at: t + .seconds(5)))
            #expect(machine.state == before && found.snapshot == nil && found.messages.isEmpty && found.status == nil, "\(before.name)")
            #expect(found.meterDisagreement == true && found.driver.count == 1, "the driver is told")
            #expect(machine.meterHired == true)
            #expect(machine.handle(.meter(hired: true, at: t + .seconds(6))) == Step(), "a repeat is no change either")
            // The meter's next ride: vacant, then hired again, is a hail.
            _ = machine.handle(.meter(hired: false, at: t + .seconds(60)))
            _ = machine.handle(.meter(hired: true, at: t + .seconds(61)))
            #expect(machine.state.name == .onBoard && machine.state.job?.id == "hail-\((t + .seconds(61)).milliseconds)")
        }
    }

    /// Restored on board after the driver put the passengers on board by key, the meter found
    /// vacant clears nothing; its hired and vacant then clear the ride.
    @Test func theMeterFoundVacantOnBoardClearsNothingAndTellsTheDriver() throws {
        var machine = machine(through: atPickup + [.driver(.passengersOnBoard(nil), at: t)])
        let found = machine.handle(.meterFound(hired: false, at: t + .seconds(5)))
        #expect(machine.state.name == .onBoard && found.ride == nil && found.messages.isEmpty && found.snapshot == nil)
        #expect(found.meterDisagreement == false && found.driver.count == 1)
        _ = machine.handle(.meter(hired: true, at: t + .seconds(10)))
        let cleared = machine.handle(.meter(hired: false, at: t + .seconds(600)))
        #expect(cleared.ride?.job == "J1" && machine.state == .available)
    }

    @Test func theMeterFoundAsTheStateSaysIsTakenNoteOfSilently() {
        let cases: [(String, [UnitEvent], Bool)] = [
            ("vacant off duty", [], false),
            ("hired off duty", [], true),
            ("vacant while available", [.driver(.duty, at: t)], false),
            ("hired while offered", [.driver(.duty, at: t), .inbound(.offer(Scenario.offer("J1")), receivedAt: t)], true),
            ("vacant at the pickup", atPickup, false),
            ("hired at the pickup", atPickup, true),
            ("hired on board", atPickup + [.driver(.passengersOnBoard(nil), at: t)], true),
        ]
        for (name, events, hired) in cases {
            var machine = machine(through: events)
            let before = machine.state
            #expect(machine.handle(.meterFound(hired: hired, at: t + .seconds(1))) == Step(), "\(name)")
            #expect(machine.state == before && machine.meterHired == hired, "\(name)")
        }
    }

    @Test func vacantWhenThePaymentIsRequiredLeavesTheRideToTheDriver() {
        var settings = UnitSettings()
        settings.paymentRequired = true
        var machine = UnitStateMachine(settings: settings)
        for event in atPickup + [.meter(hired: true, at: t)] { _ = machine.handle(event) }
        let step = machine.handle(.meter(hired: false, at: t + .seconds(60)))
        #expect(machine.state.name == .onBoard && step.ride == nil && step.driver == [.refused(.paymentRequired)])
    }
}
