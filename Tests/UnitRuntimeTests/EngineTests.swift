import ControlSocket
import CSQLite
import Foundation
import LocalCache
import TaxiProtocol
import TestHarness
import Testing
import UnitCore
@testable import UnitRuntime

/// The engine and its outbox pump in-process: a real SQLite file, a recording broker, scripted
/// fixes. Fast and deterministic; the same behaviour is also held by the real-parts tests
/// (IntegrationTests, EndToEndTests) against mosquitto, gpsd and the daemon binary.
@Suite(.serialized) struct EngineTests {
    static let offer = #"{"job":"J1","pickup":{"lat":46.948,"lon":7.4474,"address":"Bahnhofplatz 1"},"respond_within_s":60}"#

    /// Where each message went, in the order handed to the broker.
    static func topics(_ published: [RecordingBroker.Publish], below base: String) -> [String] {
        published.map { String($0.topic.dropFirst(base.count)) }
    }

    @Test func aStoredReplyGoesToTheBrokerBeforeTheStatus() async throws {
        let unit = try EngineUnderTest(prepare: storeWithAnOpenShift())
        try await unit.start()
        unit.broker.acceptConnection()
        try await unit.press("duty")
        unit.broker.receive(unit.topicBase + "job/offer", Self.offer)
        try await unit.eventually("the offer is shown") { unit.published(on: "event").count == 2 }
        // The offer's own status follows its event: counted before the press, never after it.
        try await unit.eventually("the offered status") { unit.published(on: "status").last?.json["state"] as? String == "offered" }
        let before = unit.broker.published.count
        let answer = try await unit.press("accept")
        #expect(answer.message?.contains("accepted, sent") == true)
        let after = Self.topics(Array(unit.broker.published.dropFirst(before)), below: unit.topicBase)
        // The reply, then the transition it causes, then the retained status.
        #expect(after.prefix(3) == ["job/reply", "event", "status"], "\(after)")
        #expect(unit.published(on: "job/reply").first?.json["reply"] as? String == "accept")
        await unit.stop()
    }

    /// While the unit waits for the broker to acknowledge its offline status, a fix or a press that
    /// changes the status is still stored but publishes no online status after the offline one.
    @Test func nothingReplacesTheOfflineStatusWhileTheUnitStops() async throws {
        let unit = try EngineUnderTest()
        try await unit.start()
        unit.broker.acceptConnection()
        unit.fixes.fix(latitude: 46.05, longitude: 7.05)
        try await unit.eventually("the online status") { unit.published(on: "status").last?.json["online"] as? Bool == true }
        unit.engine.inbox.post(.shutdownRequested)
        try await unit.eventually("the offline status") { unit.published(on: "status").last?.json["online"] as? Bool == false }
        let offline = try #require(unit.published(on: "status").last)
        unit.fixes.fix(latitude: 46.06, longitude: 7.06)
        try await unit.press("duty")
        #expect(try await unit.status().state == "available", "the press is still handled")
        #expect(unit.published(on: "status").last?.json["online"] as? Bool == false, "\(unit.published(on: "status").map(\.json))")
        unit.broker.acknowledge(offline)
        await unit.stop()
    }

    @Test func zoneChangesArePublishedOnEvent() async throws {
        let unit = try EngineUnderTest("""
            [[zones]]
            id = "rank-1"
            polygon = [[46.0, 7.0], [46.0, 7.1], [46.1, 7.1], [46.1, 7.0]]
            """)
        try await unit.start()
        unit.broker.acceptConnection()
        unit.fixes.fix(latitude: 46.05, longitude: 7.05)
        try await unit.eventually("the zone event is published") { unit.published(on: "event").contains { $0.json["type"] as? String == "zone" } }
        let entered = try #require(unit.published(on: "event").first { $0.json["type"] as? String == "zone" }).json
        #expect(entered["zone"] as? String == "rank-1")
        #expect(entered["zone_left"] == nil)
        #expect(entered["unit"] as? String == "T1" && entered["id"] is String && entered["seq"] is Int)
        try await unit.eventually("the retained status names the zone") {
            unit.published(on: "status").last?.json["zone"] as? String == "rank-1"
        }
        // Far outside, beyond the hysteresis: the taxi left every zone.
        unit.fixes.fix(latitude: 46.5, longitude: 7.5)
        try await unit.eventually("leaving is published") {
            unit.published(on: "event").contains { $0.json["type"] as? String == "zone" && $0.json["zone_left"] as? String == "rank-1" }
        }
        await unit.stop()
    }

    /// The ride summary leaves through the outbox after the `completed` event, with the distance
    /// measured over the stored fixes in the same commit as the ride's row.
    @Test func clearSendsTheRideWithTheDistanceOfTheStoredRide() async throws {
        let unit = try EngineUnderTest()
        try await unit.start()
        unit.broker.acceptConnection()
        try await unit.press("duty")
        unit.fixes.fix(latitude: 46.90, longitude: 7.40)
        try await unit.eventually("the first fix") { try await unit.status().gps.lastFixTime != nil }
        unit.broker.receive(unit.topicBase + "job/offer", Self.offer)
        try await unit.eventually("the offer") { try await unit.status().state == "offered" }
        try await unit.press("accept")
        try await unit.press("arrived")
        try await unit.press("pob 2")
        // About 1.1 km north in two steps.
        for latitude in [46.905, 46.91] {
            let before = try await unit.status().gps.lastFixTime
            try await Task.sleep(for: .milliseconds(20))
            unit.fixes.fix(latitude: latitude, longitude: 7.40)
            try await unit.eventually("the fix at \(latitude)") { try await unit.status().gps.lastFixTime != before }
        }
        let answer = try await unit.press("clear")
        #expect(answer.ok)
        try await unit.eventually("the ride is published") { !unit.published(on: "ride").isEmpty }
        let ride = try #require(unit.published(on: "ride").first).json
        let stored = try #require(try unit.store.rides().last)
        #expect(ride["job"] as? String == "J1" && ride["passengers"] as? Int == 2)
        #expect(ride["distance_m"] as? Int == Int(stored.distanceM.rounded()))
        #expect(stored.distanceM > 1000 && stored.distanceM < 1200, "\(stored.distanceM)")
        #expect(ride["unit"] as? String == "T1" && ride["id"] is String && ride["seq"] as? Int == 1)
        let order = Self.topics(unit.broker.published, below: unit.topicBase)
        let completed = try #require(unit.broker.published.lastIndex { $0.topic == unit.topicBase + "event" })
        #expect(completed < (order.firstIndex(of: "ride") ?? -1), "\(order)")
        await unit.stop()
    }

    /// A ride without any fix: nothing was measured, and the message does not pretend it was.
    @Test func aRideWithoutFixesHasNoDistance() async throws {
        let unit = try EngineUnderTest()
        try await unit.start()
        unit.broker.acceptConnection()
        try await unit.press("duty")
        unit.broker.receive(unit.topicBase + "job/offer", Self.offer)
        try await unit.eventually("the offer") { try await unit.status().state == "offered" }
        for input in ["accept", "arrived", "pob", "clear"] { try await unit.press(input) }
        try await unit.eventually("the ride is published") { !unit.published(on: "ride").isEmpty }
        let ride = try #require(unit.published(on: "ride").first).json
        #expect(ride["distance_m"] == nil)
        #expect((ride["pickup"] as? [String: Any])?["lat"] == nil && (ride["pickup"] as? [String: Any])?["t"] is Int)
        #expect(try unit.store.rides().last?.distanceM == 0, "the local history keeps its 0")
        await unit.stop()
    }

    /// After an outage everything stored goes out in lane order: alarm, reply, event, the newest
    /// fix, then the history.
    @Test func afterAnOutageTheLanesGoOutInOrder() async throws {
        let unit = try EngineUnderTest("[mqtt]\nmax_inflight = 100\n[store]\nposition_commit_ms = 0\n")
        try await unit.start()
        unit.broker.acceptConnection()
        try await unit.press("duty")
        unit.broker.receive(unit.topicBase + "job/offer", Self.offer)
        try await unit.eventually("the offer is shown") { try await unit.status().state == "offered" }
        unit.broker.loseConnection()
        for index in 0..<5 { unit.fixes.fix(latitude: 46.5 + Double(index) * 0.001, longitude: 7.5) }
        try await unit.eventually("the fixes are queued") { try unit.store.outboxDepth().position == 5 }
        try await unit.press("reject too far")
        try await unit.press("sos")
        let before = unit.broker.published.count
        unit.broker.acceptConnection()
        try await unit.eventually("everything waiting is handed over") {
            Self.topics(Array(unit.broker.published.dropFirst(before)), below: unit.topicBase).filter { $0 != "status" && $0 != "pos/last" }.count >= 6
        }
        let sent = Self.topics(Array(unit.broker.published.dropFirst(before)), below: unit.topicBase).filter { $0 != "status" && $0 != "pos/last" }
        // (status and pos/last go straight to the broker, beside the outbox.) The duty and offer
        // events were handed over before the outage and are sent again first
        // in their lane; what matters is that no lane overtakes a lower one.
        let lanes = sent.map { ["sos": 0, "job/reply": 1, "event": 2, "pos": 3][$0] ?? 9 }
        #expect(lanes == lanes.sorted(), "\(sent)")
        #expect(sent.first == "sos" && sent.contains("job/reply") && sent.last == "pos", "\(sent)")
        let positions = unit.published(on: "pos").suffix(2).map(\.json)
        #expect(positions.first?["backfill"] == nil, "the newest fix goes first, alone")
        #expect(positions.last?["backfill"] as? Bool == true, "then the history")
        await unit.stop()
    }

    /// A report the fleet asks for is committed with the fixes the commit window held, whose live
    /// message is packed after it: the report's older row still goes out, in this session.
    @Test func aRequestedReportGoesOutBesideTheLiveFixPackedWithIt() async throws {
        let unit = try EngineUnderTest("[fleet]\nrequire_signed = false\n[store]\nposition_commit_ms = 60000\n")
        try await unit.start()
        unit.broker.acceptConnection()
        try await unit.press("duty")
        unit.fixes.fix(latitude: 46.5, longitude: 7.5)
        try await unit.eventually("the fix is the unit's last") { try await unit.status().gps.lastFixTime != nil }
        unit.fixes.fix(latitude: 46.501, longitude: 7.5)
        let expires = TestClock.milliseconds() + 60_000
        unit.broker.receive(unit.topicBase + "cmd", #"{"id":"c1","cmd":"report","expires_at":\#(expires)}"#)
        try await unit.eventually("the reply") { unit.published(on: "cmd/reply").contains { $0.json["cmd_id"] as? String == "c1" } }
        let reply = try #require(unit.published(on: "cmd/reply").first { $0.json["cmd_id"] as? String == "c1" }?.json)
        let reported = try #require((reply["position"] as? [String: Any])?["t"] as? Int)
        // The report's own row, beside the live message of the same (newest) fix.
        try await unit.eventually("the report's row on pos") {
            unit.published(on: "pos").count { (try? JSONDecoder().decode(LivePositionMessage.self, from: Data($0.payload)))?.point.t == Int64(reported) } == 2
        }
        await unit.stop()
    }

    /// A message handed over but not acknowledged is sent again, with the same id, in the next session.
    @Test func unacknowledgedMessagesAreSentAgainInANewSession() async throws {
        let unit = try EngineUnderTest(prepare: storeWithAnOpenShift())
        try await unit.start()
        unit.broker.acceptConnection()
        try await unit.press("duty")
        try await unit.eventually("the event is handed over") { unit.published(on: "event").count == 1 }
        let first = try #require(unit.published(on: "event").first?.json["id"] as? String)
        unit.broker.loseConnection()
        unit.broker.acceptConnection()
        try await unit.eventually("it is sent again") { unit.published(on: "event").count == 2 }
        #expect(unit.published(on: "event").map { $0.json["id"] as? String } == [first, first])
        // Acknowledged in the new session, it is never sent again.
        unit.broker.acknowledge(try #require(unit.published(on: "event").last))
        try await unit.eventually("the PUBACK is counted") { try await unit.status().outbox.event == 0 }
        unit.broker.loseConnection()
        unit.broker.acceptConnection()
        try await unit.eventually("the new session's status is out") { unit.published(on: "status").count >= 4 }
        #expect(unit.published(on: "event").count == 2)
        await unit.stop()
    }

    /// A PUBACK with nothing waiting for its slot is not a commit of its own: the store learns of it
    /// with the next commit, while the status already leaves the message out.
    @Test func aLonePubackIsMarkedByTheNextCommit() async throws {
        let unit = try EngineUnderTest("[store]\nposition_commit_ms = 0\n", prepare: storeWithAnOpenShift())
        try await unit.start()
        unit.broker.acceptConnection()
        try await unit.press("duty")
        try await unit.eventually("the event is handed over") { unit.published(on: "event").count == 1 }
        unit.broker.acknowledge(try #require(unit.published(on: "event").first))
        #expect(try await unit.status().outbox.event == 0, "the status counts it delivered")
        #expect(try unit.store.outboxDepth().event == 1, "the store has not been written for it")
        unit.fixes.fix(latitude: 46.5, longitude: 7.5)
        try await unit.eventually("the fix's commit marks it") { try unit.store.outboxDepth().event == 0 }
        await unit.stop()
    }

    /// Draining a backlog, the pump keeps up to two windows of backfill packed ahead, so batches are
    /// read and written a window at a time, not one per PUBACK; the lanes stay in order.
    @Test func aBacklogIsPackedAheadAWindowAtATime() async throws {
        let start = TestClock.aDayAgo()
        let unit = try EngineUnderTest("[mqtt]\nmax_inflight = 4\nbatch_max = 10\n") { store in
            try store.write { transaction in
                for index in 0..<1000 {
                    try transaction.queuePosition(
                        Fix(time: start + .seconds(index), latitude: 46.5, longitude: 7.5), createdAt: start)
                }
            }
        }
        try await unit.start()
        unit.broker.acceptConnection()
        try await unit.eventually("a window is in flight") { unit.published(on: "pos").count == 4 }
        let rows = try unit.store.outboxOverview(limitPerClass: 1000).depth[.position] ?? 0
        #expect(rows == 4 + 8, "four in flight, two windows packed ahead")
        // Each PUBACK hands over the next from the reserve, oldest first, with no gap.
        for _ in 0..<20 {
            let count = unit.published(on: "pos").count
            unit.broker.acknowledge(unit.published(on: "pos")[count - 4])
            try await unit.eventually("the next goes out") { unit.published(on: "pos").count == count + 1 }
        }
        let seqs = unit.published(on: "pos").compactMap { $0.json["seq"] as? Int }
        #expect(seqs == Array(seqs.sorted()) && Set(seqs).count == seqs.count)
        let packed = try unit.store.outboxOverview(limitPerClass: 1000).depth[.position] ?? 0
        #expect(packed <= 4 + 8 && packed >= 4, "never more than two windows ahead: \(packed)")
        await unit.stop()
    }

    /// A store that refuses every write (another connection holds its write lock, as a full disk
    /// refuses them): the driver is told the event is not stored, the event goes to the broker from
    /// memory with its own seq and id, and once the store takes writes again it keeps only that
    /// number, so the next event does not take it again.
    @Test func anEventTheStoreRefusesGoesOutFromMemoryAndKeepsItsNumber() async throws {
        let unit = try EngineUnderTest(prepare: storeWithAnOpenShift())
        try await unit.start()
        unit.broker.acceptConnection()
        try await unit.press("duty")
        try await unit.eventually("the first event") { unit.published(on: "event").count == 1 }
        unit.broker.acknowledge(unit.published(on: "event")[0])

        var blocker: OpaquePointer?
        try #require(sqlite3_open(unit.store.path, &blocker) == SQLITE_OK)
        defer { sqlite3_close(blocker) }
        sqlite3_busy_timeout(blocker, 5000)
        try #require(sqlite3_exec(blocker, "BEGIN IMMEDIATE", nil, nil, nil) == SQLITE_OK)
        let answer = try await unit.press("duty")
        let told = try #require(answer.message)
        #expect(told.contains("NOT STORED") && !told.contains("sent"), "one true text: \(told)")
        try await unit.eventually("the event from memory", within: 60) { unit.published(on: "event").count == 2 }
        let fromMemory = unit.published(on: "event")[1]
        #expect(fromMemory.json["to"] as? String == "off_duty")
        #expect(fromMemory.json["seq"] as? Int == 2)
        #expect(try await unit.status().store?.inMemory == 1)
        unit.broker.acknowledge(fromMemory)

        try #require(sqlite3_exec(blocker, "ROLLBACK", nil, nil, nil) == SQLITE_OK)
        try await unit.eventually("the held event settled in the store", within: 60) { try await unit.status().store?.inMemory == 0 }
        #expect(try await unit.status().outbox.event == 0, "delivered from memory: no row to send again")
        try await unit.press("duty")
        // Back on duty after time off: the transition, then the shift's `break` (any length counts by default).
        try await unit.eventually("the next event") { unit.published(on: "event").count >= 3 }
        let next = unit.published(on: "event")[2].json
        #expect(next["to"] as? String == "available")
        #expect(next["seq"] as? Int == 3, "the number given from memory is not given again")
        #expect(next["id"] as? String != fromMemory.json["id"] as? String)
        #expect(try await unit.status().store?.writeError == nil)
        await unit.stop()
    }
}
