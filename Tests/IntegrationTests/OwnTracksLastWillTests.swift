import Foundation
import MQTTLink
import TestHarness
import Testing

/// With `[owntracks]`, the feed's own connection carries OwnTracks' `lwt` as its will, so the broker
/// says the taxi is gone however the unit went: `_type: lwt`, not retained, its `tst` the time the
/// feed's connection began (docs/protocol.md, "OwnTracks").
@Suite(.serialized) struct OwnTracksLastWillTests {
    let scratch: ScratchDirectory
    let broker: MosquittoBroker
    let gps: FakeGPS

    init() throws {
        scratch = try ScratchDirectory()
        broker = try MosquittoBroker(in: scratch)
        gps = try FakeGPS(log: Corpus.log(Corpus.steadyLog), in: scratch, cycleS: 0.02)
    }

    func unit(protocol version: String = "5") throws -> UnitUnderTest {
        try UnitUnderTest(
            mqttPort: broker.port, gpsdPort: gps.port, in: scratch, extraTOML: "[owntracks]\nenabled = true\n",
            reportingIntervalS: 0, mqttTOML: "protocol = \"\(version)\"")
    }

    static func isLWT(_ message: MQTTMessage, on topic: String) -> Bool {
        message.topic == topic && message.json?["_type"] as? String == "lwt"
    }

    /// A clean stop has the broker say it once, on MQTT 5 (DISCONNECT with will) and on 3.1.1 alike.
    @Test(arguments: ["5", "3.1.1"]) func aCleanStopSaysLwtOnce(protocol version: String) async throws {
        let unit = try unit(protocol: version)
        let topic = "owntracks/\(unit.fleet)/\(unit.unitID)"
        let recorder = try await MQTTRecorder(port: broker.port, subscribe: [topic, unit.topicBase + "status"])
        let startedS = Int(Date().timeIntervalSince1970)
        try await unit.start()
        _ = try await recorder.waitFor("a location") { $0.contains { $0.topic == topic && $0.json?["_type"] as? String == "location" } }
        unit.stop()
        let messages = try await recorder.waitFor("the lwt") { $0.contains { Self.isLWT($0, on: topic) } }
        let lwt = try #require(messages.last { Self.isLWT($0, on: topic) })
        #expect(try ContractCheck.problems(in: [lwt]).isEmpty)
        #expect(!lwt.retained)
        let tst = try #require(lwt.json?["tst"] as? Int)
        #expect(tst >= startedS - 1 && tst <= Int(Date().timeIntervalSince1970), "\(tst)")
        // The unit's own goodbye, on its own connection.
        #expect(messages.contains { $0.topic == unit.topicBase + "status" && $0.json?["online"] as? Bool == false })
        // Once: a second would come with the closed connection, at once.
        try await Task.sleep(for: .seconds(2))
        #expect(recorder.messages.filter { Self.isLWT($0, on: topic) }.count == 1, "\(recorder.messages(onTopic: topic).map(\.text))")
        // The retained location stays where the taxi was.
        let latecomer = try await MQTTRecorder(port: broker.port, subscribe: [topic])
        let retained = try await latecomer.waitFor("the retained location", timeoutS: 5) { !$0.isEmpty }
        #expect(retained.first?.json?["_type"] as? String == "location")
        latecomer.stop()
        recorder.stop()
    }

    /// A fleet document that moves the unit to another broker moves the feed too: the maps on the
    /// old broker hear the taxi is gone, those on the new one get its locations.
    @Test func theFeedFollowsTheUnitToAnotherBroker() async throws {
        let next = try MosquittoBroker(in: scratch)
        let signer = try FleetSigner(in: scratch)
        let unit = try UnitUnderTest(
            mqttPort: broker.port, gpsdPort: gps.port, in: scratch,
            extraTOML: "[owntracks]\nenabled = true\n" + signer.fleetSection(), reportingIntervalS: 0)
        let topic = "owntracks/\(unit.fleet)/\(unit.unitID)"
        let configTopic = "taxi/\(unit.fleet)/config"
        let document = try signer.sign(#"{"version":1,"settings":{"mqtt":{"port":\#(next.port)}}}"#, topic: configTopic)
        // The fleet's retained document on the new broker too, so the move is kept.
        let atNext = try await MQTTRecorder(port: next.port, subscribe: [topic])
        try atNext.publish(configTopic, document, retain: true)
        let atHome = try await MQTTRecorder(port: broker.port, subscribe: [topic])
        try await unit.start()
        _ = try await atHome.waitFor("a location at home") { $0.contains { $0.json?["_type"] as? String == "location" } }
        try atHome.publish(configTopic, document, retain: true)
        _ = try await atHome.waitFor("the lwt at home") { $0.contains { Self.isLWT($0, on: topic) } }
        _ = try await atNext.waitFor("a location on the new broker") { $0.contains { $0.topic == topic && $0.json?["_type"] as? String == "location" } }
        try await unit.waitForStatus("on the new broker") { $0.broker.connected && $0.config?.broker == "127.0.0.1:\(next.port)" }
        #expect(!atNext.messages.contains { Self.isLWT($0, on: topic) })
        unit.stop()
        atHome.stop()
        atNext.stop()
    }

    /// kill -9: nothing of the unit runs, the broker says it.
    @Test func aKilledUnitIsAnnouncedGoneByTheBroker() async throws {
        let unit = try unit()
        let topic = "owntracks/\(unit.fleet)/\(unit.unitID)"
        let recorder = try await MQTTRecorder(port: broker.port, subscribe: [topic, unit.topicBase + "status"])
        let startedS = Int(Date().timeIntervalSince1970)
        try await unit.start()
        _ = try await recorder.waitFor("a location") { $0.contains { $0.topic == topic && $0.json?["_type"] as? String == "location" } }
        #expect(!recorder.messages.contains { Self.isLWT($0, on: topic) })
        // Two connections, each on a loop thread of its own, told apart by name.
        let pid = try #require(unit.process?.pid)
        let tasks = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")
        let threads = tasks.compactMap { try? String(contentsOfFile: "/proc/\(pid)/task/\($0)/comm", encoding: .utf8) }.map { $0.trimmingCharacters(in: .newlines) }
        #expect(threads.contains("mqtt-loop") && threads.contains("mqtt-owntracks"), "\(threads)")
        unit.killHard()
        let messages = try await recorder.waitFor("the lwt from the broker") { $0.contains { Self.isLWT($0, on: topic) } }
        let lwt = try #require(messages.last { Self.isLWT($0, on: topic) })
        #expect(try ContractCheck.problems(in: [lwt]).isEmpty)
        #expect(!lwt.retained)
        let tst = try #require(lwt.json?["tst"] as? Int)
        #expect(tst >= startedS - 1 && tst <= Int(Date().timeIntervalSince1970), "\(tst)")
        // The unit's own will is untouched: its status goes offline too.
        _ = try await recorder.waitFor("the status will") { $0.contains { $0.topic == unit.topicBase + "status" && $0.json?["online"] as? Bool == false } }
        recorder.stop()
    }
}

/// Where the client certificate is the login (mosquitto's `use_identity_as_username`), the feed
/// connects over the unit's TLS settings with a certificate of its own: the unit's would log it in as
/// the unit, and the two connections would throw each other out.
@Suite(.serialized) struct OwnTracksFeedCertificateTests {
    @Test func theFeedUsesItsOwnCertificateAndLeavesTheUnitsSessionAlone() async throws {
        let scratch = try ScratchDirectory()
        let pki = try TestCertificates(in: scratch)
        let broker = try MosquittoBroker(in: scratch, listenerSettings: pki.brokerSettings + "\nuse_identity_as_username true\nuse_username_as_clientid true")
        let gps = try FakeGPS(log: Corpus.log(Corpus.steadyLog), in: scratch, cycleS: 0.05)
        let unit = try UnitUnderTest(
            mqttPort: broker.port, gpsdPort: gps.port, in: scratch,
            extraTOML: "[owntracks]\nenabled = true\ncertfile = \"\(pki.feedCertFile)\"\nkeyfile = \"\(pki.feedKeyFile)\"\n", reportingIntervalS: 0.2,
            mqttTOML: "tls = true\ncafile = \"\(pki.caFile)\"\ncertfile = \"\(pki.clientCertFile)\"\nkeyfile = \"\(pki.clientKeyFile)\"")
        let topic = "owntracks/\(unit.fleet)/\(unit.unitID)"
        let observer = try await Account(
            "observer", port: broker.port,
            tls: MQTTTLS(caFile: pki.caFile, certFile: pki.observerCertFile, keyFile: pki.observerKeyFile, version: "tlsv1.2"),
            subscribe: [topic, unit.topicBase + "status"])
        try await unit.start()
        try await waitUntil("a location over the feed's TLS connection", timeoutS: 30, detail: { unit.log + broker.log }) {
            observer.messages.contains { $0.topic == topic && $0.json?["_type"] as? String == "location" }
        }
        #expect(broker.log.contains("u'\(unit.fleet)/\(unit.unitID)'"), "the feed logged in as its certificate's CN: \(broker.log)")
        // Long enough for connections that took each other's session over to do it again and again.
        try await Task.sleep(for: .seconds(3))
        #expect(try unit.status().broker.connected)
        #expect(!broker.log.contains("already connected, closing old connection"), "\(broker.log)")
        #expect(observer.messages.filter { $0.topic == unit.topicBase + "status" }.allSatisfy { $0.json?["online"] as? Bool == true })
        unit.killHard()
        try await waitUntil("the broker's lwt", timeoutS: 20) {
            observer.messages.contains { $0.topic == topic && $0.json?["_type"] as? String == "lwt" }
        }
        observer.stop()
    }

    /// `taxiunitd --check` reads the feed's certificate and key as it reads the unit's, naming them
    /// by their section.
    @Test func checkReadsTheFeedsCertificate() throws {
        let scratch = try ScratchDirectory()
        let pki = try TestCertificates(in: scratch)
        func check(feedCertFile: String, feedKeyFile: String) throws -> (output: String, exitCode: Int32) {
            let unit = try UnitUnderTest(
                mqttPort: try Loopback.freePort(), gpsdPort: try Loopback.freePort(), in: scratch,
                extraTOML: "[owntracks]\nenabled = true\ncertfile = \"\(feedCertFile)\"\nkeyfile = \"\(feedKeyFile)\"\n",
                mqttTOML: "tls = true\ncafile = \"\(pki.caFile)\"\ncertfile = \"\(pki.clientCertFile)\"\nkeyfile = \"\(pki.clientKeyFile)\"")
            return try runCommand(Corpus.binary("taxiunitd"), ["--config", unit.configPath, "--check"])
        }
        let good = try check(feedCertFile: pki.feedCertFile, feedKeyFile: pki.feedKeyFile)
        #expect(good.exitCode == 0, "\(good.output)")
        let mismatched = try check(feedCertFile: pki.feedCertFile, feedKeyFile: pki.clientKeyFile)
        #expect(mismatched.exitCode == 1)
        #expect(mismatched.output.contains("owntracks.keyfile \(pki.clientKeyFile) does not belong to the certificate in owntracks.certfile \(pki.feedCertFile)"), "\(mismatched.output)")
        let missing = scratch.file("no-feed.crt")
        let absent = try check(feedCertFile: missing, feedKeyFile: pki.feedKeyFile)
        #expect(absent.exitCode == 1)
        #expect(absent.output.contains("owntracks.certfile \(missing): no such file"), "\(absent.output)")
    }
}
