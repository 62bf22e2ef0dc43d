import DispatchCore
import Foundation
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
        // T1 is still on board, and its list is still full: the next pre-booking goes to T2, which
        // only rejected one, and to T1 again once its state changed.
        h.reply("T2", "P1", .reject)
        #expect(offers(h.request("P2", at: inA, meetingTime: h.now + Int64(Self.leadS * 2) * 1000)) == ["P2→T2"])
        h.reply("T2", "P2", .reject)
        h.status("T1", "en_route", zone: "A", job: "J3")
        #expect(offers(h.request("P3", at: inA, meetingTime: h.now + Int64(Self.leadS * 2) * 1000)) == ["P3→T1"])
    }

    @Test func aBusyAnswerNamingAReservationMovesTheRequestAndKeepsTheTaxiQueued() {
        var h = harness()
        h.queue("T1", "T2")
        #expect(offers(h.request("R1", at: inA)) == ["R1→T1"])
        let moved = busy(&h, "T1", "R1", reason: "reservation P9 at \(h.now + 3_600_000)")
        #expect(offers(moved) == ["R1→T2"])
        #expect(h.dispatcher.queue(of: "A") == ["T1"])
        // It keeps its place but is offered no ordinary job while the pre-booking is in the way
        // (in a rush every request would try it, faster than a unit takes messages in).
        #expect(offers(h.request("R2", at: inA)).isEmpty)
        #expect(h.dispatcher.queue(of: "A") == ["T1"])
        // Once its state changed (the pre-booking driven), it is asked again; any other busy takes
        // the taxi out of the queues until its status says available.
        h.event("T1", .available, .enRoute, job: "P9")
        h.event("T1", .onBoard, .available, job: "P9")
        #expect(offers(h.request("R3", at: inA)) == ["R3→T1"])
        busy(&h, "T1", "R3", reason: "offer R1 awaits an answer")
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
        #expect(h.dispatcher.stats.nextJobsHeld == 1)
        // Shown beside the ride, without an `offered` event: its round trip is kept one by one.
        #expect(h.dispatcher.stats.besideOfferReplies.map { "\($0.job)→\($0.unit) \($0.reply.rawValue)" } == ["R2→T1 accept"])
        #expect(h.dispatcher.stats.offerToReplyTransitMs.isEmpty)
        // One next job at a time.
        #expect(offers(h.request("R3", at: inA)).isEmpty)
        // The ride ends and the unit starts the stacked job at once: never queued in between.
        h.now += 10
        h.event("T1", .onBoard, .available, job: "J0")
        #expect(h.dispatcher.queue(of: "A").isEmpty)
        h.now += 1
        let started = h.feed(.report(unit: "T1", .event(id: h.id(), Transition(t: UnitTime(milliseconds: h.now), from: .available, to: .enRoute, job: "R2", reason: "next"))))
        #expect(logs(started).contains("T1 started R2 (next)"))
        #expect(h.dispatcher.stats.nextJobsStarted == 1)
        h.now += 10
        h.event("T1", .onBoard, .available, job: "R2")
        #expect(h.dispatcher.queue(of: "A") == ["T1"])
        // Clear soon was about the ride that ended: no next job without a new word.
        h.status("T1", "on_board", zone: "A", job: "J5")
        #expect(offers(h.request("R4", at: inA)).isEmpty)
    }
}

@Suite struct BesideOfferRefusalTests {
    @Test func aTaxiThatRefusedAnOfferBesideItsRideIsNotAskedAgainUntilItsStateChanges() {
        var h = Harness()
        h.status("T1", "on_board", zone: "A", job: "J0")
        h.now += 10
        let soon: SoonClearEventMessage = decoded(
            #"{"id":"s1","unit":"T1","seq":1,"type":"soon_clear","t":\#(h.now),"job":"J0","clear_in_min":3}"#)
        h.feed(.report(unit: "T1", .soonClear(id: soon.id, soon)))
        #expect(offers(h.request("R1", at: inA)) == ["R1→T1"])
        h.now += 10
        let refused = h.feed(.report(unit: "T1", .reply(id: h.id(), JobReply(
            job: "R1", reply: .busy, reason: "reservation P1 at \(h.now + 60_000)", t: UnitTime(milliseconds: h.now)))))
        #expect(logs(refused).contains("R1 UNSERVED"))
        // A rush: every request would go to T1 again and be refused the same way.
        #expect(offers(h.request("R2", at: inA)).isEmpty)
        // The ride ends, the next one starts: T1 may be asked again once it says clear soon.
        h.event("T1", .onBoard, .available, job: "J0")
        h.status("T1", "on_board", zone: "A", job: "J1")
        h.now += 10
        let again: SoonClearEventMessage = decoded(
            #"{"id":"s2","unit":"T1","seq":2,"type":"soon_clear","t":\#(h.now),"job":"J1","clear_in_min":3}"#)
        h.feed(.report(unit: "T1", .soonClear(id: again.id, again)))
        #expect(offers(h.request("R3", at: inA)) == ["R3→T1"])
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

/// A held pre-booking whose taxi can no longer serve it is offered to another taxi before its
/// window (docs/dispatchsim.md, "Pre-bookings planned again").
@Suite struct PreBookingReplanTests {
    static let leadS = 1800
    static let offlineS = 120

    /// T1 holds P1 (meeting two leads ahead); T2 waits behind it in zone A.
    func held() -> Harness {
        var h = Harness(dispatcher: Dispatcher(
            zones: ZoneMap(zones: [squareA, squareB, squareC]),
            settings: DispatchSettings(respondWithinS: 30, replyGraceS: 5, preBookingLeadS: Self.leadS, preBookingOfflineS: Self.offlineS)))
        h.queue("T1", "T2")
        h.request("P1", at: inA, meetingTime: h.now + Int64(Self.leadS * 2) * 1000)
        h.reply("T1", "P1", .accept)
        return h
    }

    func event(_ h: inout Harness, _ unit: String, _ json: String) throws -> [DispatchAction] {
        h.now += 10
        let payload = #"{"id":"\#(h.id())","seq":1,"unit":"\#(unit)","t":\#(h.now),\#(json)}"#
        let report = try #require(try UnitReport.decode(.event, Data(payload.utf8)))
        return h.feed(.report(unit: unit, report))
    }

    func status(_ h: inout Harness, _ unit: String, online: Bool = true, upcoming: [String], t: Int64? = nil) -> [DispatchAction] {
        h.now += 10
        let list = upcoming.map { #"{"job":"\#($0)","meeting_time":\#(h.now + 3_600_000)}"# }.joined(separator: ",")
        let upcomingField = upcoming.isEmpty ? "" : #","upcoming":[\#(list)]"#
        let status: StatusMessage = decoded(
            #"{"online":\#(online),"unit":"\#(unit)","state":"available","zone":"A","seats_left":4,"t":\#(t ?? h.now)\#(upcomingField)}"#)
        return h.feed(.report(unit: unit, .status(status)))
    }

    func cancelReasons(_ actions: [DispatchAction]) -> [String] {
        actions.compactMap { if case .send(let unit, .cancel(let cancel)) = $0 { "\(cancel.job)→\(unit): \(cancel.reason ?? "")" } else { nil } }
    }

    @Test func itIsHeldAndCountedOnce() {
        let h = held()
        #expect(h.dispatcher.stats.preBookingsHeld == 1)
        #expect(h.dispatcher.heldJobs == 1)
    }

    @Test func theDriverLoggingOutGivesItToAnotherTaxi() throws {
        var h = held()
        let actions = try event(&h, "T1", #""driver":"D1","login_t":1000,"type":"logout""#)
        #expect(cancelReasons(actions) == ["P1→T1: driver_logged_out"])
        #expect(offers(actions) == ["P1→T2"])
        h.reply("T2", "P1", .accept)
        #expect(h.dispatcher.stats.heldReplanned == 1)
        #expect(h.dispatcher.stats.preBookingsHeld == 2)
        // T1 never gets it back, and its start of it is not T1's job.
        #expect(offers(h.request("R2", at: inA)) == ["R2→T1"])
    }

    @Test func aStatusThatNoLongerListsItGivesItToAnotherTaxi() {
        var h = held()
        let accepted = h.now
        // A status made before the accept says nothing about it; one that lists it keeps it.
        #expect(offers(status(&h, "T1", upcoming: [], t: accepted - 5)).isEmpty)
        #expect(offers(status(&h, "T1", upcoming: ["P1"])).isEmpty)
        let dropped = status(&h, "T1", upcoming: [])
        #expect(offers(dropped) == ["P1→T2"])
        #expect(cancels(dropped).isEmpty, "the unit does not hold it")
        #expect(logs(dropped).contains("T1 no longer lists P1"))
    }

    @Test func theDriversCancelRequestIsConfirmedAndItGoesToAnotherTaxi() throws {
        var h = held()
        let actions = try event(&h, "T1", #""job":"P1","reason":"other","state":"available","type":"cancel_request""#)
        #expect(cancelReasons(actions) == ["P1→T1: other"])
        #expect(offers(actions) == ["P1→T2"])
        #expect(h.dispatcher.stats.cancelled == 0, "the passenger still travels")
    }

    @Test func aTaxiOfflineLongerThanAllowedGivesItToAnotherTaxi() {
        var h = held()
        let wentAway = h.feed(.report(unit: "T1", .offline(conn: nil)))
        #expect(wentAway.contains(.startTimer(.holderOffline(unit: "T1"), at: h.now + Int64(Self.offlineS) * 1000)))
        // Back in time: nothing moves.
        #expect(status(&h, "T1", upcoming: ["P1"]).contains(.cancelTimer(.holderOffline(unit: "T1"))))
        #expect(offers(h.feed(.timerFired(.holderOffline(unit: "T1")))).isEmpty)
        // Away again, and for too long.
        h.feed(.report(unit: "T1", .offline(conn: nil)))
        h.now += Int64(Self.offlineS) * 1000
        let actions = h.feed(.timerFired(.holderOffline(unit: "T1")))
        #expect(cancelReasons(actions) == ["P1→T1: taxi_offline"])
        #expect(offers(actions) == ["P1→T2"])
    }

    @Test func aTaxiWithoutPreBookingsGoingOfflineStartsNoTimer() {
        var h = held()
        #expect(!h.feed(.report(unit: "T2", .offline(conn: nil))).contains { if case .startTimer = $0 { true } else { false } })
    }

    @Test func pastTheLeadItIsOfferedAsAnOrdinaryReservation() throws {
        var h = held()
        // The meeting is now within the lead: the taxi that takes it is busy with it at once.
        h.now += Int64(Self.leadS * 2 - 300) * 1000
        let actions = try event(&h, "T1", #""driver":"D1","login_t":1000,"type":"logout""#)
        #expect(offers(actions) == ["P1→T2"])
        #expect(!logs(h.reply("T2", "P1", .accept)).contains("held as"))
        #expect(h.dispatcher.heldJobs == 0)
        #expect(!h.dispatcher.queue(of: "A").contains("T2"))
    }

    @Test func startsAreCountedByKind() {
        var h = held()
        h.now += 10
        h.feed(.report(unit: "T1", .event(id: h.id(), Transition(t: UnitTime(milliseconds: h.now), from: .available, to: .enRoute, job: "P1", reason: "reservation"))))
        #expect(h.dispatcher.stats.preBookingsStarted == 1)
        #expect(h.dispatcher.stats.nextJobsStarted == 0)
        #expect(h.dispatcher.heldJobs == 0)
        // Started, it is T1's job: a status without it in the list changes nothing.
        #expect(offers(status(&h, "T1", upcoming: [])).isEmpty)
    }
}

@Suite struct GeneratorWindowTests {
    @Test func aGeneratorStopsAtItsEndAndTwoInOneZoneMakeDistinctIds() throws {
        let steady = ZoneDemand(zone: "A", rate: .every(seconds: 10))
        let rush = ZoneDemand(zone: "A", rate: .every(seconds: 1), firstAtS: 20, untilS: 25)
        let inputs = try RequestSchedule.generate([steady, rush], zones: ZoneMap(zones: [squareA]), durationS: 60, seed: 3)
        let ids = inputs.compactMap { if case .request(let request) = $0.input { request.id } else { nil } }
        #expect(ids.count == 6 + 5)
        #expect(Set(ids).count == ids.count)
        #expect(ids.filter { $0.hasPrefix("A-g2-") }.count == 5)
        #expect(inputs.filter { if case .request(let r) = $0.input { r.id.hasPrefix("A-g2-") } else { false } }.allSatisfy { $0.atMs >= 20_000 && $0.atMs < 25_000 })
    }
}
