import Foundation
import TaxiProtocol
import Testing
import UnitCore

/// The whole job (destination, passenger, notes), seats set by hand, reservation reminders and the
/// ride summary for the dispatcher.
@Suite struct WholeJobWireTests {
    let now = Scenario.t0
    let pickup = #""pickup":{"lat":46.5,"lon":7.5}"#

    func decode(_ json: String) -> Result<InboundMessage, InboundProblem> {
        InboundMessage.decode(topic: .jobOffer, payload: Array(json.utf8), now: now)
    }

    func reason(_ json: String) -> String? {
        if case .failure(let problem) = decode(json) {
            #expect(problem.job == "J1", "answered invalid: the job id was readable")
            return problem.reason
        }
        return nil
    }

    @Test func anOfferCarriesTheDropoffAndThePassenger() throws {
        let json = #"{"job":"J1",\#(pickup),"dropoff":{"lat":46.95,"lon":7.44,"address":"Flughafen"},"#
            + #""passenger":{"name":"Anna Müller","phone":"+41 79 123 45 67","pickup_code":"4711"},"note":"2 suitcases"}"#
        guard case .success(.offer(let offer)) = decode(json) else { Issue.record("refused: \(decode(json))"); return }
        #expect(offer.dropoff == Place(lat: 46.95, lon: 7.44, address: "Flughafen"))
        #expect(offer.passenger == Passenger(name: "Anna Müller", phone: "+41 79 123 45 67", pickupCode: "4711"))
        let job = Job(offer)
        #expect(job.dropoff == offer.dropoff && job.passenger == offer.passenger && job.note == "2 suitcases")
        // Every part is optional.
        guard case .success(.offer(let bare)) = decode(#"{"job":"J1",\#(pickup),"passenger":{},"dropoff":{"lat":0,"lon":0}}"#) else {
            Issue.record("an empty passenger is refused"); return
        }
        #expect(bare.passenger == Passenger() && bare.dropoff == Place(lat: 0, lon: 0))
    }

    @Test func hostileDropoffsAndPassengersAreAnsweredInvalid() {
        #expect(reason(#"{"job":"J1",\#(pickup),"dropoff":{"lat":91,"lon":7}}"#) == "dropoff lat/lon out of range")
        #expect(reason(#"{"job":"J1",\#(pickup),"dropoff":{"lat":1e999,"lon":7}}"#) != nil)
        #expect(reason(#"{"job":"J1",\#(pickup),"dropoff":{"lon":7}}"#) == "dropoff.lat is missing")
        #expect(reason(#"{"job":"J1",\#(pickup),"dropoff":{"lat":1,"lon":7,"address":"a\u001b[2Jb"}}"#) == "dropoff.address contains control characters")
        #expect(reason(#"{"job":"J1",\#(pickup),"dropoff":{"lat":1,"lon":7,"address":"\#(String(repeating: "a", count: 501))"}}"#)
            == "dropoff.address is longer than 500 bytes")
        #expect(reason(#"{"job":"J1",\#(pickup),"passenger":{"name":"\#(String(repeating: "é", count: 51))"}}"#)
            == "passenger.name is longer than 100 bytes")
        #expect(reason(#"{"job":"J1",\#(pickup),"passenger":{"name":"A\nB"}}"#) == "passenger.name contains control characters")
        #expect(reason(#"{"job":"J1",\#(pickup),"passenger":{"phone":"call me"}}"#) == "passenger.phone may hold only digits, spaces and + - ( )")
        #expect(reason(#"{"job":"J1",\#(pickup),"passenger":{"phone":"+-()"}}"#) == "passenger.phone may hold only digits, spaces and + - ( )")
        #expect(reason(#"{"job":"J1",\#(pickup),"passenger":{"phone":"\#(String(repeating: "1", count: 33))"}}"#)
            == "passenger.phone is longer than 32 bytes")
        #expect(reason(#"{"job":"J1",\#(pickup),"passenger":{"pickup_code":"\#(String(repeating: "9", count: 17))"}}"#)
            == "passenger.pickup_code is longer than 16 bytes")
        #expect(reason(#"{"job":"J1",\#(pickup),"passenger":{"pickup_code":4711}}"#) == "passenger.pickup_code must be a string")
        #expect(reason(#"{"job":"J1",\#(pickup),"passenger":"Anna"}"#) != nil)
    }
}

@Suite struct SeatsByHandTests {
    let t = Scenario.t0

    @Test func theDriverSetsFreeSeatsAndOffersAndStatusFollow() {
        var machine = Scenario.machine(in: .available)
        let step = machine.handle(.driver(.seats(2), at: t))
        #expect(machine.seatsLeft == 2 && machine.status.seatsLeft == 2)
        #expect(step.status?.seatsLeft == 2)
        #expect(step.snapshot?.freeSeats == 2, "persisted: a restart keeps the count")
        // An offer for more than the free seats is answered invalid.
        let refused = machine.handle(.inbound(.offer(Scenario.offer("J3", passengers: 3)), receivedAt: t))
        #expect(refused.replies.map(\.reply) == [.invalid])
        #expect(refused.replies.first?.reason == "3 passengers exceed 2 seats")
        #expect(machine.handle(.inbound(.offer(Scenario.offer("J4", passengers: 2)), receivedAt: t)).replies.isEmpty)
        #expect(machine.state.name == .offered)
    }

    @Test func oneKeyCountsDownAndWrapsToAllSeats() {
        var machine = Scenario.machine(in: .available)
        var seen: [Int] = []
        for _ in 0..<6 {
            _ = machine.handle(.driver(.seats(nil), at: t))
            seen.append(machine.seatsLeft)
        }
        #expect(seen == [3, 2, 1, 0, 4, 3])
        _ = machine.handle(.driver(.seats(4), at: t))
        #expect(machine.snapshot.freeSeats == nil, "all seats is the configured count, not a setting")
    }

    @Test func moreThanTheTaxiHasIsRefusedAndNothingChanges() {
        var machine = Scenario.machine(in: .enRoute)
        let before = machine.snapshot
        let step = machine.handle(.driver(.seats(5), at: t))
        #expect(step.refusals == [.notEnoughSeats(seats: 4)])
        // The parser never gives a negative count; the machine does not trust that.
        #expect(machine.handle(.driver(.seats(-1), at: t)).refusals == [.notEnoughSeats(seats: 4)])
        #expect(machine.snapshot == before)
    }

    @Test func onBoardTheJobsPassengersComeOffTheFreeSeats() {
        var machine = Scenario.machine(in: .onBoard)
        _ = machine.handle(.driver(.seats(3), at: t))
        #expect(machine.seatsLeft == 1)
        #expect(UnitStateMachine(restoring: machine.snapshot).seatsLeft == 1)
    }

    @Test func theWordsParse() throws {
        #expect(try DriverInput.parse("seats 3").get() == .seats(3))
        #expect(try DriverInput.parse("SEATS").get() == .seats(nil))
        #expect(try DriverInput.parse("seats 0").get() == .seats(0))
        for bad in ["seats -1", "seats 100", "seats three", "seats 99999999999999999999"] {
            #expect(throws: DriverInput.ParseError.self, "\(bad)") { try DriverInput.parse(bad).get() }
        }
        #expect(try DriverInput.parse("info").get() == .details)
        #expect(throws: DriverInput.ParseError.self) { try DriverInput.parse("info 2").get() }
    }
}

@Suite struct ReservationReminderTests {
    let t = Scenario.t0
    let meeting = Scenario.t0 + .seconds(30 * 60)

    func accepted(settings: UnitSettings = UnitSettings(), meetingTime: UnitTime? = nil) -> (UnitStateMachine, Step) {
        var machine = Scenario.machine(in: .available, settings: settings)
        var offer = Scenario.offer("R1")
        offer.meetingTime = (meetingTime ?? meeting).milliseconds
        _ = machine.handle(.inbound(.offer(offer), receivedAt: t))
        let step = machine.handle(.driver(.accept, at: t + .milliseconds(1000)))
        return (machine, step)
    }

    @Test func acceptingAReservationArmsAReminderBeforeTheMeeting() {
        let (machine, step) = accepted()
        let due = meeting - .seconds(10 * 60)
        #expect(step.timers.contains(.start(.reminder(job: "R1"), fireAt: due)))
        #expect(machine.snapshot.reminder == Reminder(job: "R1", at: due))
        #expect(step.snapshot?.reminder == Reminder(job: "R1", at: due), "stored with the accept")
    }

    @Test func theReminderRingsOnceWhenItFires() {
        var (machine, _) = accepted()
        let step = machine.handle(.timerFired(.reminder(job: "R1"), at: meeting - .seconds(10 * 60)))
        #expect(step.reminded)
        #expect(step.driver == [.reminder("Reminder: job R1, meet at Bahnhofplatz 1 in 10 min")])
        #expect(machine.snapshot.reminder == nil && step.snapshot?.reminder == nil)
        #expect(machine.state.name == .enRoute)
        #expect(!machine.handle(.timerFired(.reminder(job: "R1"), at: meeting)).reminded, "once")
    }

    @Test func aReminderTimerFiringEarlyIsArmedAgainAndDoesNotRing() {
        var (machine, _) = accepted()
        let due = meeting - .seconds(10 * 60)
        let early = machine.handle(.timerFired(.reminder(job: "R1"), at: due - .seconds(300)))
        #expect(!early.reminded && early.driver.isEmpty)
        #expect(early.timers == [.start(.reminder(job: "R1"), fireAt: due)])
        #expect(machine.snapshot.reminder == Reminder(job: "R1", at: due))
        #expect(machine.handle(.timerFired(.reminder(job: "R1"), at: due)).reminded)
    }

    @Test func aRestartReArmsTheReminderOrRingsAtOnceWhenItIsOverdue() {
        let (machine, _) = accepted()
        var early = UnitStateMachine(restoring: machine.snapshot)
        let resumed = early.handle(.resumed(at: t + .milliseconds(60_000)))
        #expect(resumed.timers == [.start(.reminder(job: "R1"), fireAt: meeting - .seconds(10 * 60))])
        #expect(!resumed.reminded)
        var late = UnitStateMachine(restoring: machine.snapshot)
        let overdue = late.handle(.resumed(at: meeting - .seconds(60)))
        #expect(overdue.reminded)
        #expect(late.snapshot.reminder == nil)
        // Through the stored form, as the daemon restores it.
        let stored = try? JSONDecoder().decode(UnitSnapshot.self, from: JSONEncoder().encode(machine.snapshot))
        #expect(stored?.reminder == Reminder(job: "R1", at: meeting - .seconds(10 * 60)))
    }

    @Test func arrivingOrACancelEndsTheReminder() {
        var (arriving, _) = accepted()
        let arrived = arriving.handle(.driver(.arrived, at: t + .milliseconds(2000)))
        #expect(arrived.timers.contains(.cancel(.reminder(job: "R1"))))
        #expect(arriving.snapshot.reminder == nil)
        var (cancelled, _) = accepted()
        let step = cancelled.handle(.inbound(.cancel(JobCancel(job: "R1")), receivedAt: t + .milliseconds(2000)))
        #expect(step.timers.contains(.cancel(.reminder(job: "R1"))))
        #expect(cancelled.snapshot.reminder == nil)
    }

    @Test func noReminderWhenTheMeetingIsTooNearOrRemindersAreOff() {
        let (near, nearStep) = accepted(meetingTime: Scenario.t0 + .milliseconds(5) * 60_000)
        #expect(near.snapshot.reminder == nil && !nearStep.timers.contains { if case .start(.reminder, _) = $0 { true } else { false } })
        let (off, _) = accepted(settings: UnitSettings(reminderMin: 0))
        #expect(off.snapshot.reminder == nil)
        var plain = Scenario.machine(in: .enRoute)
        #expect(plain.snapshot.reminder == nil)
        #expect(!plain.handle(.timerFired(.reminder(job: "J1"), at: Scenario.t0)).reminded)
    }
}

@Suite struct RideSummaryTests {
    let t = Scenario.t0

    @Test func clearSendsTheRideWithTimesPositionsPassengersAndWaiting() throws {
        var machine = Scenario.machine(in: .enRoute)
        _ = machine.handle(.driver(.arrived, at: t))
        _ = machine.handle(.gps(Scenario.sample(t.seconds + 5)))
        _ = machine.handle(.driver(.passengersOnBoard(3), at: t + .milliseconds(45_000)))
        _ = machine.handle(.gps(Scenario.sample(t.seconds + 600, lat: 46.52)))
        let step = machine.handle(.driver(.clear, at: t + .milliseconds(700_000)))
        let ride = try #require(step.ride)
        #expect(step.messages.last == .ride(ride), "after the completed event")
        #expect(step.messages.contains { if case .event(let e) = $0 { e.reason == "completed" } else { false } })
        #expect(ride.job == "J1" && ride.passengers == 3)
        #expect(ride.pickupTime == t + .milliseconds(45_000) && ride.dropTime == t + .milliseconds(700_000))
        #expect(ride.waiting == .seconds(45))
        #expect(ride.pickupFix?.latitude == 46.5 && ride.dropFix?.latitude == 46.52)
        #expect(step.durability == .promised)

        let message = RideMessage(ride, distanceM: 2224.4, unit: "T1", seq: 4, id: "m")
        let json = String(decoding: try JSONEncoder.wire.encode(message), as: UTF8.self)
        #expect(json == """
            {"distance_m":2224,"drop":{"lat":46.52,"lon":7.5,"t":\(t + .milliseconds(700_000))},"id":"m","job":"J1","passengers":3,\
            "pickup":{"lat":46.5,"lon":7.5,"t":\(t + .milliseconds(45_000))},"seq":4,"unit":"T1","waiting_s":45}
            """)
    }

    @Test func withoutFixesOrAMeasuredDistanceThoseFieldsAreLeftOut() throws {
        let ride = RideSummary(job: "J", passengers: 1, pickupTime: 1, dropTime: 2, pickupFix: nil, dropFix: nil)
        let json = String(decoding: try JSONEncoder.wire.encode(RideMessage(ride, distanceM: nil, unit: "T", seq: 1, id: "i")), as: UTF8.self)
        #expect(json == #"{"drop":{"t":2},"id":"i","job":"J","passengers":1,"pickup":{"t":1},"seq":1,"unit":"T"}"#)
        #expect(RideMessage(ride, distanceM: .infinity, unit: "T", seq: 1, id: "i").distanceM == nil)
    }
}

@Suite struct RestoredReminderTests {
    /// A snapshot read back from the disk with a reminder for a job the taxi is not on the way to:
    /// the reminder is dropped and the offer's deadline still re-armed.
    @Test func aReminderThatDoesNotFitTheStateIsDroppedAndTheRestResumes() {
        let offered = Scenario.machine(in: .offered).snapshot
        var snapshot = offered
        snapshot.reminder = Reminder(job: "J1", at: Scenario.t0 - .milliseconds(1))
        var machine = UnitStateMachine(restoring: snapshot)
        let step = machine.handle(.resumed(at: Scenario.t0))
        #expect(machine.snapshot.reminder == nil && step.snapshot?.reminder == nil)
        #expect(!step.reminded)
        #expect(step.timers.contains { if case .start(.offerDeadline(job: "J1"), _) = $0 { true } else { false } })
        #expect(machine.state.name == .offered)
    }
}
