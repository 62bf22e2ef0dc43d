import Foundation
import TestHarness
import Testing

/// With `[owntracks]`, a unit that stops cleanly says so on its OwnTracks topic: `_type: lwt`, not
/// retained, its `tst` the time its connection began (docs/protocol.md, "OwnTracks").
@Suite struct OwnTracksGoodbyeTests {
    @Test func aCleanStopSaysLwtOnTheOwnTracksTopic() async throws {
        let scratch = try ScratchDirectory()
        let broker = try MosquittoBroker(in: scratch)
        let gps = try FakeGPS(log: Corpus.log(Corpus.steadyLog), in: scratch, cycleS: 0.02)
        let unit = try UnitUnderTest(
            mqttPort: broker.port, gpsdPort: gps.port, in: scratch, extraTOML: "[owntracks]\nenabled = true\n", reportingIntervalS: 0)
        let topic = "owntracks/\(unit.fleet)/\(unit.unitID)"
        let recorder = try await MQTTRecorder(port: broker.port, subscribe: [topic, unit.topicBase + "status"])
        let startedS = Int(Date().timeIntervalSince1970)
        try await unit.start()
        _ = try await recorder.waitFor("a location") { $0.contains { $0.topic == topic && $0.json?["_type"] as? String == "location" } }
        unit.stop()
        let messages = try await recorder.waitFor("the lwt") { $0.contains { $0.topic == topic && $0.json?["_type"] as? String == "lwt" } }
        let lwt = try #require(messages.last { $0.topic == topic && $0.json?["_type"] as? String == "lwt" })
        #expect(try ContractCheck.problems(in: [lwt]).isEmpty)
        #expect(!lwt.retained)
        let tst = try #require(lwt.json?["tst"] as? Int)
        #expect(tst >= startedS - 1 && tst <= Int(Date().timeIntervalSince1970), "\(tst)")
        // Then the offline status, as before.
        #expect(messages.contains { $0.topic == unit.topicBase + "status" && $0.json?["online"] as? Bool == false })
        // The retained location stays where the taxi was.
        let latecomer = try await MQTTRecorder(port: broker.port, subscribe: [topic])
        let retained = try await latecomer.waitFor("the retained location", timeoutS: 5) { !$0.isEmpty }
        #expect(retained.first?.json?["_type"] as? String == "location")
        latecomer.stop()
        recorder.stop()
    }
}
