import FleetControl
import TaxiProtocol
import Testing
import UnitConfig

@Suite struct CommandGateTests {
    let fleet = FleetFixture()
    let now: UnitTime = 1_800_000_000_000

    func gate(requireSigned: Bool = true) -> CommandGate {
        CommandGate(trust: FleetTrust(publicKeys: [Array(fleet.key.publicKey.rawRepresentation)], requireSigned: requireSigned))
    }

    func command(_ json: String) throws -> [UInt8] {
        try fleet.signed(json, topic: fleet.commandTopic)
    }

    @Test func aSignedCommandIsExecutedOnceAndItsReplayDoesNothing() throws {
        var gate = gate()
        let payload = try command(#"{"id":"c1","cmd":"purge","days":30,"expires_at":\#(now + .milliseconds(60_000))}"#)
        #expect(gate.admit(payload, topic: fleet.commandTopic, now: now)
            == .execute(FleetCommand(id: "c1", name: "purge", action: .purge(days: 30), expiresAt: now + .milliseconds(60_000))))
        #expect(gate.admit(payload, topic: fleet.commandTopic, now: now + .milliseconds(1000)) == .ignore(id: "c1"))
        #expect(gate.executed == ["c1": now + .milliseconds(60_000)])
    }

    @Test func commandKeysSignCommandsOnlyAndConfigKeysThenSignNoCommand() throws {
        let commands = FleetFixture()
        let trust = FleetTrust(
            publicKeys: [Array(fleet.key.publicKey.rawRepresentation)],
            commandPublicKeys: [Array(commands.key.publicKey.rawRepresentation)], requireSigned: true)
        var gate = CommandGate(trust: trust)
        let json = #"{"id":"k1","cmd":"status","expires_at":\#(now + .milliseconds(60_000))}"#
        guard case .refuse(let refusal) = gate.admit(try fleet.signed(json, topic: fleet.commandTopic), topic: fleet.commandTopic, now: now) else {
            Issue.record("a config key signed a command"); return
        }
        #expect(refusal.reason == "signature")
        #expect(gate.admit(try commands.signed(json, topic: fleet.commandTopic), topic: fleet.commandTopic, now: now)
            == .execute(FleetCommand(id: "k1", name: "status", action: .status, expiresAt: now + .milliseconds(60_000))))

        // The same file's config machine: the command key signs no config.
        let local = try ConfigValue.parseTOML(fleet.localTOML(extra: #"command_pubkeys = ["\#(commands.key.publicKey.rawRepresentation.base64EncodedString())"]"#))
        var machine = try FleetConfigMachine(local: local, restoring: [:])
        #expect(machine.trust == trust)
        let byCommandKey = try commands.config(1, #"{"reporting":{"interval_s":10}}"#)
        #expect(machine.handle(byCommandKey).acks.first?.reason == "signature")
        #expect(machine.handle(try fleet.config(1, #"{"reporting":{"interval_s":10}}"#)).acks.first?.result == .applied)
    }

    @Test func withoutCommandKeysTheConfigKeysSignCommands() throws {
        let local = try ConfigValue.parseTOML(fleet.localTOML())
        var gate = CommandGate(trust: try FleetConfigMachine(local: local, restoring: [:]).trust)
        let payload = try command(#"{"id":"k2","cmd":"status","expires_at":\#(now + .milliseconds(60_000))}"#)
        #expect(gate.admit(payload, topic: fleet.commandTopic, now: now)
            == .execute(FleetCommand(id: "k2", name: "status", action: .status, expiresAt: now + .milliseconds(60_000))))
    }

    @Test func executedIdsAreForgottenOnlyOnceTheyHaveExpired() throws {
        var gate = CommandGate(trust: gate().trust, executed: ["old": now - .milliseconds(1), "live": now + .milliseconds(5)])
        _ = gate.admit(Array("{}".utf8), topic: fleet.commandTopic, now: now)
        #expect(gate.executed == ["live": now + .milliseconds(5)])
    }

    @Test func anExpiredCommandIsRefusedEvenWithAFreshId() throws {
        var gate = gate()
        let payload = try command(#"{"id":"c2","cmd":"report","expires_at":\#(now)}"#)
        guard case .refuse(let refusal) = gate.admit(payload, topic: fleet.commandTopic, now: now) else { Issue.record("admitted"); return }
        #expect(refusal.result == .expired && refusal.id == "c2" && refusal.name == "report")
        #expect(gate.executed.isEmpty)
    }

    @Test func aCommandValidForMoreThanADayIsRefused() throws {
        var gate = gate()
        let payload = try command(#"{"id":"c3","cmd":"report","expires_at":\#(now + CommandGate.longestValidity + .milliseconds(1))}"#)
        guard case .refuse(let refusal) = gate.admit(payload, topic: fleet.commandTopic, now: now) else { Issue.record("admitted"); return }
        #expect(refusal.result == .rejected && refusal.reason == "invalid")
    }

    @Test func everyKnownCommandIsRecognised() throws {
        var gate = gate()
        for (name, action) in [("report", FleetCommand.Action.report), ("status", .status), ("reconnect", .reconnect)] {
            let payload = try command(#"{"id":"\#(name)","cmd":"\#(name)","expires_at":\#(now + .milliseconds(1000))}"#)
            #expect(gate.admit(payload, topic: fleet.commandTopic, now: now) == .execute(FleetCommand(id: name, name: name, action: action, expiresAt: now + .milliseconds(1000))))
        }
    }

    @Test func anUnknownCommandIsAnsweredUnknownAndNotRemembered() throws {
        var gate = gate()
        let payload = try command(#"{"id":"c4","cmd":"selfdestruct","expires_at":\#(now + .milliseconds(1000))}"#)
        guard case .refuse(let refusal) = gate.admit(payload, topic: fleet.commandTopic, now: now) else { Issue.record("admitted"); return }
        #expect(refusal.result == .unknown)
        #expect(refusal.errors == [#"unknown command "selfdestruct"; known: report, status, purge, reconnect"#])
        #expect(gate.executed.isEmpty)
    }

    @Test func unsignedTamperedAndMisaddressedCommandsAreRefused() throws {
        var gate = gate()
        let unsigned = Array(#"{"id":"c5","cmd":"report","expires_at":\#(now + .milliseconds(1000))}"#.utf8)
        let signed = try command(#"{"id":"c6","cmd":"purge","days":30,"expires_at":\#(now + .milliseconds(1000))}"#)
        let tampered = Array(String(decoding: signed, as: UTF8.self).replacingOccurrences(of: "30", with: "0").utf8)
        for (payload, topic) in [(unsigned, fleet.commandTopic), (tampered, fleet.commandTopic), (signed, "taxi/north/T8/cmd")] {
            guard case .refuse(let refusal) = gate.admit(payload, topic: topic, now: now) else { Issue.record("admitted"); continue }
            #expect(refusal.result == .rejected && refusal.reason == "signature")
        }
        #expect(gate.executed.isEmpty)
    }

    @Test func malformedCommandsGetTheirProblemNamed() throws {
        var gate = gate(requireSigned: false)
        let cases: [(String, String)] = [
            (#"{"cmd":"report","expires_at":\#(now + .milliseconds(1000))}"#, "id must be a non-empty string of at most 128 bytes"),
            (#"{"id":"a","cmd":"report"}"#, "expires_at must be an integer (ms since the Unix epoch)"),
            (#"{"id":"b","expires_at":\#(now + .milliseconds(1000))}"#, "cmd must be a string"),
            (#"{"id":"c","cmd":"purge","days":-1,"expires_at":\#(now + .milliseconds(1000))}"#, "days must be an integer between 0 and 36500"),
            (#"{"id":"d","cmd":"report","days":1,"expires_at":\#(now + .milliseconds(1000))}"#, "unknown key days"),
            ("{\"id\":\"e\",", "not valid JSON at byte 10: expected a key"),
        ]
        for (json, problem) in cases {
            guard case .refuse(let refusal) = gate.admit(Array(json.utf8), topic: fleet.commandTopic, now: now) else { Issue.record("admitted \(json)"); continue }
            #expect(refusal.errors == [problem], "\(json)")
        }
        let huge = Array(repeating: UInt8(ascii: "x"), count: FleetMessage.maximumBytes + 1)
        guard case .refuse(let refusal) = gate.admit(huge, topic: fleet.commandTopic, now: now) else { Issue.record("admitted"); return }
        #expect(refusal.reason == "too_large" && refusal.id == nil)
    }
}
