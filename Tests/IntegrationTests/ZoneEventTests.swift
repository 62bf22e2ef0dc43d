import Foundation
import MQTTLink
import TestHarness
import Testing

/// Zone changes on the real parts: gpsfake replays the demo's drive through Midtown Manhattan, the
/// unit has the demo's zones, and mosquitto carries `"type":"zone"` events (docs/protocol.md,
/// "Zone changes") together with a retained status that names the zone.
@Suite(.serialized) struct ZoneEventTests {
    @Test func enteringAndChangingZonesIsPublishedOnEvent() async throws {
        let scratch = try ScratchDirectory("zones")
        let broker = try MosquittoBroker(in: scratch)
        let gps = try FakeGPS(log: Corpus.packageRoot + "/demo/manhattan-midtown.nmea", in: scratch, cycleS: 0.01)
        defer { gps.stop() }
        let zones = try String(contentsOfFile: Corpus.packageRoot + "/demo/zones.toml", encoding: .utf8)
        let unit = try UnitUnderTest(mqttPort: broker.port, gpsdPort: gps.port, in: scratch, extraTOML: zones)
        let recorder = try await MQTTRecorder(port: broker.port, subscribe: [unit.topicBase + "event", unit.topicBase + "status"])
        try await unit.start()
        let event = unit.topicBase + "event"
        func zoneEvents(_ messages: [MQTTMessage]) -> [[String: Any]] {
            messages.filter { $0.topic == event }
                .compactMap { (try? JSONSerialization.jsonObject(with: Data($0.payload))) as? [String: Any] }
                .filter { $0["type"] as? String == "zone" }
        }
        let messages = try await recorder.waitFor("the taxi entered a zone and moved on to another", timeoutS: 60) { messages in
            zoneEvents(messages).contains { $0["zone"] is String && $0["zone_left"] is String }
        }
        let changes = zoneEvents(messages)
        let names = ["garment", "times-square", "murray-hill", "grand-central"]
        #expect(changes.allSatisfy { names.contains($0["zone"] as? String ?? "") || names.contains($0["zone_left"] as? String ?? "") })
        #expect(changes.allSatisfy { $0["unit"] as? String == unit.unitID && $0["id"] is String && $0["seq"] is Int && $0["t"] is Int })
        #expect(changes.allSatisfy { $0["from"] == nil && $0["to"] == nil }, "told apart from transitions")
        let first = try #require(changes.first)
        #expect(first["zone_left"] == nil, "after a start the taxi is in no zone until a fix says so")
        // Each change starts where the previous one ended.
        for (previous, next) in zip(changes, changes.dropFirst()) {
            #expect(next["zone_left"] as? String == previous["zone"] as? String, "\(previous) → \(next)")
        }
        let statuses = messages.filter { $0.topic == unit.topicBase + "status" }
            .compactMap { (try? JSONSerialization.jsonObject(with: Data($0.payload))) as? [String: Any] }
        #expect(statuses.contains { $0["zone"] as? String == first["zone"] as? String }, "the retained status names the zone")
        #expect(try ContractCheck.problems(in: messages).isEmpty)
        unit.stop()
    }
}
