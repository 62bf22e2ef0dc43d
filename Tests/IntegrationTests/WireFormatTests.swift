import Foundation
import MQTTLink
import TaxiProtocol
import TestHarness
import UnitCore
import Testing

/// The wire formats of protocol 2 on the real parts (docs/protocol.md, "Versions", "status"): what a
/// subscriber gets from a running unit on a real broker.
@Suite(.serialized) struct WireFormatTests {
    @Test func theRetainedStatusIsTheUnitsBirthMessage() async throws {
        let version = try runCommand(Corpus.binary("taxiunitd"), ["--version"])
        #expect(version.exitCode == 0)
        let software = version.output.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(!software.isEmpty)
        #expect(try runCommand(Corpus.binary("taxiunitctl"), ["--version"]).output.trimmingCharacters(in: .whitespacesAndNewlines) == software)

        let scratch = try ScratchDirectory()
        let broker = try MosquittoBroker(in: scratch)
        let gps = try FakeGPS(log: Corpus.log(Corpus.steadyLog), in: scratch)
        let unit = try UnitUnderTest(mqttPort: broker.port, gpsdPort: gps.port, in: scratch)
        let recorder = try await MQTTRecorder(port: broker.port, subscribe: [unit.topicBase + "status"])
        try await unit.start()
        let birth = try #require(try await recorder.waitFor("the online status") { $0.last?.json?["online"] as? Bool == true }.last?.json)
        #expect(birth["protocol"] as? Int == 2)
        #expect(birth["software"] as? String == software)
        #expect(birth["store"] as? String == "persistent")
        #expect(birth["config_versions"] as? [String: Int] == [:], "no fleet document was published")
        let uptime = try #require(birth["uptime_s"] as? Int)
        #expect(uptime >= 0 && uptime < 30)

        // Once fixes flow, the next status (a state change) says how old the newest is.
        try await unit.waitForStatus("a fix") { $0.gps.lastFixTime != nil }
        _ = try unit.request(.init(cmd: .press, input: "duty"))
        let messages = try await recorder.waitFor("the available status") { $0.last?.json?["state"] as? String == "available" }
        let available = try #require(messages.last?.json)
        let fixAge = try #require(available["fix_age_ms"] as? Int)
        #expect(fixAge >= 0 && fixAge < 10_000)
        #expect(available["software"] as? String == software && available["protocol"] as? Int == 2)
        #expect(try ContractCheck.problems(in: messages).isEmpty)
        unit.stop()
    }
}

extension WireFormatTests {
    /// What the broker delivers: live positions of at most 64 bytes, in the contract, and a retained
    /// last position that a subscriber arriving later gets at once.
    @Test func livePositionsAreLeanAndTheLastOneIsRetained() async throws {
        let scratch = try ScratchDirectory()
        let broker = try MosquittoBroker(in: scratch)
        let gps = try FakeGPS(log: Corpus.log(Corpus.steadyLog), in: scratch, cycleS: 0.02)
        let unit = try UnitUnderTest(mqttPort: broker.port, gpsdPort: gps.port, in: scratch, reportingIntervalS: 0)
        let recorder = try await MQTTRecorder(port: broker.port, subscribe: [unit.topicBase + "#"])
        try await unit.start()
        let messages = try await recorder.waitFor("live positions") { messages in
            ReceivedPositions.all(messages, topic: unit.topicBase + "pos").filter { !$0.backfill }.count >= 20
        }
        let live = ReceivedPositions.all(messages, topic: unit.topicBase + "pos").filter { !$0.backfill }
        #expect(live.allSatisfy { $0.size <= 64 }, "\(live.map(\.size))")
        #expect(live.contains { $0.points[0].spd != nil && $0.points[0].hdg != nil && $0.points[0].acc != nil }, "moving fixes with every field")
        #expect(try ContractCheck.problems(in: messages).isEmpty)

        // A dispatcher that starts now: the retained last position, without waiting for a report.
        #expect(!recorder.messages(onTopic: unit.topicBase + "pos/last").isEmpty)
        let latecomer = try await MQTTRecorder(port: broker.port, subscribe: [unit.topicBase + "pos/last"])
        let retained = try #require(try await latecomer.waitFor("the retained last position", timeoutS: 5) { !$0.isEmpty }.first)
        #expect(retained.retained)
        let point = try JSONDecoder().decode(LivePositionMessage.self, from: Data(retained.payload)).point
        let reported = ReceivedPositions.all(recorder.messages, topic: unit.topicBase + "pos").flatMap { $0.points.map(\.t) }
        #expect(reported.contains(point.t), "the last position is a reported fix")
        unit.stop()
    }
}

extension WireFormatTests {
    /// `[owntracks]`: every reported fix also as an OwnTracks `location`, retained, valid against
    /// OwnTracks' documented format (docs/schemas/owntracks-location.schema.json).
    @Test func theOwnTracksFeedIsWhatOwnTracksReads() async throws {
        let scratch = try ScratchDirectory()
        let broker = try MosquittoBroker(in: scratch)
        let gps = try FakeGPS(log: Corpus.log(Corpus.steadyLog), in: scratch, cycleS: 0.02)
        let unit = try UnitUnderTest(
            mqttPort: broker.port, gpsdPort: gps.port, in: scratch, extraTOML: "[owntracks]\nenabled = true\ntid = \"TX\"\n", reportingIntervalS: 0)
        let topic = "owntracks/\(unit.fleet)/\(unit.unitID)"
        let recorder = try await MQTTRecorder(port: broker.port, subscribe: [topic, unit.topicBase + "pos"])
        try await unit.start()
        let messages = try await recorder.waitFor("OwnTracks locations") { $0.filter { $0.topic == topic }.count >= 10 }
        let locations = messages.filter { $0.topic == topic }
        #expect(try ContractCheck.problems(in: locations).isEmpty)
        let first = try #require(locations.first?.json)
        #expect(first["_type"] as? String == "location")
        #expect(first["tid"] as? String == "TX")
        #expect(first["t"] as? String == "t")
        let complete = locations.compactMap(\.json).filter { $0["vel"] is Int && $0["cog"] is Int && $0["acc"] is Int }
        #expect(!complete.isEmpty, "locations with speed, course and accuracy")
        #expect(locations.contains { $0.json?["alt"] is Int }, "gpsd's altitude as alt")
        // The same fixes as the live positions, in whole seconds.
        let seconds = locations.compactMap { $0.json?["tst"] as? Int }.map(Int64.init)
        #expect(seconds.count == locations.count)
        try await recorder.waitFor("the same fixes on pos", timeoutS: 10) { messages in
            let reported = Set(ReceivedPositions.all(messages, topic: unit.topicBase + "pos").flatMap { $0.points.map { $0.t / 1000 } })
            return seconds.allSatisfy(reported.contains)
        }

        let latecomer = try await MQTTRecorder(port: broker.port, subscribe: [topic])
        let retained = try await latecomer.waitFor("the retained location", timeoutS: 5) { !$0.isEmpty }
        let again = try #require(retained.first)
        #expect(again.retained)
        #expect(again.json?["_type"] as? String == "location")
        unit.stop()
    }
}
