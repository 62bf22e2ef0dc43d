import ControlSocket
import Foundation
import MQTTLink
import TaxiProtocol
import TestHarness
import Testing
import UnitCore

/// A fleet document acknowledged `applied` is in force without a restart, on the real parts: a
/// replayed receiver, mosquitto, the daemon and its status (`taxiunitctl status`). Each key below once was acknowledged and then ignored
/// until the next start.
@Suite(.serialized) struct SettingsInForceFlowTests {
    @Test func reportingPrivacyZonesJobTimingsAndTheStoreBoundChangeOnTheSpot() async throws {
        let gpsScratch = try ScratchDirectory()
        let gps = try FakeGPS(log: Corpus.log(Corpus.steadyLog), in: gpsScratch, cycleS: 0.05)
        let setup = try await FleetControlFlowTests.Setup(gpsdPort: gps.port)
        let unit = setup.unit
        let feed = try await MQTTRecorder(port: setup.broker.port, subscribe: [unit.topicBase + "pos", unit.topicBase + "event", unit.topicBase + "job/reply"])
        func live() -> [ReceivedPositions] { ReceivedPositions.all(feed.messages, topic: unit.topicBase + "pos").filter { !$0.backfill } }
        try await unit.waitForStatus("fixes arriving") { $0.gps.lastFixTime != nil }

        // A position a minute: the receiver stands still, so only time would report it.
        try setup.push(1, #"{"reporting":{"interval_s":60}}"#)
        try await setup.waitForAck("v1 applied", FleetControlFlowTests.ack(1, "applied"))
        try await Task.sleep(for: .seconds(3))
        let slow = live().count
        try await Task.sleep(for: .seconds(6))
        #expect(live().count - slow <= 1, "at most one live position in 6 s at one a minute")

        // One a second, acknowledged and in force: no restart.
        try setup.push(2, #"{"reporting":{"interval_s":1}}"#)
        try await setup.waitForAck("v2 applied", FleetControlFlowTests.ack(2, "applied"))
        // The retained status names the version in force at once, not at the next state change.
        try await setup.recorder.waitFor("the status with version 2") { messages in
            messages.last { $0.topic == unit.topicBase + "status" }?.json.flatMap { $0["config_versions"] as? [String: Int] } == ["fleet": 2]
        }
        let fast = live().count
        try await feed.waitFor("five live positions at one a second", timeoutS: 30) { _ in live().count - fast >= 5 }

        // Off duty, positions private: nothing is stored or published after the ack.
        try setup.push(3, #"{"reporting":{"interval_s":1},"privacy":{"off_duty_positions":false}}"#)
        try await setup.waitForAck("v3 applied", FleetControlFlowTests.ack(3, "applied"))
        #expect(try unit.status().state == "off_duty")
        // Fixes received before the ack may still be committed by the position commit window.
        try await Task.sleep(for: .seconds(2))
        let stored = try unit.status().storedPositions
        let published = live().count
        try await Task.sleep(for: .seconds(5))
        #expect(try unit.status().storedPositions == stored, "no fix stored while private")
        #expect(live().count == published, "no position published while private")
        #expect(gps.process.isRunning, "the receiver kept sending")

        // On duty the taxi reports again; a zone drawn around it by the fleet is entered at once.
        _ = try unit.request(ControlRequest(cmd: .press, input: "duty"))
        let onDuty = live().count
        try await feed.waitFor("a position on duty", timeoutS: 30) { _ in live().count > onDuty }
        let here: PositionPoint = try #require(live().last?.points.last)
        let (south, north, west, east) = (here.lat - 0.01, here.lat + 0.01, here.lon - 0.01, here.lon + 0.01)
        let polygon = "[\(south),\(west)],[\(south),\(east)],[\(north),\(east)],[\(north),\(west)]"
        try setup.push(4, #"{"reporting":{"interval_s":1},"zones":[{"id":"Z9","polygon":[\#(polygon)]}],"job":{"offer_timeout_s":3}}"#)
        try await setup.waitForAck("v4 applied", FleetControlFlowTests.ack(4, "applied"))
        try await feed.waitFor("the zone entered", timeoutS: 30) { messages in
            messages.contains { $0.topic == unit.topicBase + "event" && $0.json?["type"] as? String == "zone" && $0.json?["zone"] as? String == "Z9" }
        }
        try await unit.waitForStatus("the status names the zone") { $0.zone == "Z9" }

        // The fleet's answer window: an offer without its own is refused after 3 s, not 60.
        try feed.publish(unit.topicBase + "job/offer", #"{"job":"J-T","pickup":{"lat":1,"lon":1,"address":"Somewhere"}}"#)
        try await feed.waitFor("the timeout reply", timeoutS: 30) { messages in
            messages.contains { $0.topic == unit.topicBase + "job/reply" && $0.json?["job"] as? String == "J-T" && $0.json?["reply"] as? String == "timeout" }
        }

        // The store held to a tenth of a megabyte: the bound the status names, and the stored
        // history, which the receiver keeps filling, cut down to it.
        let unbounded = try unit.status()
        #expect(try #require(unbounded.store?.limitBytes) > 1 << 20, "the default 64 MB, or the filesystem's share")
        try setup.push(5, #"{"reporting":{"interval_s":1},"store":{"max_mb":0.1}}"#)
        try await setup.waitForAck("v5 applied", FleetControlFlowTests.ack(5, "applied"))
        let bounded = try await unit.waitForStatus("the bound of 0.1 MB") { $0.store.map { $0.limitBytes <= 104_858 } ?? false }
        #expect(bounded.runningForS ?? 0 > unbounded.runningForS ?? .infinity, "no restart")
        try await unit.waitForStatus("history removed to the bound") { $0.storedPositions < unbounded.storedPositions }
        unit.stop()
        feed.stop()
        gps.stop()
    }
}
