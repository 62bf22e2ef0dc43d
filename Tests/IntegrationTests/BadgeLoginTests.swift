import ControlSocket
import FleetControl
import Foundation
import MQTTLink
import TestHarness
import Testing

/// A badge reader on the real parts: the daemon reads a FIFO standing in for the reader's evdev
/// device, the badge list comes as a signed fleet configuration hashed by `taxiunitctl hash-pin`.
@Suite(.serialized) struct BadgeLoginTests {
    static let badge = "0004279"

    @Test func aKnownBadgeLogsItsDriverInAndAnUnknownOneIsRefused() async throws {
        let scratch = try ScratchDirectory()
        let signer = try FleetSigner(in: scratch)
        let broker = try MosquittoBroker(in: scratch)
        let fifo = try EvdevFIFO(path: scratch.file("badge-kbd"))
        let unit = try UnitUnderTest(
            mqttPort: broker.port, gpsdPort: try Loopback.freePort(), in: scratch,
            extraTOML: signer.fleetSection() + "[input.badge]\ndevice = \"\(fifo.path)\"\n[driver]\nrequire_login = true\n")
        let recorder = try await MQTTRecorder(port: broker.port, subscribe: [unit.topicBase + "#"])
        defer {
            unit.stop()
            recorder.stop()
        }
        func statuses() -> [[String: Any]] { recorder.messages(onTopic: unit.topicBase + "status").compactMap(\.json) }
        try await unit.start()
        try await unit.waitForStatus("broker connected") { $0.broker.connected }
        try await fifo.connect()

        // The fleet's tool hashes the badge number, read from standard input.
        let (hashed, code) = try runCommand("/bin/sh", ["-c", "echo \(Self.badge) | '\(Corpus.binary("taxiunitctl"))' hash-pin --badge --rounds 1000"])
        #expect(code == 0)
        let credential = hashed.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(credential.hasPrefix("pbkdf2-sha256$1000$") && !credential.contains(Self.badge))
        let topic = "taxi/\(unit.fleet)/config"
        let document = #"{"version":1,"settings":{"driver":{"badges":{"\#(credential)":"D-42"}}}}"#
        try recorder.publish(topic, try signer.sign(document, topic: topic), retain: true)
        try await recorder.waitFor("the config applied") { _ in
            recorder.messages(onTopic: unit.topicBase + "config/ack").compactMap(\.json).contains { $0["result"] as? String == "applied" }
        }

        // A badge not on the list: refused, counted, nobody logged in.
        try fifo.send(EvdevFIFO.badgeTyped("0004278"))
        try await waitUntil("the unknown badge refused", timeoutS: 10) { unit.log.contains("badge read: Wrong driver or PIN") }
        #expect(try unit.request(ControlRequest(cmd: .press, input: "duty")).message == "Log in first")

        try fifo.send(EvdevFIFO.badgeTyped(Self.badge))
        try await recorder.waitFor("the status names the badge's driver") { _ in statuses().last?["driver"] as? String == "D-42" }
        #expect(try unit.request(ControlRequest(cmd: .press, input: "duty")).message?.hasPrefix("On duty") == true)
        // On duty, a badge changes nothing.
        try fifo.send(EvdevFIFO.badgeTyped(Self.badge))
        try await waitUntil("the badge refused on duty", timeoutS: 10) { unit.log.contains("badge read: A driver is logged in") }
        #expect(try unit.status().state == "available")
        #expect(!unit.log.contains(Self.badge) && !unit.log.contains("0004278"), "badge numbers are never logged")
    }

    /// `[input.badge] pin = true`: the badge names the driver, the terminal asks that driver's PIN.
    @Test func withAPINTheTerminalAsksTheBadgesDriverForIt() async throws {
        let scratch = try ScratchDirectory()
        let fifo = try EvdevFIFO(path: scratch.file("badge-kbd"))
        let pin = try #require(DriverRoster.hash(pin: DriverIdentityTests.pin, rounds: 1000)).text
        let badge = try #require(DriverRoster.hash(pin: Self.badge, rounds: 1000)).text
        let rig = try await DriverIdentityTests.Rig(scratch: scratch, extraTOML: """
            [input.badge]
            device = "\(fifo.path)"
            pin = true
            [driver]
            drivers = { "D-42" = "\(pin)" }
            badges = { "\(badge)" = "D-42" }

            """)
        try await fifo.connect()
        try await rig.screen.waitFor("off duty") { $0.rows[0].hasPrefix("OFF DUTY") }
        try fifo.send(EvdevFIFO.badgeTyped(Self.badge))
        try await rig.screen.waitFor("the PIN of the badge's driver asked") {
            $0.rows[0].hasPrefix("LOGIN") && $0.rows[1].hasPrefix("Driver D-42 ") && $0.rows[2].hasPrefix("PIN _")
        }
        #expect(rig.jsons("status").last?["driver"] == nil, "a badge alone is not a login here")
        for key in DriverIdentityTests.pin.map(String.init) + ["\r"] { try await rig.screen.press(key) }
        try await rig.waitForStatus("logged in") { $0["driver"] as? String == "D-42" }
        #expect(!rig.unit.log.contains(Self.badge) && !rig.unit.log.contains(DriverIdentityTests.pin))
        rig.stop()
    }
}
