import ControlSocket
import Foundation
import MQTTLink
import TestHarness
import Testing

/// What once made every start fail now starts a working unit, with what it could not use set aside
/// and reported: a corrupt snapshot, an undecodable fleet document, a store from a newer release,
/// queued rows that cannot be packed, and starts that keep dying early.
@Suite(.serialized) struct CrashLoopTests {
    func sqlite(_ path: String, _ sql: String) throws {
        let result = try runCommand("/usr/bin/sqlite3", [path, sql])
        guard result.exitCode == 0 else { throw HarnessError("sqlite3 \(sql): \(result.output)") }
    }

    /// A rig whose unit has run once (so its store exists) and is stopped again.
    func preparedRig(_ prepare: (JobFlowTests.Rig) async throws -> Void = { _ in }) async throws -> JobFlowTests.Rig {
        let rig = try await JobFlowTests.Rig()
        try await prepare(rig)
        rig.unit.stop()
        return rig
    }

    /// The unit came up: connected, an online retained status, and it takes and answers an offer.
    func expectWorking(_ rig: JobFlowTests.Rig, aside kind: String) async throws {
        try await rig.unit.start()
        let status = try await rig.unit.waitForStatus("connected") { $0.broker.connected }
        #expect(status.aside?[kind] == 1, "\(String(describing: status.aside))")
        try await rig.recorder.waitFor("an online status that reports it") { messages in
            messages.filter { $0.topic == rig.unit.topicBase + "status" }.compactMap(\.json).contains {
                $0["online"] as? Bool == true && ($0["aside"] as? [String: Int])?[kind] == 1
            }
        }
        if status.state == "off_duty" { _ = try rig.press("duty") }
        try rig.offer("AFTER-\(kind)")
        try await rig.unit.waitForStatus("offered") { $0.state == "offered" }
        _ = try rig.press("accept")
        try await rig.waitForReply("AFTER-\(kind)", "accept")
    }

    @Test func aCorruptSnapshotIsSetAsideAndTheUnitStartsOffDuty() async throws {
        let rig = try await preparedRig { try await $0.goOnDuty() }
        defer { rig.stop() }
        try sqlite(rig.unit.storePath, "UPDATE unit_state SET value = X'7B227374617465223A7B22656E526F757465223A7B7D7D7D' WHERE key = 'unit_snapshot'")
        try await rig.unit.start()
        let status = try await rig.unit.waitForStatus("up") { $0.broker.connected }
        #expect(status.state == "off_duty")
        #expect(rig.unit.log.contains("SET ASIDE: the stored state snapshot could not be restored"))
        rig.unit.stop()
        try await expectWorking(rig, aside: "snapshot")
    }

    @Test func anUndecodableFleetDocumentIsSetAside() async throws {
        let rig = try await preparedRig()
        defer { rig.stop() }
        try sqlite(rig.unit.storePath, """
            INSERT INTO fleet_config (scope, seen_version, version, document, on_probation, updated_at) VALUES ('fleet', 3, 3, X'7B7B7B', 0, 0)
            """)
        try await expectWorking(rig, aside: "fleet_config")
        #expect(rig.unit.log.contains("SET ASIDE: the stored fleet configuration documents could not be restored"))
    }

    @Test func aStoreFromANewerReleaseIsMovedAsideNotOpened() async throws {
        let rig = try await preparedRig { try await $0.goOnDuty() }
        defer { rig.stop() }
        try sqlite(rig.unit.storePath, "INSERT INTO grdb_migrations (identifier) VALUES ('v99-from-the-future')")
        try await rig.unit.start()
        let status = try await rig.unit.waitForStatus("up on a fresh store") { $0.broker.connected }
        #expect(status.state == "off_duty")
        #expect(rig.unit.log.contains("STORE FROM A NEWER RELEASE: moved it aside"))
        #expect(rig.unit.log.contains("v99-from-the-future"))
        let asideFiles = try FileManager.default.contentsOfDirectory(atPath: rig.scratch.path).filter { $0.contains(".sqlite.newer-") }
        #expect(asideFiles.contains { !$0.hasSuffix("-wal") && !$0.hasSuffix("-shm") }, "\(asideFiles)")
        _ = try rig.press("duty")
        try rig.offer("NEWER")
        try await rig.unit.waitForStatus("offered") { $0.state == "offered" }
    }

    @Test func queuedRowsThatCannotBePackedAreSetAsideAndTheRestDrains() async throws {
        let rig = try await preparedRig()
        defer { rig.stop() }
        let now = TestClock.milliseconds()
        try sqlite(rig.unit.storePath, """
            INSERT INTO position_queue (created_at, t, lat, lon, spd, hdg, acc) VALUES
                (\(now), \(now - 3000), 46.5, 7.5, 1e20, 1e20, -5),
                (\(now), 'not a time', 46.5, 7.5, NULL, NULL, NULL),
                (\(now), \(now - 2000), 1e999, 7.5, NULL, NULL, NULL),
                (\(now), \(now - 1000), 46.6, 7.6, 3.5, 90, 4);
            INSERT INTO outbox (message_id, topic, class, qos, payload, created_at, lane, points)
                VALUES ('bad-row', 'pos', 3, 7, X'00', \(now), 4, 1);
            """)
        try await expectWorking(rig, aside: "outbox_row")
        try await rig.recorder.waitFor("both good points arrive") { messages in
            ReceivedPositions.all(messages, topic: rig.unit.topicBase + "pos").flatMap(\.points).count >= 2
        }
        let status = try await rig.unit.waitForStatus("drained") { $0.outbox.depth == 0 }
        #expect(status.outbox.positionsDropped == 2, "the two rows that are not points (no time, an infinite latitude)")
        // The 1e20 speed was left out, not sent.
        let texts = rig.recorder.messages(onTopic: rig.unit.topicBase + "pos").map(\.text)
        #expect(!texts.contains { $0.contains("1e+20") || $0.contains("100000000000000000000") }, "\(texts)")
    }

    /// Starts that keep dying early: the breaker trips on the third, and escalates from the least
    /// to the most it can set aside. The third sets the fleet's documents aside and keeps the open
    /// job; the fourth sets the snapshot aside too, and tells the driver and the dispatcher that
    /// the job was dropped.
    @Test func startsThatKeepDyingEarlyEscalateFromTheFleetDocumentsToTheSnapshot() async throws {
        let scratch = try ScratchDirectory()
        let signer = try FleetSigner(in: scratch)
        let rig = try await DriverIdentityTests.Rig(scratch: scratch, extraTOML: signer.fleetSection())
        let unit = rig.unit
        let fleetTopic = "taxi/\(unit.fleet)/config"
        try rig.recorder.publish(fleetTopic, try signer.sign(#"{"version":1,"settings":{"reporting":{"interval_s":30}}}"#, topic: fleetTopic), retain: true)
        try await unit.waitForStatus("the fleet document applied") { $0.config?.versions == ["fleet": 1] }
        // Only the unit's store holds it from now on.
        try rig.recorder.publish(fleetTopic, "", retain: true)
        try await acceptAndStop(rig, job: "LOOP")
        // Two early deaths trip nothing.
        try await dieEarly(unit, times: 2)
        try await unit.start()
        var status = try await unit.waitForStatus("up after two early deaths") { $0.broker.connected }
        #expect(status.state == "en_route" && (status.aside ?? [:]).isEmpty && status.config?.versions == ["fleet": 1], "\(String(describing: status.aside))")
        #expect(!unit.log.contains("CRASH LOOP"))
        unit.killHard()

        // The third: the fleet's documents go, the job stays.
        try await unit.start()
        status = try await unit.waitForStatus("up after three early deaths") { $0.broker.connected }
        #expect(status.state == "en_route" && status.job?.id == "LOOP")
        #expect(status.aside == ["fleet_config": 1] && status.config?.versions.isEmpty == true, "\(String(describing: status.aside))")
        #expect(unit.log.contains("CRASH LOOP: setting aside the fleet documents"))
        unit.killHard()

        // The fourth: the snapshot goes too, and with it the job, which is told.
        try await unit.start()
        status = try await unit.waitForStatus("up after four early deaths") { $0.broker.connected }
        #expect(status.state == "off_duty" && status.aside?["snapshot"] == 1, "\(String(describing: status.aside))")
        try await rig.recorder.waitFor("the dropped job's event") { messages in
            messages.contains {
                $0.topic == unit.topicBase + "event" && $0.json?["job"] as? String == "LOOP" && $0.json?["reason"] as? String == "crash_loop"
                    && $0.json?["from"] as? String == "en_route" && $0.json?["to"] as? String == "off_duty"
            }
        }
        let screen = try await rig.screen.waitFor("the driver told") { $0.rows[3] == "JOB CANCELLED       " && $0.rows[2] == "Crash: call dispatch" }
        #expect(screen.rows[0].hasPrefix("OFF DUTY"), "\(screen.rows)")
        #expect(unit.log.contains("Job LOOP dropped after repeated crashes: call dispatch"))
        let problems = try ContractCheck.problems(in: rig.recorder.messages)
        #expect(problems.isEmpty, "\(problems)")
        unit.stop()
    }

    /// A retained fleet document the last runs died handling twice (the record the unit keeps in
    /// its store while it handles a message, as the second death left it): the start sets it
    /// aside, answers it `invalid`, refuses the broker's copy unhandled at every connection, and
    /// goes on.
    @Test func aPoisonMessageIsSetAsideAfterTwoDeathsWhileHandlingIt() async throws {
        let scratch = try ScratchDirectory()
        let signer = try FleetSigner(in: scratch)
        let rig = try await DriverIdentityTests.Rig(scratch: scratch, extraTOML: signer.fleetSection())
        let unit = rig.unit
        unit.stop()
        let fleetTopic = "taxi/\(unit.fleet)/config"
        let document = try signer.sign(#"{"version":1,"settings":{"reporting":{"interval_s":30}}}"#, topic: fleetTopic)
        try recordInHand(document, topic: fleetTopic, deaths: 1, store: unit.storePath)
        try rig.recorder.publish(fleetTopic, document, retain: true)

        func refusals() -> [[String: Any]] {
            rig.recorder.messages(onTopic: unit.topicBase + "config/ack").compactMap(\.json).filter {
                $0["reason"] as? String == "invalid" && ($0["errors"] as? [String])?.first?.hasPrefix("set aside unread") == true
            }
        }
        try await unit.start()
        let status = try await unit.waitForStatus("up") { $0.broker.connected }
        #expect(status.aside?["inbound_message"] == 1, "\(String(describing: status.aside))")
        // Answered at the start, and the broker's copies (queued in the session, and retained) refused unhandled.
        let detail = { "acks: \(rig.recorder.messages(onTopic: unit.topicBase + "config/ack").map(\.text))\nlog:\n\(unit.log)" }
        try await waitUntil("two refusals", timeoutS: 20, detail: detail) { refusals().count >= 2 }
        #expect(refusals().allSatisfy { $0["version"] == nil && $0["scope"] as? String == "fleet" })
        #expect(try unit.status().config?.versions.isEmpty == true)
        #expect(unit.log.contains("POISON MESSAGE set aside unhandled"))

        // The unit goes on: it takes and answers an offer.
        _ = try rig.press("duty")
        try rig.recorder.publish(unit.topicBase + "job/offer", #"{"job":"AFTER","pickup":{"lat":46.5,"lon":7.5}}"#)
        try await unit.waitForStatus("offered") { $0.state == "offered" }
        _ = try rig.press("accept")
        try await rig.recorder.waitFor("the accept") { messages in
            messages.contains { $0.topic == unit.topicBase + "job/reply" && $0.json?["job"] as? String == "AFTER" }
        }
        // After a restart the copy is still refused, and set aside only once.
        let before = refusals().count
        unit.stop()
        try await unit.start()
        try await unit.waitForStatus("up again") { $0.broker.connected }
        try await waitUntil("the copy refused again", timeoutS: 20, detail: detail) { refusals().count > before }
        let again = try unit.status()
        #expect(again.aside?["inbound_message"] == 1 && again.config?.versions.isEmpty == true)
        unit.stop()
    }

    /// On duty, `job` offered and accepted (en route), and stopped cleanly.
    func acceptAndStop(_ rig: DriverIdentityTests.Rig, job: String) async throws {
        _ = try rig.press("duty")
        try rig.recorder.publish(rig.unit.topicBase + "job/offer", #"{"job":"\#(job)","pickup":{"lat":46.5,"lon":7.5}}"#)
        try await rig.unit.waitForStatus("offered") { $0.state == "offered" }
        _ = try rig.press("accept")
        try await rig.unit.waitForStatus("en route") { $0.state == "en_route" }
        rig.unit.stop()
    }

    /// Starts that each die (SIGKILL) within their first minute, as the breaker counts them.
    func dieEarly(_ unit: UnitUnderTest, times: Int) async throws {
        for _ in 0..<times {
            try await unit.start()
            _ = try await unit.waitForStatus("up") { _ in true }
            unit.killHard()
        }
    }

    /// The record the unit keeps while it handles a message, as a run that died handling it leaves
    /// it after `deaths` earlier deaths on it.
    func recordInHand(_ payload: String, topic: String, deaths: Int, store: String) throws {
        let record = #"{"deaths":\#(deaths),"payload":"\#(Data(payload.utf8).base64EncodedString())","topic":"\#(topic)"}"#
        let hex = record.utf8.map { String(format: "%02X", $0) }.joined()
        try sqlite(store, "INSERT OR REPLACE INTO unit_state (key, value) VALUES ('inbound_in_hand', X'\(hex)')")
    }

    /// The breaker's middle step: after 4 early deaths, the message the last run died handling goes
    /// (once) before the state; the next early death takes the state.
    @Test func aMessageInHandIsSetAsideBeforeTheSnapshot() async throws {
        let rig = try await DriverIdentityTests.Rig(extraTOML: "")
        let unit = rig.unit
        try await acceptAndStop(rig, job: "KEEP")
        try await dieEarly(unit, times: 4)
        // The fourth died handling an update (once: the two-deaths rule has not struck).
        try recordInHand(#"{"job":"KEEP","note":"x"}"#, topic: unit.topicBase + "job/update", deaths: 0, store: unit.storePath)
        try await unit.start()
        var status = try await unit.waitForStatus("up after four early deaths") { $0.broker.connected }
        #expect(status.aside?["inbound_message"] == 1 && status.aside?["snapshot"] == nil, "\(String(describing: status.aside))")
        #expect(status.state == "en_route" && status.job?.id == "KEEP")
        unit.killHard()
        try await unit.start()
        status = try await unit.waitForStatus("up after five early deaths") { $0.broker.connected }
        #expect(status.state == "off_duty" && status.aside?["snapshot"] == 1, "\(String(describing: status.aside))")
        try await rig.recorder.waitFor("the dropped job's event") { messages in
            messages.contains { $0.topic == unit.topicBase + "event" && $0.json?["job"] as? String == "KEEP" && $0.json?["reason"] as? String == "crash_loop" }
        }
        unit.stop()
    }
}
