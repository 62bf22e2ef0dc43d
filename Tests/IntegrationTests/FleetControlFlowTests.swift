import ControlSocket
import Foundation
import MQTTLink
import TaxiProtocol
import TestHarness
import Testing
import UnitCore

/// Fleet configuration and commands on the real parts: mosquitto, the daemon, taxiunitctl signing.
@Suite(.serialized) struct FleetControlFlowTests {
    /// One broker, one unit trusting one fleet key, and a recorder of what the unit answers.
    struct Setup {
        let scratch: ScratchDirectory
        let broker: MosquittoBroker
        let signer: FleetSigner
        let unit: UnitUnderTest
        let recorder: MQTTRecorder

        init(rollbackAfterS: Double = 120, gpsdPort: Int? = nil) async throws {
            scratch = try ScratchDirectory()
            broker = try MosquittoBroker(in: scratch)
            signer = try FleetSigner(in: scratch)
            unit = try UnitUnderTest(
                mqttPort: broker.port, gpsdPort: try gpsdPort ?? Loopback.freePort(), in: scratch,
                extraTOML: signer.fleetSection(rollbackAfterS: rollbackAfterS))
            recorder = try await MQTTRecorder(port: broker.port, subscribe: [
                unit.topicBase + "config/ack", unit.topicBase + "cmd/reply", unit.topicBase + "status",
            ])
            try await unit.start()
            try await unit.waitForStatus("connected to the broker") { $0.broker.connected }
        }

        var fleetTopic: String { "taxi/\(unit.fleet)/config" }
        var unitTopic: String { unit.topicBase + "config" }
        var commandTopic: String { unit.topicBase + "cmd" }

        /// Publishes a signed config document, retained as the fleet would.
        func push(_ version: Int, _ settings: String, to topic: String? = nil) throws {
            let topic = topic ?? fleetTopic
            try recorder.publish(topic, try signer.sign(#"{"version":\#(version),"settings":\#(settings)}"#, topic: topic), retain: true)
        }

        var acks: [[String: Any]] { recorder.messages(onTopic: unit.topicBase + "config/ack").compactMap(\.json) }
        var replies: [[String: Any]] { recorder.messages(onTopic: unit.topicBase + "cmd/reply").compactMap(\.json) }

        @discardableResult
        func waitForAck(_ what: String, timeoutS: Double = 20, _ matches: @escaping ([String: Any]) -> Bool) async throws -> [String: Any] {
            try await recorder.waitFor(what, timeoutS: timeoutS) { messages in
                messages.contains { $0.topic == unit.topicBase + "config/ack" && $0.json.map(matches) == true }
            }
            return acks.last(where: matches)!
        }

        @discardableResult
        func waitForReply(_ id: String, timeoutS: Double = 20) async throws -> [String: Any] {
            try await recorder.waitFor("reply to \(id)", timeoutS: timeoutS) { messages in
                messages.contains { $0.topic == unit.topicBase + "cmd/reply" && $0.json?["cmd_id"] as? String == id }
            }
            return replies.last { $0["cmd_id"] as? String == id }!
        }

        func config() throws -> ControlStatus.Config { try #require(try unit.status().config) }

        func remoteSettings() throws -> [String: Any] {
            try #require(try JSONSerialization.jsonObject(with: Data(config().remoteSettings.utf8)) as? [String: Any])
        }

        func command(_ json: String) throws -> String { try signer.sign(json, topic: commandTopic) }

        static var inAMinute: Int64 { TestClock.milliseconds() + 60_000 }
    }

    static func ack(_ version: Int, _ result: String) -> ([String: Any]) -> Bool {
        { $0["version"] as? Int == version && $0["result"] as? String == result }
    }

    @Test func aValidPushIsAppliedAndAcked() async throws {
        let setup = try await Setup()
        try setup.push(1, #"{"reporting":{"interval_s":30},"mqtt":{"max_inflight":4}}"#)
        let ack = try await setup.waitForAck("applied", Self.ack(1, "applied"))
        #expect(ack["scope"] as? String == "fleet")
        #expect(ack["unit"] as? String == setup.unit.unitID)
        #expect(ack["seq"] as? Int == 1)
        #expect(ack["id"] is String && ack["message_id"] == nil)
        #expect(ack["errors"] == nil)
        #expect(try setup.config().versions == ["fleet": 1])
        #expect(try setup.remoteSettings()["reporting"] as? [String: Int] == ["interval_s": 30])
        #expect(try setup.unit.status().broker.connected, "a change that needs no reconnect keeps the connection")
        setup.unit.stop()
    }

    @Test func anInvalidPushIsRejectedWithEveryErrorAndTheOldConfigStays() async throws {
        let setup = try await Setup()
        try setup.push(1, #"{"reporting":{"interval_s":30}}"#)
        try await setup.waitForAck("v1 applied", Self.ack(1, "applied"))
        try setup.push(2, #"{"reporting":{"interval_s":-1,"rate":3},"unit":{"id":"T9"},"store":{"path":"/tmp/evil"}}"#)
        let ack = try await setup.waitForAck("v2 rejected", Self.ack(2, "rejected"))
        #expect(ack["reason"] as? String == "invalid")
        #expect(ack["errors"] as? [String] == [
            "store.path is not remotely settable",
            "unit.id is not remotely settable",
            "reporting.interval_s must be between 0.0 and 86400.0, found -1.0",
            "unknown key reporting.rate",
        ])
        #expect(try setup.config().versions == ["fleet": 1])
        #expect(try setup.remoteSettings()["reporting"] as? [String: Int] == ["interval_s": 30])
        #expect(try setup.unit.status().unit == setup.unit.unitID)
        setup.unit.stop()
    }

    @Test func aStaleVersionIsNotAppliedAndTheRetainedCopyIsNotAckedAgain() async throws {
        let setup = try await Setup()
        try setup.push(5, #"{"reporting":{"interval_s":30}}"#)
        try await setup.waitForAck("v5 applied", Self.ack(5, "applied"))
        try setup.push(4, #"{"reporting":{"interval_s":1}}"#, to: setup.unitTopic)
        try await setup.waitForAck("unit v4 applied: scopes have their own versions", Self.ack(4, "applied"))
        try setup.push(3, #"{"reporting":{"interval_s":2}}"#)
        let stale = try await setup.waitForAck("v3 refused", Self.ack(3, "rejected"))
        #expect(stale["reason"] as? String == "stale")
        #expect(stale["errors"] as? [String] == ["version 3 is older than version 5 held for the fleet scope"])
        #expect(try setup.config().versions == ["fleet": 5, "unit": 4])

        // Reconnecting brings every retained document again: the ones in force are not re-applied.
        try setup.recorder.publish(setup.commandTopic, try setup.command(#"{"id":"r1","cmd":"reconnect","expires_at":\#(Setup.inAMinute)}"#))
        try await setup.waitForReply("r1")
        try await setup.unit.waitForStatus("reconnected") { $0.broker.connected }
        try setup.recorder.publish(setup.commandTopic, try setup.command(#"{"id":"s1","cmd":"status","expires_at":\#(Setup.inAMinute)}"#))
        try await setup.waitForReply("s1")
        #expect(setup.acks.count == 3)
        setup.unit.stop()
    }

    @Test func fleetAndUnitScopesMergeWithTheUnitWinning() async throws {
        let setup = try await Setup()
        try setup.push(1, #"{"reporting":{"interval_s":2}}"#, to: setup.unitTopic)
        try await setup.waitForAck("unit scope", Self.ack(1, "applied"))
        try setup.push(7, #"{"reporting":{"interval_s":30},"mqtt":{"max_inflight":5}}"#)
        let ack = try await setup.waitForAck("fleet scope", Self.ack(7, "applied"))
        #expect(ack["scope"] as? String == "fleet")
        #expect(try setup.config().versions == ["fleet": 7, "unit": 1])
        #expect(try setup.config().remoteSettings == #"{"mqtt":{"max_inflight":5},"reporting":{"interval_s":2}}"#)
        setup.unit.stop()
    }

    @Test func unsignedTamperedAndForeignDocumentsAreRejectedForTheirSignature() async throws {
        let setup = try await Setup()
        try setup.recorder.publish(setup.fleetTopic, #"{"version":1,"settings":{"reporting":{"interval_s":1}}}"#)
        let unsigned = try await setup.waitForAck("unsigned refused", Self.ack(1, "rejected"))
        #expect(unsigned["reason"] as? String == "signature")
        #expect(unsigned["errors"] as? [String] == ["the document is not signed"])

        let signed = try setup.signer.sign(#"{"version":2,"settings":{"reporting":{"interval_s":30}}}"#, topic: setup.fleetTopic)
        try setup.recorder.publish(setup.fleetTopic, signed.replacingOccurrences(of: "30", with: "31"))
        let tampered = try await setup.waitForAck("tampered refused", Self.ack(2, "rejected"))
        #expect(tampered["errors"] as? [String] == ["signature does not match any of the configured keys"])

        let stranger = try FleetSigner(in: setup.scratch, name: "stranger")
        try setup.recorder.publish(setup.fleetTopic, try stranger.sign(#"{"version":3,"settings":{}}"#, topic: setup.fleetTopic))
        try await setup.waitForAck("foreign key refused", { $0["version"] as? Int == 3 && $0["reason"] as? String == "signature" })
        #expect(try setup.config().versions.isEmpty)

        try setup.recorder.publish(setup.fleetTopic, signed)
        try await setup.waitForAck("the genuine document applied", Self.ack(2, "applied"))
        setup.unit.stop()
    }

    /// An absurd version is refused; one at the ceiling holds its scope only while its key is trusted.
    @Test func aVersionAboveTheCeilingIsInvalidAndRotatingTheKeyUnblocksTheScope() async throws {
        let setup = try await Setup()
        try setup.push(Int.max, #"{"reporting":{"interval_s":2}}"#)
        let absurd = try await setup.waitForAck("2^63-1 refused", Self.ack(Int.max, "rejected"))
        #expect(absurd["reason"] as? String == "invalid")
        #expect(absurd["errors"] as? [String] == ["version must be an integer from 1 to 9007199254740992"])
        let ceiling = 9_007_199_254_740_992
        try setup.push(ceiling, #"{"reporting":{"interval_s":30}}"#)
        try await setup.waitForAck("2^53 applied", Self.ack(ceiling, "applied"))
        setup.unit.stop()

        // The fleet rotates its key: the unit's file now trusts the new one only.
        let rotated = try FleetSigner(in: setup.scratch, name: "rotated")
        let file = try String(contentsOfFile: setup.unit.configPath, encoding: .utf8)
        try file.replacingOccurrences(of: setup.signer.pubkeysLine, with: rotated.pubkeysLine)
            .write(toFile: setup.unit.configPath, atomically: true, encoding: .utf8)
        try await setup.unit.start()
        try await setup.unit.waitForStatus("connected with the new key") { $0.broker.connected }
        try setup.recorder.publish(setup.fleetTopic, try rotated.sign(#"{"version":2,"settings":{"reporting":{"interval_s":20}}}"#, topic: setup.fleetTopic), retain: true)
        try await setup.waitForAck("v2 under the new key applied", Self.ack(2, "applied"))
        #expect(try setup.config().versions == ["fleet": 2])
        #expect(try setup.remoteSettings()["reporting"] as? [String: Int] == ["interval_s": 20])
        setup.unit.stop()
    }

    /// About 100 offers a second from the dispatcher's side spend the dispatcher's budget only: the
    /// fleet's signed commands, sent meanwhile, are all answered.
    @Test func fleetCommandsGetThroughAFloodOfOffers() async throws {
        let setup = try await Setup()
        let commands = try (0..<10).map { try setup.command(#"{"id":"f\#($0)","cmd":"purge","days":30,"expires_at":\#(Setup.inAMinute + 60_000)}"#) }
        let flooder = try await MQTTRecorder(port: setup.broker.port, subscribe: [])
        let offerTopic = setup.unit.topicBase + "job/offer"
        let flood = Task.detached {
            for index in 0..<1000 {
                try? flooder.publish(offerTopic, #"{"job":"junk-\#(index)","pickup":{"lat":"x"}}"#)
                try? await Task.sleep(for: .milliseconds(10))
                if Task.isCancelled { return }
            }
        }
        // The commands go out once the flood is over the dispatcher's budget, however fast it started.
        try await setup.unit.waitForStatus("the flood over the budget") { ($0.refused?["inbound_over_rate"] ?? 0) > 0 }
        for command in commands {
            try setup.recorder.publish(setup.commandTopic, command)
            try await Task.sleep(for: .milliseconds(200))
        }
        for index in 0..<10 { #expect(try await setup.waitForReply("f\(index)", timeoutS: 30)["result"] as? String == "ok") }
        flood.cancel()
        _ = await flood.value
        #expect(try setup.unit.status().refused?["inbound_over_rate"] ?? 0 > 0, "the flood was over the dispatcher's budget")
        flooder.stop()
        setup.unit.stop()
    }

    /// A thousand offers queued in the unit's session while it was away come with the fleet's
    /// retained document at the next connection: the document is still handled.
    @Test func theRetainedDocumentIsHandledBehindAThousandQueuedOffers() async throws {
        let setup = try await Setup()
        setup.unit.stop()
        for index in 0..<1000 {
            try setup.recorder.publish(setup.unit.topicBase + "job/offer", #"{"job":"queued-\#(index)","pickup":{"lat":"x"}}"#)
        }
        try setup.push(1, #"{"reporting":{"interval_s":30}}"#)
        try await setup.unit.start()
        try await setup.waitForAck("the retained document applied", timeoutS: 60, Self.ack(1, "applied"))
        #expect(try setup.config().versions == ["fleet": 1])
        setup.unit.stop()
    }

    @Test func theAppliedConfigSurvivesARestart() async throws {
        let setup = try await Setup()
        try setup.push(3, #"{"reporting":{"interval_s":30}}"#)
        try setup.push(2, #"{"mqtt":{"max_inflight":7}}"#, to: setup.unitTopic)
        try await setup.waitForAck("unit scope applied", Self.ack(2, "applied"))
        try await setup.waitForAck("fleet scope applied", Self.ack(3, "applied"))
        let before = try setup.config()
        setup.unit.stop()
        // With the retained documents gone, only the unit's store remembers them.
        try setup.recorder.publish(setup.fleetTopic, "", retain: true)
        try setup.recorder.publish(setup.unitTopic, "", retain: true)
        try await setup.unit.start()
        try await setup.unit.waitForStatus("connected again") { $0.broker.connected }
        #expect(try setup.config() == before)
        #expect(try setup.config().versions == ["fleet": 3, "unit": 2])
        setup.unit.stop()
    }

    @Test func aBrokerTheUnitCannotReachIsRolledBackAndTheUnitComesBackOnline() async throws {
        let setup = try await Setup(rollbackAfterS: 3)
        try setup.push(1, #"{"reporting":{"interval_s":30}}"#)
        try await setup.waitForAck("v1 applied", Self.ack(1, "applied"))
        let nowhere = try Loopback.freePort()
        try setup.push(2, #"{"mqtt":{"port":\#(nowhere)}}"#)
        try await setup.unit.waitForStatus("trying the new broker") { $0.config?.onTrial == "fleet" && !$0.broker.connected }
        #expect(try setup.config().broker == "127.0.0.1:\(nowhere)")

        let rolledBack = try await setup.waitForAck("rolled back", timeoutS: 15, Self.ack(2, "rolled_back"))
        #expect(rolledBack["reason"] as? String == "unreachable")
        let why = try #require((rolledBack["errors"] as? [String])?.first)
        #expect(why.hasPrefix("did not get the fleet's signed config from the broker 127.0.0.1:\(nowhere) within 3.0 s"))
        let status = try await setup.unit.waitForStatus("back on the old broker") { $0.broker.connected }
        #expect(status.config?.broker == "127.0.0.1:\(setup.broker.port)")
        #expect(status.config?.versions == ["fleet": 1])
        #expect(status.config?.onTrial == nil)
        try await setup.recorder.waitFor("online again") { messages in
            messages.last { $0.topic == setup.unit.topicBase + "status" }?.json?["online"] as? Bool == true
        }
        #expect(setup.acks.contains(where: Self.ack(2, "applied")), "the ack queued before the switch arrives too")

        // The retained v2 came again with the reconnect; it must not start another trial.
        try setup.recorder.publish(setup.commandTopic, try setup.command(#"{"id":"after","cmd":"status","expires_at":\#(Setup.inAMinute)}"#))
        let reply = try await setup.waitForReply("after")
        #expect((reply["status"] as? [String: Any]).flatMap { $0["broker"] as? [String: Any] }?["connected"] as? Bool == true)
        #expect(try setup.unit.status().config?.onTrial == nil)
        #expect(setup.acks.filter(Self.ack(2, "rolled_back")).count == 1)
        setup.unit.stop()
    }

    @Test func aTrialCutShortByACrashResumesAfterTheRestart() async throws {
        let setup = try await Setup(rollbackAfterS: 3)
        let nowhere = try Loopback.freePort()
        try setup.push(1, #"{"mqtt":{"port":\#(nowhere)}}"#)
        try await setup.unit.waitForStatus("on trial") { $0.config?.onTrial == "fleet" }
        setup.unit.killHard()
        try await setup.unit.start()
        let restarted = try setup.unit.status()
        #expect(restarted.config?.onTrial == "fleet")
        #expect(restarted.config?.broker == "127.0.0.1:\(nowhere)")
        try await setup.waitForAck("rolled back after the restart", timeoutS: 15, Self.ack(1, "rolled_back"))
        let status = try await setup.unit.waitForStatus("back on the old broker") { $0.broker.connected }
        #expect(status.config?.broker == "127.0.0.1:\(setup.broker.port)")
        #expect(status.config?.versions.isEmpty == true)
        setup.unit.stop()
    }

    @Test func commandsRunOnceAndAReplayDoesNothing() async throws {
        let scratch = try ScratchDirectory()
        let gps = try FakeGPS(log: Corpus.log(Corpus.steadyLog), in: scratch)
        let setup = try await Setup(gpsdPort: gps.port)
        try await setup.unit.waitForStatus("positions stored") { $0.storedPositions > 3 }
        let positions = try await MQTTRecorder(port: setup.broker.port, subscribe: [setup.unit.topicBase + "pos"])

        let report = try setup.command(#"{"id":"c1","cmd":"report","expires_at":\#(Setup.inAMinute)}"#)
        try setup.recorder.publish(setup.commandTopic, report)
        let reply = try await setup.waitForReply("c1")
        #expect(reply["result"] as? String == "ok")
        #expect(reply["cmd"] as? String == "report")
        let point = try #require(reply["position"] as? [String: Any])
        try await positions.waitFor("the reported position") { messages in
            messages.contains { (try? JSONDecoder().decode(LivePositionMessage.self, from: Data($0.payload)))?.point.t == (point["t"] as? Int).map(Int64.init) }
        }

        try setup.recorder.publish(setup.commandTopic, report)
        let expired = try setup.command(#"{"id":"c2","cmd":"purge","days":0,"expires_at":\#(Setup.inAMinute - 120_000)}"#)
        try setup.recorder.publish(setup.commandTopic, expired)
        let expiredReply = try await setup.waitForReply("c2")
        #expect(expiredReply["result"] as? String == "expired")
        #expect(try setup.unit.status().storedPositions > 0, "an expired purge deletes nothing")
        #expect(setup.replies.filter { $0["cmd_id"] as? String == "c1" }.count == 1, "the replayed report got no second reply")
        #expect(setup.unit.log.contains("replayed command ignored"))

        let purge = try setup.command(#"{"id":"c3","cmd":"purge","days":0,"expires_at":\#(Setup.inAMinute)}"#)
        try setup.recorder.publish(setup.commandTopic, purge)
        let purged = try await setup.waitForReply("c3")
        #expect(purged["result"] as? String == "ok")
        #expect((purged["deleted"] as? Int ?? 0) > 0)

        let status = try setup.command(#"{"id":"c4","cmd":"status","expires_at":\#(Setup.inAMinute)}"#)
        try setup.recorder.publish(setup.commandTopic, status)
        let dump = try #require(try await setup.waitForReply("c4")["status"] as? [String: Any])
        #expect(dump["unit"] as? String == setup.unit.unitID)
        #expect(dump["config"] is [String: Any])
        #expect(dump["stored_positions"] is Int && (dump["gps"] as? [String: Any])?["last_fix_age_s"] is Double, "snake_case: \(dump)")
        #expect(try ContractCheck.problems(in: setup.recorder.messages).isEmpty)

        try setup.recorder.publish(setup.commandTopic, try setup.command(#"{"id":"c5","cmd":"fly","expires_at":\#(Setup.inAMinute)}"#))
        #expect(try await setup.waitForReply("c5")["result"] as? String == "unknown")

        // A restart forgets nothing: the executed ids are in the store.
        setup.unit.stop()
        try await setup.unit.start()
        try await setup.unit.waitForStatus("connected again") { $0.broker.connected }
        try setup.recorder.publish(setup.commandTopic, purge)
        try setup.recorder.publish(setup.commandTopic, try setup.command(#"{"id":"c6","cmd":"status","expires_at":\#(Setup.inAMinute)}"#))
        try await setup.waitForReply("c6")
        #expect(setup.replies.filter { $0["cmd_id"] as? String == "c3" }.count == 1)
        setup.unit.stop()
        positions.stop()
    }

    @Test func oversizedAndNonJSONPayloadsAreRejectedWithoutHarm() async throws {
        let setup = try await Setup()
        // Over the limit and still under the Maximum Packet Size the unit announces: it arrives and is
        // answered (a larger one the broker drops, see OversizedMessageTests).
        try setup.recorder.publish(setup.fleetTopic, String(repeating: " ", count: 65_600) + "{}")
        let large = try await setup.waitForAck("oversized config refused") { $0["reason"] as? String == "too_large" }
        #expect(large["errors"] as? [String] == ["payload is 65602 bytes, more than the limit of 65536"])
        #expect(large["version"] == nil)

        try setup.recorder.publish(setup.unitTopic, "version=1")
        let garbage = try await setup.waitForAck("non-JSON config refused") { $0["reason"] as? String == "not_json" }
        #expect(garbage["scope"] as? String == "unit")
        #expect((garbage["errors"] as? [String])?.first?.hasPrefix("not valid JSON at byte 0") == true)

        try setup.recorder.publish(setup.fleetTopic, try setup.signer.sign(#"{"version":1,"settings":{"reporting":{"interval_s":1e999}}}"#, topic: setup.fleetTopic))
        let huge = try await setup.waitForAck("an infinite number refused", Self.ack(1, "rejected"))
        #expect(huge["errors"] as? [String] == ["reporting.interval_s is a number out of range: 1e999"])

        try setup.recorder.publish(setup.commandTopic, "\u{0}\u{1}binary")
        try await setup.recorder.waitFor("non-JSON command refused") { messages in
            messages.contains { $0.topic == setup.unit.topicBase + "cmd/reply" && $0.json?["reason"] as? String == "not_json" }
        }
        try setup.recorder.publish(setup.commandTopic, String(repeating: "x", count: 65_537))
        try await setup.recorder.waitFor("oversized command refused") { messages in
            messages.contains { $0.topic == setup.unit.topicBase + "cmd/reply" && $0.json?["reason"] as? String == "too_large" }
        }
        let status = try setup.unit.status()
        #expect(status.broker.connected)
        #expect(status.config?.versions.isEmpty == true)
        #expect(setup.unit.process?.isRunning == true)
        setup.unit.stop()
    }
}
