import ControlSocket
import Foundation
import MQTTLink
import TestHarness
import Testing

/// Three real taxiunitd processes and dispatchsim on a real broker, gpsd fed by gpsfake. The scripted
/// drivers answer through the control socket, as `taxiunitctl press` does.
final class Fleet {
    /// Where `Corpus.steadyLog`'s receiver stands (near Des Moines, Iowa).
    static let centre = (lat: 41.5750, lon: -93.7506)
    /// A pickup inside the zone, far enough from the taxis (more than the arrival radius).
    static let pickup = (lat: 41.5778, lon: -93.7471)

    let scratch: ScratchDirectory
    let broker: MosquittoBroker
    let gps: FakeGPS
    let units: [UnitUnderTest]
    let dispatcher: DispatchSimUnderTest
    let recorder: MQTTRecorder

    /// `unitTOML` is appended to every unit's configuration, `dispatchTOML` to dispatchsim's [dispatch].
    init(respondWithinS: Int = 3, unitTOML: String = "", dispatchTOML: String = "") async throws {
        let scratch = try ScratchDirectory("taxiunitd-e2e")
        let broker = try MosquittoBroker(in: scratch)
        // A taxi standing still: every unit reports the same spot, inside zone "Z". (The bu303 logs
        // come out of gpsd 3.22 dated 2005 after their first pass, which the rollover guard drops.)
        let gps = try FakeGPS(log: Corpus.log(Corpus.steadyLog), in: scratch, cycleS: 0.1)
        units = try ["T1", "T2", "T3"].map {
            try UnitUnderTest(unitID: $0, mqttPort: broker.port, gpsdPort: gps.port, in: scratch, extraTOML: unitTOML)
        }
        (self.scratch, self.broker, self.gps) = (scratch, broker, gps)
        recorder = try await MQTTRecorder(port: broker.port, subscribe: ["taxi/test/#"], clientID: "e2e-recorder", persistentSession: true)
        dispatcher = try await DispatchSimUnderTest(
            mqttPort: broker.port, zones: [("Z", DispatchSimUnderTest.square(around: Self.centre.lat, Self.centre.lon))],
            in: scratch, scenarioTOML: "[dispatch]\nrespond_within_s = \(respondWithinS)\nreply_grace_s = 5\n\(dispatchTOML)")
        // Into the zone's queue in this order.
        for (index, unit) in units.enumerated() {
            try await unit.start()
            try await unit.waitForStatus("\(unit.unitID) has a fix") { $0.gps.lastFixTime != nil && $0.broker.connected }
            try press(unit, "duty")
            try await dispatcher.waitForLog("\(unit.unitID) queued", "\(unit.unitID) queued in Z at position \(index + 1)")
        }
    }

    func unit(_ id: String) -> UnitUnderTest { units.first { $0.unitID == id }! }

    func press(_ unit: UnitUnderTest, _ input: String) throws {
        let response = try unit.request(ControlRequest(cmd: .press, input: input))
        guard response.ok else { throw HarnessError("\(unit.unitID) press \(input): \(response.error ?? "refused")") }
    }

    func press(_ unitID: String, _ input: String) throws { try press(unit(unitID), input) }

    func book(_ id: String, meetingTime: Int64? = nil) throws {
        try dispatcher.book(id, lat: Self.pickup.lat, lon: Self.pickup.lon, via: recorder, meetingTime: meetingTime)
    }

    /// Messages on `taxi/test/{unit}/{name}` whose JSON has `job == job`.
    func messages(_ unit: String, _ name: String, job: String? = nil) -> [[String: Any]] {
        recorder.messages(onTopic: "taxi/test/\(unit)/\(name)").compactMap(\.json).filter { job == nil || $0["job"] as? String == job }
    }

    func waitForOffer(_ job: String, to id: String) async throws {
        try await recorder.waitFor("\(job) offered to \(id)") { _ in !messages(id, "job/offer", job: job).isEmpty }
        try await unit(id).waitForStatus("\(id) shows the offer") { $0.state == "offered" }
    }

    func waitForReply(_ job: String, from unit: String, _ reply: String) async throws {
        try await recorder.waitFor("\(unit) replies \(reply) to \(job)") { _ in
            messages(unit, "job/reply", job: job).contains { $0["reply"] as? String == reply }
        }
    }

    func offeredTo(_ job: String) -> [String] {
        ["T1", "T2", "T3"].filter { !messages($0, "job/offer", job: job).isEmpty }
    }

    /// Stops everything and holds every message the units and dispatchsim published to the
    /// contract (docs/schemas).
    func stop() throws -> [String: Any] {
        for unit in units { unit.stop() }
        let stats = try dispatcher.stop()
        let problems = try ContractCheck.problems(in: recorder.messages)
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
        return stats
    }
}

@Suite(.serialized) struct DispatchEndToEndTests {
    @Test func queueOrderRejectAndTimeoutRotateTheOffer() async throws {
        let fleet = try await Fleet()
        // Queue T1 T2 T3: the head gets the first request.
        try fleet.book("R1")
        try await fleet.waitForOffer("R1", to: "T1")
        #expect(fleet.offeredTo("R1") == ["T1"])

        // T1's driver stays silent: after 3 s the unit answers timeout, which counts as a reject:
        // T1 goes to the end (T2 T3 T1) and R1 to the next taxi.
        try await fleet.waitForReply("R1", from: "T1", "timeout")
        try await fleet.dispatcher.waitForLog("T1 at the end of the queue", "T1 queued in Z at position 3")
        try await fleet.waitForOffer("R1", to: "T2")

        // T2 rejects: to the end behind T1 (T3 T1 T2); R1 goes on to T3, which accepts.
        try fleet.press("T2", "reject")
        try await fleet.waitForReply("R1", from: "T2", "reject")
        try await fleet.dispatcher.waitForLog("T2 at the end of the queue", "T2 queued in Z at position 3")
        try await fleet.waitForOffer("R1", to: "T3")
        try fleet.press("T3", "accept")
        try await fleet.dispatcher.waitForLog("R1 assigned", "R1 accept by T3")
        #expect(fleet.offeredTo("R1") == ["T1", "T2", "T3"])

        // The queue is T1 T2: the next request goes to T1, the one after to T2.
        try fleet.book("R2")
        try await fleet.waitForOffer("R2", to: "T1")
        #expect(fleet.offeredTo("R2") == ["T1"])
        try fleet.press("T1", "accept")
        try await fleet.dispatcher.waitForLog("R2 assigned", "R2 accept by T1")
        try fleet.book("R3")
        try await fleet.waitForOffer("R3", to: "T2")

        // T2 refuses and every other taxi is busy: unserved.
        try fleet.press("T2", "reject")
        try await fleet.dispatcher.waitForLog("R3 unserved", "R3 UNSERVED")
        #expect(fleet.offeredTo("R3") == ["T2"])

        let stats = try fleet.stop()
        #expect(stats["accepted"] as? Int == 2)
        #expect(stats["rejected"] as? Int == 2)
        #expect(stats["timed_out"] as? Int == 1)
        #expect(stats["unserved"] as? Int == 1)
        #expect((stats["request_to_assignment_ms"] as? [Int])?.count == 2)
        #expect((stats["offer_to_reply_ms"] as? [Int])?.count == 5)
    }

    @Test func aCancellationReachesTheRightTaxi() async throws {
        let fleet = try await Fleet(respondWithinS: 30)
        try fleet.book("R1")
        try await fleet.waitForOffer("R1", to: "T1")
        try fleet.press("T1", "accept")
        try fleet.book("R2")
        try await fleet.waitForOffer("R2", to: "T2")
        try fleet.press("T2", "accept")
        try await fleet.unit("T2").waitForStatus("T2 en route") { $0.state == "en_route" }
        try await fleet.dispatcher.waitForLog("the dispatcher knows", "R2 accept by T2")

        // Withdrawn after acceptance: only T2 hears of it.
        try fleet.dispatcher.withdraw("R2", via: fleet.recorder)
        try await fleet.recorder.waitFor("cancel to T2") { _ in !fleet.messages("T2", "job/cancel", job: "R2").isEmpty }
        try await fleet.unit("T2").waitForStatus("T2 available again") { $0.state == "available" }
        #expect(try fleet.unit("T1").status().state == "en_route")

        // Withdrawn while still offered: T3 is told and returns to the queue.
        try fleet.book("R3")
        try await fleet.waitForOffer("R3", to: "T3")
        try fleet.dispatcher.withdraw("R3", via: fleet.recorder)
        try await fleet.unit("T3").waitForStatus("T3 available again") { $0.state == "available" }
        try await fleet.recorder.waitFor("cancel to T3") { _ in !fleet.messages("T3", "job/cancel", job: "R3").isEmpty }
        #expect(fleet.messages("T1", "job/cancel").isEmpty)
        #expect(fleet.messages("T3", "job/cancel").map { $0["job"] as? String } == ["R3"])
        #expect(fleet.messages("T2", "job/cancel").map { $0["job"] as? String } == ["R2"])
        let stats = try fleet.stop()
        #expect(stats["cancelled"] as? Int == 2)
    }

    /// dispatchsim's rule for the driver's cancel requests (docs/dispatchsim.md): `other` refused,
    /// `vehicle_problem` confirmed and the request handed on, `passenger_unreachable` confirmed and closed.
    @Test func cancelRequestsAreAnsweredByTheirReason() async throws {
        let fleet = try await Fleet(respondWithinS: 30)
        try fleet.book("R1")
        try await fleet.waitForOffer("R1", to: "T1")
        try fleet.press("T1", "accept")
        try await fleet.dispatcher.waitForLog("the dispatcher knows", "R1 accept by T1")

        try fleet.press("T1", "drop other")
        try await fleet.recorder.waitFor("the refusal to T1") { _ in
            fleet.messages("T1", "job/update", job: "R1").contains { $0["cancel_refused"] as? Bool == true }
        }
        try await fleet.waitForReply("R1", from: "T1", "shown")
        #expect(try fleet.unit("T1").status().state == "en_route")

        try fleet.press("T1", "drop vehicle")
        try await fleet.unit("T1").waitForStatus("T1 dropped R1") { $0.state == "available" }
        try await fleet.waitForOffer("R1", to: "T2")
        try fleet.press("T2", "accept")
        try await fleet.dispatcher.waitForLog("R1 assigned again", "R1 accept by T2")

        try fleet.press("T2", "drop unreachable")
        try await fleet.unit("T2").waitForStatus("T2 dropped R1") { $0.state == "available" }
        #expect(fleet.messages("T1", "job/cancel").map { $0["reason"] as? String } == ["vehicle_problem"])
        #expect(fleet.messages("T2", "job/cancel").map { $0["reason"] as? String } == ["passenger_unreachable"])
        #expect(fleet.offeredTo("R1") == ["T1", "T2"])
        let stats = try fleet.stop()
        #expect(stats["cancelled"] as? Int == 1)
    }

    @Test func aUnitOfflineMidJobStillCompletesItWithNothingLost() async throws {
        let fleet = try await Fleet(respondWithinS: 30)
        try fleet.book("R1")
        try await fleet.waitForOffer("R1", to: "T1")
        try fleet.press("T1", "accept")
        try await fleet.waitForReply("R1", from: "T1", "accept")
        let t1 = fleet.unit("T1")

        // The link goes; the driver carries on with the ride; then the unit loses power.
        fleet.broker.stop()
        try await t1.waitForStatus("T1 offline") { !$0.broker.connected }
        try fleet.press(t1, "arrived")
        try fleet.press(t1, "pob")
        try fleet.press(t1, "clear")
        try await t1.waitForStatus("T1 available, events queued") { $0.state == "available" && $0.outbox.depth > 0 }
        t1.killHard()

        try fleet.broker.start()
        try await t1.start()
        try await fleet.dispatcher.waitForLog("the dispatcher sees the ride end", timeoutS: 30, "T1 finished R1")
        try await fleet.dispatcher.waitForLog("T1 back in the queue", "T1 queued in Z")
        try await t1.waitForStatus("outbox drained") { $0.outbox.depth == 0 }

        // Every event T1 made arrived, in order, once each.
        func firstArrivals() -> [[String: Any]] {
            var seen = Set<String>()
            return fleet.messages("T1", "event").filter { seen.insert($0["id"] as? String ?? "").inserted }
        }
        try await fleet.recorder.waitFor("the ride's events") { _ in
            firstArrivals().compactMap { $0["to"] as? String }.suffix(4) == ["en_route", "at_pickup", "on_board", "available"]
        }
        let firsts = firstArrivals()
        #expect(firsts.map { $0["seq"] as? Int } == Array(1...firsts.count).map { $0 })
        let stats = try fleet.stop()
        #expect(stats["completed"] as? Int == 1)
    }

    /// A broker node that dies takes what was queued on it along: here the broker dies and comes
    /// back without its sessions while T1 is frozen, so the offer to T1 reaches nobody. T1 reconnects
    /// (a newer `conn`) without having shown it, and dispatchsim sends it again at once instead of
    /// waiting out the minute's answer window.
    @Test func anOfferLostWithTheBrokerIsSentAgainWhenTheUnitReconnects() async throws {
        let fleet = try await Fleet(respondWithinS: 60)
        let t1 = fleet.unit("T1")
        let frozen = try #require(t1.process)
        frozen.signalLeader(SIGSTOP)
        fleet.broker.killHard()
        let killed = ContinuousClock.now
        try fleet.broker.start()
        // T2 back on the new broker and seen by the recorder: the booking can go through. Both may
        // reconnect while start() still polls the port, so what counts is arriving after the kill.
        try await fleet.recorder.waitFor("T2 back") { _ in
            fleet.recorder.arrivals.contains { $0.message.topic == "taxi/test/T2/status" && $0.at > killed }
        }
        try await waitUntil("dispatchsim back", timeoutS: 20) { fleet.dispatcher.lines.count { $0.contains("connected to the broker") } >= 2 }
        try fleet.book("R1")
        try await fleet.dispatcher.waitForLog("R1 offered to T1", "R1 offered to T1")

        frozen.signalLeader(SIGCONT)
        let thawed = ContinuousClock.now
        try await t1.waitForStatus("T1 shows R1", timeoutS: 30) { $0.state == "offered" && $0.job?.id == "R1" }
        #expect(ContinuousClock.now - thawed < .seconds(30), "well within the 65 s of the answer window and its grace")
        #expect(fleet.dispatcher.lines.contains { $0.contains("R1 offered again to T1") })
        try fleet.press("T1", "accept")
        try await fleet.waitForReply("R1", from: "T1", "accept")
        let stats = try fleet.stop()
        #expect(stats["offers_resent"] as? Int == 1 && stats["accepted"] as? Int == 1)
    }

    /// docs/dispatchsim.md, "Pre-bookings" and "Next jobs": a reservation two hours ahead is offered
    /// at once and held by the taxi that accepts it; with every taxi busy, a request goes as the next
    /// job to the taxi whose driver said it is clear soon, and starts when that ride is cleared.
    @Test func aPreBookingIsHeldAndANextJobIsStackedOnATaxiClearSoon() async throws {
        let fleet = try await Fleet(
            respondWithinS: 30, unitTOML: "[job]\nreservation_lead_min = 30\n", dispatchTOML: "prebook_lead_s = 1800\n")
        let meeting = Int64(Date().timeIntervalSince1970 * 1000) + 2 * 3_600_000
        try fleet.book("P1", meetingTime: meeting)
        try await fleet.waitForOffer("P1", to: "T1")
        #expect(fleet.messages("T1", "job/offer", job: "P1").first?["meeting_time"] as? Int64 == meeting)
        try fleet.press("T1", "accept")
        try await fleet.unit("T1").waitForStatus("T1 holds P1 and is free") { status in
            status.state == "available" && status.upcoming?.map(\.id) == ["P1"]
        }
        try await fleet.dispatcher.waitForLog("P1 held", "P1 accept by T1")
        #expect(fleet.dispatcher.lines.contains { $0.contains("held as pre-booking") })

        // Queue T2 T3 T1: every taxi takes a job, T2's passenger gets on board.
        for (job, unit) in [("R1", "T2"), ("R2", "T3"), ("R3", "T1")] {
            try fleet.book(job)
            try await fleet.waitForOffer(job, to: unit)
            try fleet.press(unit, "accept")
            try await fleet.dispatcher.waitForLog("\(job) assigned", "\(job) accept by \(unit)")
        }
        try fleet.press("T2", "arrived")
        try fleet.press("T2", "pob")
        try await fleet.unit("T2").waitForStatus("T2 on board") { $0.state == "on_board" }
        try fleet.press("T2", "soon 5")
        try await fleet.dispatcher.waitForLog("T2 clear soon", "T2 clear in 5 min (R1)")

        try fleet.book("R4")
        try await fleet.recorder.waitFor("R4 offered to T2 as its next job") { _ in
            fleet.messages("T2", "job/offer", job: "R4").first?["next"] as? Bool == true
        }
        try await fleet.unit("T2").waitForStatus("T2 shows R4 beside the ride") { $0.state == "on_board" }
        try fleet.press("T2", "accept")
        try await fleet.unit("T2").waitForStatus("R4 stacked on T2") { $0.next?.id == "R4" }
        try await fleet.dispatcher.waitForLog("R4 held", "held as next job")

        try fleet.press("T2", "clear")
        try await fleet.unit("T2").waitForStatus("T2 on its way to R4") { $0.state == "en_route" && $0.job?.id == "R4" }
        try await fleet.dispatcher.waitForLog("R4 started", "T2 started R4 (next)")
        #expect(fleet.offeredTo("R4") == ["T2"])
        let stats = try fleet.stop()
        #expect(stats["pre_booking_offers"] as? Int == 1)
        #expect(stats["next_offers"] as? Int == 1)
        #expect(stats["completed"] as? Int == 1)
    }

    /// docs/dispatchsim.md, "Pre-bookings planned again": the taxi holding a pre-booking goes away
    /// (its process killed: the broker publishes its last will) for longer than `prebook_offline_s`;
    /// dispatchsim offers the pre-booking to the next taxi and cancels it on the first, which gets
    /// the cancel from its session when it is back.
    @Test func aPreBookingOfATaxiGoneOfflineGoesToAnotherTaxi() async throws {
        let fleet = try await Fleet(
            respondWithinS: 30, unitTOML: "[job]\nreservation_lead_min = 30\n",
            dispatchTOML: "prebook_lead_s = 1800\nprebook_offline_s = 2\n")
        let meeting = Int64(Date().timeIntervalSince1970 * 1000) + 2 * 3_600_000
        try fleet.book("P1", meetingTime: meeting)
        try await fleet.waitForOffer("P1", to: "T1")
        try fleet.press("T1", "accept")
        let t1 = fleet.unit("T1")
        try await t1.waitForStatus("T1 holds P1") { $0.state == "available" && $0.upcoming?.map(\.id) == ["P1"] }
        try await fleet.dispatcher.waitForLog("P1 held by T1", "held as pre-booking")

        t1.killHard()
        try await fleet.dispatcher.waitForLog("T1 offline", "T1 offline")
        try await fleet.dispatcher.waitForLog("P1 planned again", "P1 no longer held by T1: planned again")
        try await fleet.waitForOffer("P1", to: "T2")
        #expect(fleet.messages("T2", "job/offer", job: "P1").first?["meeting_time"] as? Int64 == meeting)
        try fleet.press("T2", "accept")
        try await fleet.unit("T2").waitForStatus("T2 holds P1") { $0.state == "available" && $0.upcoming?.map(\.id) == ["P1"] }

        try await t1.start()
        try await t1.waitForStatus("T1 gave P1 up") { $0.broker.connected && ($0.upcoming ?? []).isEmpty }
        #expect(fleet.messages("T1", "job/cancel", job: "P1").map { $0["reason"] as? String } == ["taxi_offline"])
        #expect(fleet.offeredTo("P1") == ["T1", "T2"])
        let stats = try fleet.stop()
        #expect(stats["held_replanned"] as? Int == 1)
        #expect(stats["pre_bookings_held"] as? Int == 2)
    }

    @Test func sosIsAcknowledged() async throws {
        let fleet = try await Fleet()
        try fleet.press("T2", "sos")
        try await fleet.recorder.waitFor("the ack") { _ in !fleet.messages("T2", "sos/ack").isEmpty }
        let sos = try #require(fleet.messages("T2", "sos").first)
        let ack = try #require(fleet.messages("T2", "sos/ack").first)
        #expect(ack["id"] as? String == sos["id"] as? String)
        #expect(fleet.messages("T1", "sos/ack").isEmpty && fleet.messages("T3", "sos/ack").isEmpty)
        try await fleet.dispatcher.waitForLog("the alarm in the log", "SOS from T2")
        let stats = try fleet.stop()
        #expect(stats["sos"] as? Int == 1)
    }
}
