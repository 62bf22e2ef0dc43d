import Foundation
import LocalCache
import MQTTLink
import TestHarness
import Testing

/// The walking skeleton on the real parts: gpsd fed by gpsfake, mosquitto, SQLite, the daemon binary.
@Suite(.serialized) struct SkeletonFlowTests {
    struct Point: Hashable {
        let lat: Double
        let lon: Double
        init(_ lat: Double, _ lon: Double) {
            // gpsd prints 9 decimals; 1e-7 degrees is about 1 cm.
            self.lat = (lat * 1e7).rounded()
            self.lon = (lon * 1e7).rounded()
        }
    }

    /// Coordinates of every TPV with a fix that gpsd's expected output lists for a log.
    static func expectedPoints(log: String) throws -> Set<Point> {
        let text = try String(contentsOfFile: Corpus.log(log + ".chk"), encoding: .utf8)
        var points = Set<Point>()
        for line in text.split(whereSeparator: \.isNewline) where line.contains(#""class":"TPV""#) {
            guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  let mode = object["mode"] as? Int, mode >= 2,
                  let lat = object["lat"] as? Double, let lon = object["lon"] as? Double else { continue }
            points.insert(Point(lat, lon))
        }
        return points
    }

    static func positions(_ messages: [MQTTMessage], topic: String) -> [ReceivedPositions] {
        ReceivedPositions.all(messages, topic: topic)
    }

    static func firstArrivals(_ positions: [ReceivedPositions]) -> [ReceivedPositions] {
        ReceivedPositions.firstArrivals(positions)
    }

    @Test func replayedFixesArriveAtASubscriber() async throws {
        let scratch = try ScratchDirectory()
        let broker = try MosquittoBroker(in: scratch)
        let gps = try FakeGPS(log: Corpus.log(Corpus.steadyLog), in: scratch, cycleS: 0.02)
        let unit = try UnitUnderTest(mqttPort: broker.port, gpsdPort: gps.port, in: scratch, reportingIntervalS: 0)
        let recorder = try await MQTTRecorder(port: broker.port, subscribe: [unit.topicBase + "#"])
        try await unit.start()

        let expected = try Self.expectedPoints(log: Corpus.steadyLog)
        let messages = try await recorder.waitFor("positions from the replay") { Self.positions($0, topic: unit.topicBase + "pos").count >= 10 }
        let positions = Self.positions(messages, topic: unit.topicBase + "pos")
        for position in positions {
            #expect(position.backfill || position.points.count == 1, "a live message carries one fix")
            for point in position.points {
                #expect(expected.contains(Point(point.lat, point.lon)), "(\(point.lat), \(point.lon)) is not a position gpsd reports for this log")
            }
        }
        // Live messages carry no seq (their id holds the fix time); each fix arrives in one message.
        #expect(Set(positions.map(\.id)).count == positions.count && Set(positions.flatMap { $0.points.map(\.t) }).count == positions.map(\.points.count).reduce(0, +))
        #expect(positions.filter { !$0.backfill }.allSatisfy { $0.size <= 64 }, "\(positions.map(\.size))")
        let status = try #require(recorder.messages(onTopic: unit.topicBase + "status").last?.json)
        #expect(status["online"] as? Bool == true)
        #expect(status["state"] as? String == "off_duty")
        unit.stop()
        try await recorder.waitFor("the offline status", timeoutS: 5) { messages in
            messages.last { $0.topic == unit.topicBase + "status" }?.json?["online"] as? Bool == false
        }
    }

    @Test func theLastWillMarksAKilledUnitOffline() async throws {
        let scratch = try ScratchDirectory()
        let broker = try MosquittoBroker(in: scratch)
        let gps = try FakeGPS(log: Corpus.log(Corpus.steadyLog), in: scratch)
        let unit = try UnitUnderTest(mqttPort: broker.port, gpsdPort: gps.port, in: scratch)
        let recorder = try await MQTTRecorder(port: broker.port, subscribe: [unit.topicBase + "status"])
        try await unit.start()
        try await recorder.waitFor("online status") { $0.last?.json?["online"] as? Bool == true }
        unit.killHard()
        // keepalive_s = 5 in tests: the broker notices within 1.5 keepalives.
        let messages = try await recorder.waitFor("the last will", timeoutS: 15) { $0.last?.json?["online"] as? Bool == false }
        // The will names its connection (docs/protocol.md, status: conn).
        #expect(messages.last?.text.hasPrefix(#"{"conn":"#) == true && messages.last?.text.hasSuffix(#","online":false}"#) == true)
        #expect(messages.last?.retained == false || messages.last?.retained == true)
        let retained = try await MQTTRecorder(port: broker.port, subscribe: [unit.topicBase + "status"])
        let seen = try await retained.waitFor("the retained will") { !$0.isEmpty }
        #expect(seen.first?.retained == true)
        #expect(seen.first?.text == messages.last?.text)
    }

    @Test func fixesStoredWhileTheBrokerIsDownArriveOnceInOrder() async throws {
        let scratch = try ScratchDirectory()
        let broker = try MosquittoBroker(in: scratch)
        let gps = try FakeGPS(log: Corpus.log(Corpus.steadyLog), in: scratch, cycleS: 0.02)
        // Every fix committed as it comes: the commit window holds fixes for up to a second of wall
        // time, which this fast replay fills with several seconds of fix time, so "stored by the
        // drain" would otherwise depend on the machine's speed.
        let unit = try UnitUnderTest(
            mqttPort: broker.port, gpsdPort: gps.port, in: scratch, reportingIntervalS: 0, storeTOML: "position_commit_ms = 0")
        let recorder = try await MQTTRecorder(port: broker.port, subscribe: [unit.topicBase + "pos"], clientID: "recorder-outage", persistentSession: true)
        try await unit.start()
        try await recorder.waitFor("first positions") { $0.count >= 3 }

        broker.stop()
        let down = try await unit.waitForStatus("broker loss noticed") { !$0.broker.connected }
        let queued = try await unit.waitForStatus("fixes queued while offline") { $0.outbox.depth >= down.outbox.depth + 25 }
        #expect(queued.storedPositions > down.storedPositions)

        try broker.start()
        try await unit.waitForStatus("back online") { $0.broker.connected }
        let drained = try await unit.waitForStatus("outbox drained") { $0.outbox.depth == 0 }
        unit.stop()
        // Every fix stored up to the drain arrives; reportingIntervalS 0 reports them all.
        let until = try #require(drained.gps.lastFixTime)
        let stored = Set(try LocalCache(path: unit.storePath).storedFixes().map(\.time.milliseconds).filter { $0 <= until })
        #expect(stored.count > 20)
        try await recorder.waitFor("everything queued", timeoutS: 20) { messages in
            Set(Self.positions(messages, topic: unit.topicBase + "pos").flatMap { $0.points.map(\.t) }).isSuperset(of: stored)
        }
        let arrivals = Self.firstArrivals(Self.positions(recorder.messages, topic: unit.topicBase + "pos"))
        // The live lane overtakes the history, so order is only kept within the backfill lane.
        let backfillSeqs = arrivals.compactMap(\.seq)
        #expect(!backfillSeqs.isEmpty && backfillSeqs == backfillSeqs.sorted(), "the history arrives in order")
    }

    @Test func seqContinuesAndNothingQueuedIsLostAfterSIGKILL() async throws {
        let scratch = try ScratchDirectory()
        let broker = try MosquittoBroker(in: scratch)
        let gps = try FakeGPS(log: Corpus.log(Corpus.steadyLog), in: scratch, cycleS: 0.02)
        let unit = try UnitUnderTest(mqttPort: broker.port, gpsdPort: gps.port, in: scratch, reportingIntervalS: 0)
        let recorder = try await MQTTRecorder(port: broker.port, subscribe: [unit.topicBase + "pos"], clientID: "recorder-kill", persistentSession: true)
        try await unit.start()
        try await recorder.waitFor("first positions") { $0.count >= 3 }

        // Queue some fixes with no broker, then kill the daemon the hard way.
        broker.stop()
        try await unit.waitForStatus("fixes queued while offline") { !$0.broker.connected && $0.outbox.depth >= 10 }
        unit.killHard()
        let queuedBeforeKill = Set(try LocalCache(path: unit.storePath).storedFixes().map(\.time.milliseconds))

        try broker.start()
        try await unit.start()
        try await unit.waitForStatus("queue drained after restart") { $0.broker.connected && $0.outbox.depth == 0 }
        try await recorder.waitFor("every fix from before the kill") { messages in
            Set(Self.positions(messages, topic: unit.topicBase + "pos").flatMap { $0.points.map(\.t) }).isSuperset(of: queuedBeforeKill)
        }
        unit.stop()
        let arrivals = Self.firstArrivals(Self.positions(recorder.messages, topic: unit.topicBase + "pos"))
        let seqs = arrivals.compactMap(\.seq)
        #expect(!seqs.isEmpty && Set(seqs).count == seqs.count, "backfill seq continues across the restart, none repeated")
        let times = arrivals.flatMap { $0.points.map(\.t) }
        #expect(Set(times).count == times.count, "no fix arrives in two messages")
    }

    @Test func statusJSONReportsStateLinksAndOutbox() async throws {
        let scratch = try ScratchDirectory()
        let broker = try MosquittoBroker(in: scratch)
        let gps = try FakeGPS(log: Corpus.log(Corpus.steadyLog), in: scratch)
        let unit = try UnitUnderTest(mqttPort: broker.port, gpsdPort: gps.port, in: scratch)
        try await unit.start()
        try await unit.waitForStatus("gps and broker up") { $0.gps.connected && $0.broker.connected && $0.gps.lastFixTime != nil }

        let (output, code) = try runCommand(Corpus.binary("taxiunitctl"), ["status", "--json", "--socket", unit.controlSocket])
        #expect(code == 0)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any])
        #expect(json["state"] as? String == "off_duty")
        #expect((json["gps"] as? [String: Any])?["connected"] as? Bool == true)
        #expect((json["broker"] as? [String: Any])?["connected"] as? Bool == true)
        #expect((json["outbox"] as? [String: Any])?["depth"] is Int)

        broker.stop()
        gps.stop()
        try await unit.waitForStatus("both links down") { !$0.gps.connected && !$0.broker.connected }
        let (human, humanCode) = try runCommand(Corpus.binary("taxiunitctl"), ["status", "--socket", unit.controlSocket])
        #expect(humanCode == 0)
        #expect(human.contains(/\ngpsd +disconnected\n/), "\(human)")
        #expect(human.contains(/\nbroker +disconnected\n/), "\(human)")
        unit.stop()

        let (stopped, stoppedCode) = try runCommand(Corpus.binary("taxiunitctl"), ["status", "--socket", unit.controlSocket])
        #expect(stoppedCode != 0)
        #expect(stopped.contains("taxiunitd is not running"))
    }
}

@Suite struct ConfigCheckTests {
    func check(_ toml: String) throws -> (output: String, exitCode: Int32) {
        let scratch = try ScratchDirectory()
        let path = scratch.file("unit.toml")
        try toml.write(toFile: path, atomically: true, encoding: .utf8)
        return try runCommand(Corpus.binary("taxiunitd"), ["--config", path, "--check"])
    }

    /// The shipped file names no unit: an image flashed to many taxis must not start them all as one.
    /// A drop-in beside it (conf.d/) gives the id, and then it passes.
    @Test func theShippedFileNeedsAUnitIDWhichADropInGives() throws {
        let shipped = try runCommand(Corpus.binary("taxiunitd"), ["--config", Corpus.packageRoot + "/etc/taxiunitd.toml", "--check"])
        #expect(shipped.exitCode == 1)
        #expect(shipped.output.contains("unit.id is missing"), "\(shipped.output)")

        let scratch = try ScratchDirectory()
        try FileManager.default.createDirectory(atPath: scratch.file("conf.d"), withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: Corpus.packageRoot + "/etc/taxiunitd.toml", toPath: scratch.file("taxiunitd.toml"))
        try "[unit]\nid = \"T042\"\n".write(toFile: scratch.file("conf.d/50-unit.toml"), atomically: true, encoding: .utf8)
        let result = try runCommand(Corpus.binary("taxiunitd"), ["--config", scratch.file("taxiunitd.toml"), "--check"])
        #expect(result.exitCode == 0, "\(result.output)")
        #expect(result.output.contains("OK"))
    }

    @Test func anUnknownKeyFails() throws {
        let result = try check("[unit]\nid = \"T1\"\nfleet = \"f\"\n[mqtt]\nhostname = \"x\"\n")
        #expect(result.exitCode == 1)
        #expect(result.output.split(separator: "\n").map { String($0) }.contains { $0.hasSuffix("unknown key mqtt.hostname") })
    }

    @Test func aWrongTypeFails() throws {
        let result = try check("[unit]\nid = \"T1\"\nfleet = \"f\"\n[gpsd]\nport = \"2947\"\n")
        #expect(result.exitCode == 1)
        #expect(result.output.contains("gpsd.port must be an integer, found string"))
    }

    @Test func aMissingUnitIdFails() throws {
        let result = try check("[unit]\nfleet = \"f\"\n")
        #expect(result.exitCode == 1)
        #expect(result.output.contains("unit.id is missing"))
    }

    @Test func everyProblemIsOneLine() throws {
        let result = try check("[unit]\nfleet = 3\nextra = 1\n")
        #expect(result.exitCode == 1)
        #expect(result.output.split(separator: "\n").count == 3)
    }
}
