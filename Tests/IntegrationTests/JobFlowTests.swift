import ControlSocket
import Foundation
import LocalCache
import MQTTLink
import TaxiProtocol
import TestHarness
import Testing
import UnitCore

/// The driver's job lifecycle on the real parts: mosquitto, the daemon binary, taxiunitctl, SQLite.
@Suite(.serialized) struct JobFlowTests {
    /// A broker, a recorder on everything the unit says, and the unit itself. gpsd is a port with
    /// nobody listening unless a test needs fixes.
    struct Rig {
        let scratch: ScratchDirectory
        let broker: MosquittoBroker
        let unit: UnitUnderTest
        let recorder: MQTTRecorder
        let gps: FakeGPS?

        /// `gpsCycleS`: the replay's delay between sentences, for a test that waits for GPS time to pass.
        init(
            extraTOML: String = "", mqttTOML: String = "", withGPS: Bool = false, gpsCycleS: Double = 0.05, reportingIntervalS: Double = 0.5
        ) async throws {
            scratch = try ScratchDirectory()
            broker = try MosquittoBroker(in: scratch)
            gps = withGPS ? try FakeGPS(log: Corpus.log(Corpus.steadyLog), in: scratch, cycleS: gpsCycleS) : nil
            unit = try UnitUnderTest(
                mqttPort: broker.port, gpsdPort: try gps?.port ?? Loopback.freePort(), in: scratch, extraTOML: extraTOML,
                reportingIntervalS: reportingIntervalS, mqttTOML: mqttTOML)
            recorder = try await MQTTRecorder(port: broker.port, subscribe: [unit.topicBase + "#"])
            try await unit.start()
            try await unit.waitForStatus("broker connected") { $0.broker.connected }
        }

        /// `taxiunitctl press …`: what the driver is told, or the error.
        @discardableResult
        func press(_ words: String...) throws -> String {
            let (output, code) = try runCommand(
                Corpus.binary("taxiunitctl"), ["press", "--socket", unit.controlSocket] + words.flatMap { $0.split(separator: " ").map(String.init) })
            guard code == 0 else { throw HarnessError("press \(words) failed (\(code)): \(output)") }
            return output.trimmingCharacters(in: .whitespacesAndNewlines)
        }

        /// An input the daemon refuses: taxiunitctl prints why and exits 1.
        func refusedPress(_ words: String...) throws -> String {
            let (output, code) = try runCommand(
                Corpus.binary("taxiunitctl"), ["press", "--socket", unit.controlSocket] + words.flatMap { $0.split(separator: " ").map(String.init) })
            guard code == 1 else { throw HarnessError("press \(words) exited \(code), not 1: \(output)") }
            return output.trimmingCharacters(in: .whitespacesAndNewlines)
        }

        func publish(_ suffix: String, _ json: String) throws {
            try recorder.publish(unit.topicBase + suffix, json)
        }

        func offer(_ job: String, extra: String = "") throws {
            try publish("job/offer", #"{"job":"\#(job)","pickup":{"lat":46.5,"lon":7.5,"address":"Bahnhofplatz 1"},"passengers":1\#(extra)}"#)
        }

        /// Replies on `job/reply`, first arrivals only (QoS 1 may deliver a message twice).
        func replies(job: String? = nil) -> [[String: Any]] {
            var seen = Set<String>()
            return recorder.messages(onTopic: unit.topicBase + "job/reply").compactMap(\.json).filter { json in
                guard let id = json["id"] as? String, seen.insert(id).inserted else { return false }
                return job == nil || json["job"] as? String == job
            }
        }

        @discardableResult
        func waitForReply(_ job: String, _ reply: String, timeoutS: Double = 15) async throws -> [String: Any] {
            try await recorder.waitFor("\(reply) for \(job)", timeoutS: timeoutS) { _ in
                replies(job: job).contains { $0["reply"] as? String == reply }
            }
            return replies(job: job).first { $0["reply"] as? String == reply }!
        }

        func events() -> [[String: Any]] {
            recorder.messages(onTopic: unit.topicBase + "event").compactMap(\.json)
        }

        func goOnDuty() async throws {
            #expect(try press("duty") == "On duty, available")
            try await unit.waitForStatus("available") { $0.state == "available" }
        }

        func stop() {
            unit.stop()
            recorder.stop()
        }
    }

    @Test func anOfferAcceptedWithTaxiunitctlIsAnsweredOnTheBroker() async throws {
        let rig = try await Rig()
        try await rig.goOnDuty()
        // A reservation tomorrow (meeting times must be within a year of the unit clock).
        let meeting = TestClock.milliseconds() + 86_400_000
        try rig.offer("J1", extra: #","meeting_time":\#(meeting),"note":"2 bags""#)
        let offered = try await rig.unit.waitForStatus("offered") { $0.state == "offered" }
        let job = try #require(offered.job)
        #expect(job.id == "J1")
        #expect(job.pickup == "Bahnhofplatz 1")
        #expect((55...60).contains(job.offerSecondsLeft ?? -1), "countdown from the default 60 s")
        #expect(job.meetingTime == meeting)
        #expect((job.meetingInS ?? 0) > 0)

        #expect(try rig.press("accept") == "Job J1 accepted, sent. Go to Bahnhofplatz 1")
        let reply = try await rig.waitForReply("J1", "accept")
        #expect(reply["unit"] as? String == rig.unit.unitID)
        #expect(reply["seq"] as? Int == 1)
        #expect(reply["re"] as? String == "job/offer")
        #expect((reply["id"] as? String)?.count == 36)
        #expect(reply["t"] is Int)
        #expect(reply["reason"] == nil)

        let status = try await rig.unit.waitForStatus("en route") { $0.state == "en_route" }
        #expect(status.job?.offerSecondsLeft == nil)
        try await rig.recorder.waitFor("retained status en_route") { messages in
            messages.last { $0.topic == rig.unit.topicBase + "status" }?.json?["state"] as? String == "en_route"
        }
        let retained = try #require(rig.recorder.messages(onTopic: rig.unit.topicBase + "status").last?.json)
        #expect(retained["job"] as? String == "J1")
        #expect(retained["seats_left"] as? Int == 4)
        #expect(retained["online"] as? Bool == true)

        func transitions() -> [String] {
            rig.events().filter { $0["type"] == nil }.map { "\($0["from"] as? String ?? "?")>\($0["to"] as? String ?? "?")" }
        }
        try await rig.recorder.waitFor("three transitions") { _ in transitions().count >= 3 }
        #expect(transitions() == ["off_duty>available", "available>offered", "offered>en_route"])
        // Beside them the shift's start (docs/protocol.md, "Shift"), numbered in the same sequence.
        #expect(rig.events().compactMap { $0["type"] as? String } == ["shift"])
        #expect(rig.events().map { $0["seq"] as? Int } == [1, 2, 3, 4])

        // Rule 17 over the same path: an input that makes no sense says why, and scripts see it refused.
        #expect(try rig.refusedPress("accept") == "No offer to answer")
        let json = try runCommand(Corpus.binary("taxiunitctl"), ["press", "--json", "--socket", rig.unit.controlSocket, "accept"])
        #expect(json.exitCode == 1 && json.output.contains(#""ok" : false"#) && json.output.contains("No offer to answer"), "\(json.output)")
        // An SOS shows nothing on the terminal; whoever pressed it here hears it is stored, and so does the journal.
        #expect(try rig.press("sos").hasPrefix("SOS alarm "))
        #expect(rig.unit.log.contains("SOS alarm stored"))
        rig.stop()
    }

    @Test func silenceIsATimeoutAfterTheWindow() async throws {
        let rig = try await Rig(extraTOML: "[job]\noffer_timeout_s = 2\n")
        try await rig.goOnDuty()
        try rig.offer("J1")
        try await rig.unit.waitForStatus("offered") { $0.state == "offered" }
        let reply = try await rig.waitForReply("J1", "timeout", timeoutS: 10)
        // Measured on the unit's clock, from the offer shown to the timeout sent: how late the
        // broker and this process see either does not count.
        let shown = try await rig.recorder.waitFor("the offer shown") { _ in rig.events().contains { $0["to"] as? String == "offered" } }
        let shownAt = try #require(rig.events().first { $0["to"] as? String == "offered" }?["t"] as? Int, "\(shown.count) messages")
        let window = try #require(reply["t"] as? Int) - shownAt
        #expect(window >= 1900, "not before the window: \(window) ms")
        #expect(window < 6000, "soon after the window: \(window) ms")
        #expect(reply["reason"] == nil)
        try await rig.unit.waitForStatus("available again") { $0.state == "available" }
        #expect(try rig.refusedPress("accept") == "No offer to answer")
        #expect(rig.replies(job: "J1").count == 1)
        rig.stop()
    }

    @Test func aSecondOfferIsBusyAndTheFirstJobStays() async throws {
        let rig = try await Rig()
        try await rig.goOnDuty()
        try rig.offer("J1")
        try await rig.unit.waitForStatus("offered") { $0.state == "offered" }
        try rig.offer("J2")
        let busy = try await rig.waitForReply("J2", "busy")
        #expect(busy["reason"] as? String == "offered")
        try rig.press("accept")
        try await rig.waitForReply("J1", "accept")
        try rig.offer("J3")
        #expect(try await rig.waitForReply("J3", "busy")["reason"] as? String == "en_route")
        let status = try rig.unit.status()
        #expect(status.state == "en_route")
        #expect(status.job?.id == "J1")
        rig.stop()
    }

    @Test func aCancelEndsTheJobAndTellsTheDriver() async throws {
        let rig = try await Rig()
        try await rig.goOnDuty()
        try rig.offer("J1")
        try await rig.unit.waitForStatus("offered") { $0.state == "offered" }
        try rig.press("accept")
        #expect(try rig.press("arrived") == "At pickup. Passenger on board?")
        try rig.publish("job/cancel", #"{"job":"J1","reason":"passenger withdrew"}"#)
        try await rig.unit.waitForStatus("available after cancel") { $0.state == "available" && $0.job == nil }
        try await rig.recorder.waitFor("the cancel transition") { _ in
            rig.events().contains { $0["from"] as? String == "at_pickup" && $0["to"] as? String == "available" && $0["reason"] as? String == "cancelled" }
        }
        #expect(rig.unit.log.contains("Job J1 cancelled by dispatch: passenger withdrew"))
        // A cancel for a job the unit does not have is logged and changes nothing.
        try rig.publish("job/cancel", #"{"job":"J77"}"#)
        try await waitUntil("the unknown cancel logged", timeoutS: 10) { rig.unit.log.contains("cancel for unknown job J77 ignored") }
        #expect(try rig.unit.status().state == "available")
        #expect(rig.replies().map { $0["reply"] as? String } == ["accept"])
        rig.stop()
    }

    @Test func aKilledUnitStillTimesOutItsOfferExactlyOnce() async throws {
        let rig = try await Rig()
        try await rig.goOnDuty()
        try rig.offer("J1", extra: #","respond_within_s":3"#)
        try await rig.unit.waitForStatus("offered") { $0.state == "offered" }
        rig.unit.killHard()
        // The deadline passes while the unit is down.
        try await Task.sleep(for: .seconds(4))
        try await rig.unit.start()
        try await rig.waitForReply("J1", "timeout")
        try await rig.unit.waitForStatus("available after restart") { $0.state == "available" }
        // Give a duplicate every chance to show up.
        try await Task.sleep(for: .seconds(2))
        #expect(rig.replies(job: "J1").count == 1)
        rig.stop()
    }

    @Test func aKilledUnitResumesItsOfferAndAcceptsExactlyOnce() async throws {
        let rig = try await Rig()
        try await rig.goOnDuty()
        try rig.offer("J1", extra: #","respond_within_s":30"#)
        try await rig.unit.waitForStatus("offered") { $0.state == "offered" }
        rig.unit.killHard()
        try await rig.unit.start()
        let resumed = try await rig.unit.waitForStatus("offered after restart") { $0.state == "offered" }
        #expect((1...30).contains(resumed.job?.offerSecondsLeft ?? -1), "the original deadline, not a new one")
        #expect(try rig.press("accept") == "Job J1 accepted, sent. Go to Bahnhofplatz 1")
        try await rig.waitForReply("J1", "accept")
        // The broker may redeliver the offer after the restart; it must not produce a second answer.
        try rig.offer("J1", extra: #","respond_within_s":30"#)
        try await rig.recorder.waitFor("the redelivery answered") { _ in rig.replies(job: "J1").count >= 2 }
        try await Task.sleep(for: .seconds(1))
        let answers = rig.replies(job: "J1")
        #expect(answers.count == 2)
        #expect(Set(answers.map { "\($0["reply"]!) \($0["t"]!)" }).count == 1, "re-answered identically: \(answers)")
        #expect(try rig.unit.status().state == "en_route")
        rig.stop()
    }

    @Test func aDuplicateOfferIsReansweredIdentically() async throws {
        let rig = try await Rig()
        try await rig.goOnDuty()
        try rig.offer("J1")
        try await rig.unit.waitForStatus("offered") { $0.state == "offered" }
        #expect(try rig.press("reject", "too far") == "Job J1 refused, sent")
        let first = try await rig.waitForReply("J1", "reject")
        #expect(first["reason"] as? String == "too far")
        try rig.offer("J1")
        try await rig.recorder.waitFor("the second answer") { _ in rig.replies(job: "J1").count == 2 }
        let second = rig.replies(job: "J1")[1]
        for key in ["job", "re", "reply", "reason", "t", "unit"] {
            #expect("\(first[key]!)" == "\(second[key]!)", "\(key)")
        }
        #expect(second["id"] as? String != first["id"] as? String, "a new message")
        #expect(second["seq"] as? Int == (first["seq"] as? Int ?? 0) + 1)
        #expect(try rig.unit.status().state == "available", "the redelivery is not shown")
        rig.stop()
    }

    @Test func malformedInboundIsLoggedAndAnsweredInvalidWhenTheJobIsKnown() async throws {
        let rig = try await Rig()
        try await rig.goOnDuty()
        try rig.publish("job/offer", #"{"job":"J9","pickup":"the station"}"#)
        let invalid = try await rig.waitForReply("J9", "invalid")
        #expect(invalid["reason"] as? String == "pickup must be a number")
        #expect(invalid["re"] as? String == "job/offer")
        try rig.publish("job/update", #"{"job":42}"#)
        let update = try await rig.waitForReply("42", "invalid")
        #expect(update["re"] as? String == "job/update")
        try rig.publish("job/offer", "garbage{")
        try rig.publish("sos/ack", "[]")
        try await waitUntil("both logged", timeoutS: 10) {
            rig.unit.log.contains("payload is not a JSON object") && rig.unit.log.components(separatedBy: "malformed message").count - 1 >= 4
        }
        #expect(rig.replies().count == 2, "no answer without a job id")
        let status = try rig.unit.status()
        #expect(status.state == "available")
        #expect(rig.unit.process?.isRunning == true)
        rig.stop()
    }

    @Test func sosGoesOutAtOnceWithTheLastFixAndSpeedsUpReporting() async throws {
        let rig = try await Rig(withGPS: true, reportingIntervalS: 30)
        try await rig.unit.waitForStatus("a fix") { $0.gps.lastFixTime != nil }
        let before = rig.recorder.messages(onTopic: rig.unit.topicBase + "pos").count
        // The terminal shows the driver nothing; whoever pressed it through taxiunitctl hears it is stored.
        #expect(try rig.press("sos").hasPrefix("SOS alarm "))
        let messages = try await rig.recorder.waitFor("the alarm", timeoutS: 5) { $0.contains { $0.topic == rig.unit.topicBase + "sos" } }
        let alarm = try #require(messages.first { $0.topic == rig.unit.topicBase + "sos" }?.json)
        #expect(alarm["state"] as? String == "off_duty")
        #expect(alarm["seq"] as? Int == 1)
        let fix = try #require(alarm["fix"] as? [String: Any])
        #expect(fix["lat"] is Double && fix["lon"] is Double)
        #expect(try rig.unit.status().sosPending)

        // Positions every second instead of every 30 s.
        try await rig.recorder.waitFor("fast positions", timeoutS: 10) { _ in
            rig.recorder.messages(onTopic: rig.unit.topicBase + "pos").count >= before + 4
        }
        try rig.publish("sos/ack", #"{"id":"\#(alarm["id"] as? String ?? "")"}"#)
        try await rig.unit.waitForStatus("alarm acknowledged") { !$0.sosPending }
        try await Task.sleep(for: .milliseconds(1500))
        let afterAck = rig.recorder.messages(onTopic: rig.unit.topicBase + "pos").count
        try await Task.sleep(for: .seconds(4))
        #expect(rig.recorder.messages(onTopic: rig.unit.topicBase + "pos").count == afterAck, "back to the 30 s interval")
        rig.stop()
    }

    @Test func sharedRideUpdatesKeepSeatsRightAndPausesCarryAReason() async throws {
        let rig = try await Rig()
        try await rig.goOnDuty()
        #expect(try rig.press("pause", "refuel") == "Paused (refuel)")
        let paused = try await rig.unit.waitForStatus("paused") { $0.state == "paused" }
        #expect(paused.pauseReason == "refuel")
        try await rig.recorder.waitFor("retained paused status") { messages in
            messages.last { $0.topic == rig.unit.topicBase + "status" }?.json?["reason"] as? String == "refuel"
        }
        let (refused, code) = try runCommand(Corpus.binary("taxiunitctl"), ["press", "pause", "nap", "--socket", rig.unit.controlSocket])
        #expect(code != 0)
        #expect(refused.contains("reason must be one of break, refuel, personal, other"))
        // The reason changes while paused, by name or by the terminal's one key; the dispatcher hears each.
        #expect(try rig.press("pause", "next") == "Paused (personal)")
        try await rig.recorder.waitFor("the changed reason on event and status") { messages in
            rig.events().contains { $0["from"] as? String == "paused" && $0["to"] as? String == "paused" && $0["reason"] as? String == "personal" }
                && messages.last { $0.topic == rig.unit.topicBase + "status" }?.json?["reason"] as? String == "personal"
        }
        #expect(try rig.press("resume") == "Available")

        try rig.offer("J1", extra: #","shared":true"#)
        try await rig.unit.waitForStatus("offered") { $0.state == "offered" }
        try rig.press("accept")
        try rig.press("arrived")
        try rig.press("pob 2")
        try await rig.unit.waitForStatus("two on board") { $0.seatsLeft == 2 }
        try rig.publish("job/update", #"{"job":"J1","add_pickup":{"lat":46.51,"lon":7.5,"address":"Markt 3","passengers":1},"update":"U-1"}"#)
        try await rig.unit.waitForStatus("three on board") { $0.seatsLeft == 1 && $0.job?.passengers == 3 }
        let shown = try await rig.waitForReply("J1", "shown")
        #expect(shown["re"] as? String == "job/update" && shown["update"] as? String == "U-1", "\(shown)")
        try await rig.recorder.waitFor("retained seats_left 1") { messages in
            messages.last { $0.topic == rig.unit.topicBase + "status" }?.json?["seats_left"] as? Int == 1
        }
        #expect(rig.unit.log.contains("Job J1 changed: extra pickup at Markt 3, 3 pax"))
        try rig.publish("job/update", #"{"job":"J1","passengers":5,"update":"U-2"}"#)
        let invalid = try await rig.waitForReply("J1", "invalid")
        #expect(invalid["re"] as? String == "job/update" && invalid["update"] as? String == "U-2")
        #expect(invalid["reason"] as? String == "5 passengers exceed 4 seats")
        #expect(try rig.unit.status().seatsLeft == 1)
        rig.stop()
    }

    @Test func anAlarmPressedOfflineLeavesWithinFiveSecondsOfARestart() async throws {
        let scratch = try ScratchDirectory()
        let broker = try MosquittoBroker(in: scratch)
        let unit = try UnitUnderTest(mqttPort: broker.port, gpsdPort: try Loopback.freePort(), in: scratch)
        let recorder = try await MQTTRecorder(
            port: broker.port, subscribe: [unit.topicBase + "sos"], clientID: "recorder-sos", persistentSession: true)
        try await unit.start()
        try await unit.waitForStatus("broker connected") { $0.broker.connected }
        broker.stop()
        try await unit.waitForStatus("broker lost") { !$0.broker.connected }
        let (output, code) = try runCommand(Corpus.binary("taxiunitctl"), ["press", "sos", "--socket", unit.controlSocket])
        #expect(code == 0)
        #expect(output.hasPrefix("SOS alarm ") && output.contains(" stored"), "\(output)")
        #expect(try unit.status().outbox.depth >= 1, "stored before anything else")
        unit.killHard()

        try broker.start()
        try await unit.start()
        try await recorder.waitFor("the alarm after the restart", timeoutS: 30) { !$0.isEmpty }
        // The unit's own uptime when the alarm arrived: how long this process took to start it and
        // to notice does not count.
        let arrived = try #require(recorder.arrivals.first?.at)
        let uptime = try #require(try unit.status().runningForS) - (ContinuousClock.now - arrived) / .seconds(1)
        #expect(uptime < 5, "the alarm left \(uptime) s after the start")
        #expect(recorder.messages.first?.json?["seq"] as? Int == 1)
        #expect(try unit.status().sosPending, "the alarm stays pending until acknowledged")
        unit.stop()
        recorder.stop()
    }

    @Test func aFixAtThePickupMeansArrived() async throws {
        let rig = try await Rig(withGPS: true)
        try await rig.goOnDuty()
        // The replayed receiver sits within a few metres of this point.
        try rig.publish("job/offer", #"{"job":"J1","pickup":{"lat":41.574966,"lon":-93.750572,"address":"Kirchgasse"}}"#)
        try await rig.unit.waitForStatus("offered") { $0.state == "offered" }
        try rig.press("accept")
        try await rig.unit.waitForStatus("at the pickup by itself") { $0.state == "at_pickup" }
        try await rig.recorder.waitFor("the arrival event") { _ in
            rig.events().contains { $0["to"] as? String == "at_pickup" && $0["reason"] as? String == "arrived_by_gps" }
        }
        #expect(rig.unit.log.contains("Arrived at Kirchgasse. Passenger on board?"))
        rig.stop()
    }

    @Test func aClearedRideIsKeptWithItsDistance() async throws {
        // The ride lasts 5 s of the receiver's time: replayed five times faster than elsewhere.
        let rig = try await Rig(withGPS: true, gpsCycleS: 0.01)
        try await rig.goOnDuty()
        try rig.offer("J1")
        try await rig.unit.waitForStatus("offered") { $0.state == "offered" }
        try rig.press("accept")
        try rig.press("arrived")
        try await rig.unit.waitForStatus("a fix for the pickup position") { $0.gps.lastFixTime != nil }
        #expect(try rig.refusedPress("pob 5") == "Only 4 seats")
        #expect(try rig.press("pob 2") == "2 on board")
        let onBoard = try await rig.unit.waitForStatus("on board") { $0.state == "on_board" }
        #expect(onBoard.seatsLeft == 2)
        // On board the driver tells the dispatcher when the taxi will be clear; the job stands.
        #expect(try rig.press("soon") == "Clear in 5 min: sent")
        try await rig.recorder.waitFor("soon_clear on event") { _ in
            rig.events().contains { $0["type"] as? String == "soon_clear" && $0["job"] as? String == "J1" && $0["clear_in_min"] as? Int == 5 }
        }
        #expect(try rig.unit.status().state == "on_board")
        let pickupFix = try #require(onBoard.gps.lastFixTime)
        try await rig.unit.waitForStatus("driving on") { ($0.gps.lastFixTime ?? 0) > pickupFix + 5000 }
        #expect(try rig.press("clear") == "Ride complete, available")
        try await rig.unit.waitForStatus("available") { $0.state == "available" && $0.seatsLeft == 4 }

        let rides = try LocalCache(path: rig.unit.storePath).rides()
        let ride = try #require(rides.first)
        #expect(rides.count == 1)
        #expect(ride.job == "J1")
        #expect(ride.passengers == 2)
        #expect(ride.dropTime >= ride.pickupTime)
        #expect(ride.pickupPosition != nil && ride.dropPosition != nil)
        #expect(ride.distanceM > 0, "the log is of a moving receiver")
        rig.stop()
    }
}

/// The rides table on a real SQLite file, without a daemon.
@Suite struct RideStoreTests {
    @Test func theDistanceFollowsTheStoredFixesBetweenPickupAndDrop() throws {
        let scratch = try ScratchDirectory()
        let store = try LocalCache(path: scratch.file("unit.sqlite"))
        let fixes = [
            Fix(time: 1000, latitude: 46.49, longitude: 7.5), // before the pickup: not counted
            Fix(time: 2000, latitude: 46.50, longitude: 7.5),
            Fix(time: 3000, latitude: 46.51, longitude: 7.5),
            Fix(time: 2500, latitude: 46.51, longitude: 7.51), // the receiver's clock jumped back
        ]
        let record = try store.write(.full) { transaction in
            for fix in fixes { try transaction.insertPosition(fix, createdAt: fix.time) }
            return try transaction.insertRide(RideSummary(
                job: "J1", passengers: 3, pickupTime: 10, dropTime: 20, pickupFix: fixes[1], dropFix: fixes[3]))
        }
        let expected = Coordinate.pathLength(fixes[1...].map(Coordinate.init))
        #expect(abs(record.distanceM - expected) < 1e-6)
        #expect(expected > 1800, "1.1 km north, then 0.77 km east")
        #expect(try store.rides() == [record])
        #expect(try store.lastPosition() == fixes[3])
        // Without fixes there is nothing to measure.
        let blind = try store.write { try $0.insertRide(RideSummary(job: "J2", passengers: 1, pickupTime: 30, dropTime: 40, pickupFix: nil, dropFix: nil)) }
        #expect(blind.distanceM == 0)
        #expect(try store.rides().map(\.job) == ["J1", "J2"])
    }
}
