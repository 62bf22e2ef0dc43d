import DispatchCore
import TaxiProtocol
import Testing

/// Pre-bookings (offered at once, held by the taxi until its `en_route`) and next jobs stacked on
/// taxis on board that will be clear soon (docs/dispatchsim.md, "Pre-bookings and next jobs").
@Suite struct PreBookingDispatchTests {
    static let leadS = 1800

    func harness() -> Harness {
        Harness(dispatcher: Dispatcher(
            zones: ZoneMap(zones: [squareA, squareB, squareC]),
            settings: DispatchSettings(respondWithinS: 30, replyGraceS: 5, preBookingLeadS: Self.leadS)))
    }

    func offerSent(_ actions: [DispatchAction]) -> JobOffer? {
        actions.lazy.compactMap { if case .send(_, .offer(let offer)) = $0 { offer } else { nil } }.first
    }

    func busy(_ h: inout Harness, _ unit: String, _ job: String, reason: String) -> [DispatchAction] {
        h.now += 10
        return h.feed(.report(unit: unit, .reply(id: h.id(), JobReply(job: job, reply: .busy, reason: reason, t: UnitTime(milliseconds: h.now)))))
    }

    @Test func aPreBookingIsOfferedAtOnceHeldByTheTaxiAndAssignedWhenItStarts() {
        var h = harness()
        h.queue("T1")
        let meeting = h.now + Int64(Self.leadS + 600) * 1000
        let offered = h.request("P1", at: inA, meetingTime: meeting)
        #expect(offers(offered) == ["P1→T1"])
        #expect(offerSent(offered)?.meetingTime == meeting)
        #expect(offerSent(offered)?.next == nil)
        #expect(!offered.contains { if case .startTimer(.reservation, _) = $0 { true } else { false } })
        let accepted = h.reply("T1", "P1", .accept)
        #expect(logs(accepted).contains("held as pre-booking"))
        // The unit answers a redelivered offer again: no news, and no cancel.
        #expect(cancels(h.reply("T1", "P1", .accept)).isEmpty)
        // The taxi goes on serving the queue while it holds the pre-booking.
        #expect(h.dispatcher.queue(of: "A") == ["T1"])
        #expect(offers(h.request("R2", at: inA)) == ["R2→T1"])
        h.reply("T1", "R2", .reject)
        #expect(h.dispatcher.stats.preBookingOffers == 1)
        // The window opens: the unit starts it on its own.
        h.now += 10
        let started = h.feed(.report(unit: "T1", .event(id: h.id(), Transition(t: UnitTime(milliseconds: h.now), from: .available, to: .enRoute, job: "P1", reason: "reservation"))))
        #expect(logs(started).contains("T1 started P1 (reservation)"))
        #expect(h.dispatcher.queue(of: "A").isEmpty)
        h.now += 10
        h.event("T1", .onBoard, .available, job: "P1")
        #expect(h.dispatcher.stats.completed == 1)
    }

    @Test func aReservationWithinTheLeadIsAnOrdinaryReservation() {
        var h = harness()
        h.queue("T1")
        let actions = h.request("R1", at: inA, meetingTime: h.now + Int64(Self.leadS - 60) * 1000)
        #expect(offers(actions).isEmpty)
        #expect(actions.contains { if case .startTimer(.reservation(request: "R1"), _) = $0 { true } else { false } })
    }

    @Test func withNoFreeTaxiAPreBookingGoesToABusyOneAndAWithdrawalCancelsIt() {
        var h = harness()
        h.status("T2", "on_board", zone: "B", job: "J0")
        h.status("T1", "en_route", zone: "A", job: "J1")
        let offered = h.request("P1", at: inA, meetingTime: h.now + Int64(Self.leadS * 2) * 1000)
        #expect(offers(offered) == ["P1→T1"])
        h.reply("T1", "P1", .accept)
        // Accepting it does not make the busy taxi's job its own, nor queue it.
        #expect(h.dispatcher.queue(of: "A").isEmpty)
        #expect(cancels(h.feed(.withdraw(request: "P1"))) == ["P1→T1"])
        #expect(h.dispatcher.stats.cancelled == 1)
    }

    @Test func aPreBookingRefusedBusyGoesToTheNextTaxiAndTheRefuserStaysAsItIs() {
        var h = harness()
        h.status("T1", "on_board", zone: "A", job: "J1")
        h.status("T2", "en_route", zone: "A", job: "J2")
        #expect(offers(h.request("P1", at: inA, meetingTime: h.now + Int64(Self.leadS * 2) * 1000)) == ["P1→T1"])
        #expect(offers(busy(&h, "T1", "P1", reason: "pre-bookings full (8)")) == ["P1→T2"])
        // T1 is still on board: a second pre-booking may go to it.
        h.reply("T2", "P1", .reject)
        #expect(offers(h.request("P2", at: inA, meetingTime: h.now + Int64(Self.leadS * 2) * 1000)) == ["P2→T1"])
    }

    @Test func aBusyAnswerNamingAReservationMovesTheRequestAndKeepsTheTaxiQueued() {
        var h = harness()
        h.queue("T1", "T2")
        #expect(offers(h.request("R1", at: inA)) == ["R1→T1"])
        let moved = busy(&h, "T1", "R1", reason: "reservation P9 at \(h.now + 3_600_000)")
        #expect(offers(moved) == ["R1→T2"])
        #expect(h.dispatcher.queue(of: "A") == ["T1"])
        // Any other busy takes the taxi out of the queues until its status says available.
        #expect(offers(h.request("R2", at: inA)) == ["R2→T1"])
        busy(&h, "T1", "R2", reason: "offer R1 awaits an answer")
        #expect(!h.dispatcher.queue(of: "A").contains("T1"))
    }

    @Test func aTaxiClearSoonIsOfferedANextJobThatStartsWhenTheRideEnds() {
        var h = harness()
        h.status("T1", "on_board", zone: "A", job: "J0")
        // On board without a word from the driver: nobody to offer to.
        #expect(offers(h.request("R1", at: inA)).isEmpty)
        #expect(h.dispatcher.stats.unserved == 1)
        h.now += 10
        let soon: SoonClearEventMessage = decoded(
            #"{"id":"s1","unit":"T1","seq":1,"type":"soon_clear","t":\#(h.now),"job":"J0","clear_in_min":3}"#)
        h.feed(.report(unit: "T1", .soonClear(id: soon.id, soon)))
        let offered = h.request("R2", at: inB)
        #expect(offers(offered) == ["R2→T1"])
        #expect(offerSent(offered)?.next == true)
        #expect(logs(h.reply("T1", "R2", .accept)).contains("held as next job"))
        #expect(h.dispatcher.stats.nextOffers == 1)
        // One next job at a time.
        #expect(offers(h.request("R3", at: inA)).isEmpty)
        // The ride ends and the unit starts the stacked job at once: never queued in between.
        h.now += 10
        h.event("T1", .onBoard, .available, job: "J0")
        #expect(h.dispatcher.queue(of: "A").isEmpty)
        h.now += 1
        let started = h.feed(.report(unit: "T1", .event(id: h.id(), Transition(t: UnitTime(milliseconds: h.now), from: .available, to: .enRoute, job: "R2", reason: "next"))))
        #expect(logs(started).contains("T1 started R2 (next)"))
        h.now += 10
        h.event("T1", .onBoard, .available, job: "R2")
        #expect(h.dispatcher.queue(of: "A") == ["T1"])
        // Clear soon was about the ride that ended: no next job without a new word.
        h.status("T1", "on_board", zone: "A", job: "J5")
        #expect(offers(h.request("R4", at: inA)).isEmpty)
    }
}

@Suite struct GeneratedPreBookingTests {
    @Test func everyNthGeneratedRequestIsAReservationAheadOfIt() throws {
        let start: Int64 = 5_000_000
        let demand = ZoneDemand(zone: "A", rate: .every(seconds: 60), preBookings: PreBookingShare(every: 3, aheadS: 3600))
        let inputs = try RequestSchedule.generate([demand], zones: ZoneMap(zones: [squareA]), durationS: 600, seed: 7, startMs: start)
        #expect(inputs.count == 10)
        for (index, input) in inputs.enumerated() {
            guard case .request(let request) = input.input else { Issue.record("not a request: \(input)"); continue }
            let expected: Int64? = (index + 1) % 3 == 0 ? start + input.atMs + 3_600_000 : nil
            #expect(request.meetingTime == expected, "\(request.id)")
        }
    }
}
