import ControlSocket
import Foundation
import MQTTLink
import TaxiProtocol
import TestHarness
import Testing

/// Broadcasts on the real parts (docs/protocol.md, "Broadcasts"): mosquitto with the shipped ACL,
/// two daemons logged in as their units, gpsfake placing one in Manhattan and one in Iowa, and the
/// dispatcher's account publishing on the fleet's and the zones' topics.
@Suite(.serialized) struct BroadcastFlowTests {
    static let zones = """
        [[zones]]
        id = "midtown"
        polygon = \(Self.polygon(around: 40.757, -73.9835))

        [[zones]]
        id = "ames"
        polygon = \(Self.polygon(around: 41.575, -93.75))
        """

    static func polygon(around lat: Double, _ lon: Double) -> String {
        "[" + DispatchSimUnderTest.square(around: lat, lon, halfSideDeg: 0.03).map { "[\($0.0), \($0.1)]" }.joined(separator: ", ") + "]"
    }

    static func topic(zone: String? = nil) -> String {
        zone.map { ContractTopic.zoneMsg.topic(prefix: "taxi", fleet: "north", unit: "", zone: $0) }
            ?? ContractTopic.fleetMsg.topic(prefix: "taxi", fleet: "north", unit: "")
    }

    /// Presses `msg` until the message screen closes: every unread message in turn (with none
    /// unread, the newest), as the driver reads them.
    static func readAll(_ unit: UnitUnderTest) throws -> [String] {
        var read: [String] = []
        for _ in 0..<10 {
            let response = try unit.request(ControlRequest(cmd: .press, input: "msg"))
            guard response.ok else { throw HarnessError("\(unit.unitID) msg: \(response.error ?? "refused")") }
            guard let told = response.message, !told.isEmpty else { return read }
            read.append(told)
        }
        return read
    }

    /// How often the unit logged a broadcast received on `topic` (`fleet msg`, `zone msg`) for `zone`.
    static func received(_ unit: UnitUnderTest, _ name: ContractTopic, zone: String = "") -> Int {
        unit.log.split(separator: "\n").count { $0.contains(" received ") && $0.contains("topic=\(name.rawValue)") && $0.contains("zone=\(zone)") }
    }

    @Test func fleetAndZoneBroadcastsReachTheUnitsTheyAreFor() async throws {
        let scratch = try ScratchDirectory("broadcasts")
        let broker = try exampleBroker(in: scratch, accounts: ["T1", "T2", "dispatcher", "observer"], extraACL: "user observer\ntopic read #")
        let manhattan = Corpus.packageRoot + "/demo/manhattan-midtown.nmea"
        let gps1 = try FakeGPS(log: manhattan, in: scratch, cycleS: 0.05)
        defer { gps1.stop() }
        let gps2 = try FakeGPS(log: Corpus.log(Corpus.steadyLog), in: scratch, cycleS: 0.1)
        defer { gps2.stop() }
        func unit(_ id: String, gps: FakeGPS) throws -> UnitUnderTest {
            let password = scratch.file("\(id).password")
            try "pw-\(id)\n".write(toFile: password, atomically: true, encoding: .utf8)
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: password)
            return try UnitUnderTest(
                unitID: id, fleet: "north", mqttPort: broker.port, gpsdPort: gps.port, in: scratch, extraTOML: Self.zones,
                mqttTOML: "username = \"\(id)\"\npassword_file = \"\(password)\"")
        }
        let t1 = try unit("T1", gps: gps1)
        let t2 = try unit("T2", gps: gps2)
        let observer = try await Account("observer", port: broker.port, subscribe: ["taxi/north/+/msg/read"])
        let dispatcher = try await Account("dispatcher", port: broker.port)
        func receipts(_ unit: UnitUnderTest) -> [String] {
            observer.messages.filter { $0.topic == unit.topicBase + "msg/read" }.compactMap { $0.json?["msg"] as? String }
        }
        func nowMs() -> Int64 { TestClock.milliseconds() }

        try await t1.start()
        try await t2.start()
        defer {
            t1.stop()
            t2.stop()
        }
        try await t1.waitForStatus("T1 in midtown", timeoutS: 30) { $0.zone == "midtown" && $0.broker.connected }
        try await t2.waitForStatus("T2 in ames", timeoutS: 30) { $0.zone == "ames" && $0.broker.connected }

        // The fleet's broadcast reaches both; each driver reads it once, each unit sends one receipt.
        try dispatcher.publish(Self.topic(), #"{"id":"all-1","text":"Office closes at six","t":\#(nowMs())}"#)
        try await waitUntil("both units got the fleet's broadcast", timeoutS: 20) {
            Self.received(t1, .fleetMsg) == 1 && Self.received(t2, .fleetMsg) == 1
        }
        #expect(try Self.readAll(t1) == ["Message all-1 (1/1): Office closes at six"])
        #expect(try Self.readAll(t2) == ["Message all-1 (1/1): Office closes at six"])
        // Delivered again: neither kept nor shown again, and no second receipt.
        try dispatcher.publish(Self.topic(), #"{"id":"all-1","text":"Office closes at six","t":\#(nowMs())}"#)
        try await waitUntil("the copy received", timeoutS: 20) { Self.received(t1, .fleetMsg) == 2 && Self.received(t2, .fleetMsg) == 2 }
        // Nothing unread: `msg` opens the newest, still the one message kept.
        #expect(try Self.readAll(t1) == ["Message all-1 (1/1): Office closes at six"])
        #expect(try Self.readAll(t2) == ["Message all-1 (1/1): Office closes at six"])
        try await waitUntil("a receipt from each unit", timeoutS: 20) { receipts(t1) == ["all-1"] && receipts(t2) == ["all-1"] }

        // A zone's broadcast reaches only the unit in that zone: T2 gets the fleet's next one, not it.
        try dispatcher.publish(Self.topic(zone: "midtown"), #"{"id":"mid-1","text":"Fair on 5th Avenue"}"#)
        try dispatcher.publish(Self.topic(), #"{"id":"all-2","text":"Shift change"}"#)
        try await waitUntil("both got the fleet's next broadcast", timeoutS: 20) { Self.received(t1, .fleetMsg) == 3 && Self.received(t2, .fleetMsg) == 3 }
        #expect(Self.received(t1, .zoneMsg, zone: "midtown") == 1)
        #expect(Self.received(t2, .zoneMsg, zone: "midtown") == 0)
        #expect(try Self.readAll(t1).map { $0.prefix(10) } == ["Message mi", "Message al"])
        #expect(try Self.readAll(t2).map { $0.prefix(10) } == ["Message al"])
        try await waitUntil("T1's receipts", timeoutS: 20) { receipts(t1) == ["all-1", "mid-1", "all-2"] }

        // A retained broadcast (a dispatcher's mistake): the broker repeats it at every subscription.
        _ = try dispatcher.connection.publish(
            topic: Self.topic(zone: "midtown"), payload: Array(#"{"id":"kept-1","text":"Old news"}"#.utf8), qos: 1, retain: true)
        try await waitUntil("T1 got it live", timeoutS: 20) { Self.received(t1, .zoneMsg, zone: "midtown") == 2 }

        // T2 drives into midtown (gpsd now replays the Manhattan drive): it leaves ames's topic and
        // takes midtown's next broadcast, but not the retained one nor any sent before it came.
        gps2.stop()
        let port2 = gps2.port
        let gps3 = try await offThePool { try FakeGPS(log: manhattan, in: scratch, cycleS: 0.05, port: port2) }
        defer { gps3.stop() }
        try await t2.waitForStatus("T2 in midtown", timeoutS: 30) { $0.zone == "midtown" }
        try await waitUntil("the retained broadcast refused", timeoutS: 20, detail: { t2.log }) {
            t2.log.contains("retained zone midtown broadcast kept-1 ignored")
        }
        try dispatcher.publish(Self.topic(zone: "midtown"), #"{"id":"mid-2","text":"Concert ends at ten"}"#)
        try dispatcher.publish(Self.topic(zone: "ames"), #"{"id":"ames-1","text":"Road works"}"#)
        try dispatcher.publish(Self.topic(), #"{"id":"all-3","text":"Good night"}"#)
        try await waitUntil("both got the fleet's last broadcast", timeoutS: 20) { Self.received(t1, .fleetMsg) == 4 && Self.received(t2, .fleetMsg) == 4 }
        #expect(Self.received(t2, .zoneMsg, zone: "ames") == 0, "T2 left ames's topic")
        #expect(try Self.readAll(t2).map { $0.prefix(10) } == ["Message mi", "Message al"])
        try await waitUntil("T2's receipts", timeoutS: 20) { receipts(t2) == ["all-1", "all-2", "mid-2", "all-3"] }
        #expect(receipts(t1).filter { $0 == "all-1" }.count == 1)
        #expect(!t1.log.contains("not authorised") && !t2.log.contains("not authorised"))
        observer.stop()
        dispatcher.stop()
    }

    /// A fleet document that removes the zone the taxi is in takes it off that zone's topic at once,
    /// not at the next fix: here there is none, gpsd having stopped.
    @Test func aZoneTheFleetRemovedIsNoLongerListenedTo() async throws {
        let scratch = try ScratchDirectory("broadcasts-removed-zone")
        let broker = try exampleBroker(
            in: scratch, accounts: ["T1", "dispatcher", "fleet", "observer"], extraACL: "user observer\ntopic read #")
        let gps = try FakeGPS(log: Corpus.packageRoot + "/demo/manhattan-midtown.nmea", in: scratch, cycleS: 0.05)
        defer { gps.stop() }
        let signer = try FleetSigner(in: scratch)
        let password = scratch.file("T1.password")
        try "pw-T1\n".write(toFile: password, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: password)
        let t1 = try UnitUnderTest(
            unitID: "T1", fleet: "north", mqttPort: broker.port, gpsdPort: gps.port, in: scratch,
            extraTOML: Self.zones + "\n" + signer.fleetSection(), mqttTOML: "username = \"T1\"\npassword_file = \"\(password)\"")
        try await t1.start()
        defer { t1.stop() }
        try await t1.waitForStatus("T1 in midtown", timeoutS: 30) { $0.zone == "midtown" && $0.broker.connected }
        gps.stop()
        let observer = try await Account("observer", port: broker.port, subscribe: [t1.topicBase + "#"])
        defer { observer.stop() }
        let fleet = try await Account("fleet", port: broker.port)
        defer { fleet.stop() }
        let configTopic = t1.topicBase + "config"
        let onlyAmes = #"{"version":1,"settings":{"zones":[{"id":"ames","polygon":\#(Self.polygon(around: 41.575, -93.75))}]}}"#
        try fleet.publish(configTopic, try signer.sign(onlyAmes, topic: configTopic))
        try await waitUntil("T1 left midtown's broadcasts", timeoutS: 20, detail: { t1.log }) {
            t1.log.contains("left a zone's broadcasts")
        }
        // The unit's packets reach the broker in order: once an event it sent after leaving has
        // arrived, the broker has taken the unsubscription.
        let events = observer.messages.count { $0.topic == t1.topicBase + "event" }
        #expect(try t1.request(ControlRequest(cmd: .press, input: "duty")).ok)
        try await waitUntil("T1's next event", timeoutS: 20) { observer.messages.count { $0.topic == t1.topicBase + "event" } > events }
        let dispatcher = try await Account("dispatcher", port: broker.port)
        defer { dispatcher.stop() }
        try dispatcher.publish(Self.topic(zone: "midtown"), #"{"id":"mid-1","text":"Midtown only"}"#)
        try dispatcher.publish(Self.topic(), #"{"id":"all-1","text":"Everyone"}"#)
        try await waitUntil("the fleet's broadcast, sent after the zone's", timeoutS: 20, detail: { t1.log }) { Self.received(t1, .fleetMsg) > 0 }
        #expect(Self.received(t1, .zoneMsg, zone: "midtown") == 0)
    }

    /// A broker that died lost the unit's session and its subscriptions: at the next connection the
    /// unit subscribes again to the zone it is in, not only to its own topics.
    @Test func aUnitWhoseSessionTheBrokerLostListensToItsZoneAgain() async throws {
        let scratch = try ScratchDirectory("broadcasts-reconnect")
        let broker = try exampleBroker(in: scratch, accounts: ["T1", "dispatcher"], extraACL: "")
        let gps = try FakeGPS(log: Corpus.packageRoot + "/demo/manhattan-midtown.nmea", in: scratch, cycleS: 0.05)
        defer { gps.stop() }
        let password = scratch.file("T1.password")
        try "pw-T1\n".write(toFile: password, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: password)
        let t1 = try UnitUnderTest(
            unitID: "T1", fleet: "north", mqttPort: broker.port, gpsdPort: gps.port, in: scratch, extraTOML: Self.zones,
            mqttTOML: "username = \"T1\"\npassword_file = \"\(password)\"")
        try await t1.start()
        defer { t1.stop() }
        try await t1.waitForStatus("T1 in midtown", timeoutS: 30) { $0.zone == "midtown" && $0.broker.connected }
        func connections() -> Int { t1.log.split(separator: "\n").count { $0.contains("connected to broker") } }
        #expect(connections() == 1)

        broker.killHard()
        try broker.start()
        try await waitUntil("T1 connected again", timeoutS: 30, detail: { t1.log }) { connections() == 2 }
        let dispatcher = try await Account("dispatcher", port: broker.port)
        defer { dispatcher.stop() }
        // The unit's SUBSCRIBE and this publish race on two connections: sent again until it is in
        // (the unit keeps it once).
        var polls = 0
        try await waitUntil("the zone's broadcast received after the reconnect", timeoutS: 20, detail: { t1.log }) {
            if polls % 10 == 0 { try dispatcher.publish(Self.topic(zone: "midtown"), #"{"id":"mid-9","text":"Back online"}"#) }
            polls += 1
            return Self.received(t1, .zoneMsg, zone: "midtown") > 0
        }
        #expect(try Self.readAll(t1).map { $0.prefix(13) } == ["Message mid-9"])
    }
}

