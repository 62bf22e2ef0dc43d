import ControlSocket
import FleetControl
import Foundation
import MQTTLink
import TestHarness
import Testing

/// Driver login, preferences and privacy on the real parts: the daemon, mosquitto, SQLite, a PTY
/// terminal, and the driver list pushed as a signed fleet configuration.
@Suite(.serialized) struct DriverIdentityTests {
    struct Rig {
        let scratch: ScratchDirectory
        let broker: MosquittoBroker
        let gps: FakeGPS?
        let pair: SerialPair
        let screen: TerminalScreen
        let unit: UnitUnderTest
        let recorder: MQTTRecorder

        init(scratch given: ScratchDirectory? = nil, withGPS: Bool = false, extraTOML: String) async throws {
            let scratch = try given ?? ScratchDirectory()
            self.scratch = scratch
            broker = try MosquittoBroker(in: scratch)
            gps = withGPS ? try FakeGPS(log: Corpus.log(Corpus.steadyLog), in: scratch, cycleS: 0.05) : nil
            pair = try await SerialPair(in: scratch)
            unit = try UnitUnderTest(
                mqttPort: broker.port, gpsdPort: try gps?.port ?? Loopback.freePort(), in: scratch,
                extraTOML: "[input.serial]\ndevice = \"\(pair.unitPath)\"\n" + extraTOML)
            recorder = try await MQTTRecorder(port: broker.port, subscribe: [unit.topicBase + "#"])
            screen = TerminalScreen(pair: pair)
            try await unit.start()
            try await unit.waitForStatus("broker connected") { $0.broker.connected }
        }

        /// What the driver is told (also for a refused input), or the control socket's error.
        func press(_ words: String) throws -> String {
            let response = try unit.request(ControlRequest(cmd: .press, input: words))
            return response.message ?? "ERROR " + (response.error ?? "")
        }

        func jsons(_ suffix: String) -> [[String: Any]] {
            recorder.messages(onTopic: unit.topicBase + suffix).compactMap(\.json)
        }

        func waitForStatus(_ what: String, _ condition: @escaping ([String: Any]) -> Bool) async throws {
            try await recorder.waitFor(what) { _ in jsons("status").last.map(condition) ?? false }
        }

        func stop() {
            unit.stop()
            recorder.stop()
            gps?.stop()
        }
    }

    static let pin = "2468"

    @Test func theFleetsDriverListDecidesWhoMayDriveAndTheDriverIsNamedEverywhere() async throws {
        let scratch = try ScratchDirectory()
        let signer = try FleetSigner(in: scratch)
        let rig = try await Rig(scratch: scratch, extraTOML: signer.fleetSection() + "[driver]\nrequire_login = true\nfree_tries = 5\n")
        // No driver, no duty.
        #expect(try rig.press("duty") == "Log in first")
        #expect(try rig.unit.status().state == "off_duty")
        // Nobody is on the list yet.
        #expect(try rig.press("login 42 \(Self.pin)") == "Wrong driver or PIN")
        // The fleet pushes its list: PBKDF2 hashes only.
        let credential = try #require(DriverRoster.hash(pin: Self.pin, rounds: 1000))
        let topic = "taxi/\(rig.unit.fleet)/config"
        // A hostile list is refused whole, with reasons, and changes nothing.
        let hostile = #"{"version":1,"settings":{"driver":{"drivers":{"42":"plain:\#(Self.pin)","../x":"\#(credential.text)","7":7}}}}"#
        try rig.recorder.publish(topic, try signer.sign(hostile, topic: topic), retain: true)
        try await rig.recorder.waitFor("the hostile list rejected") { _ in
            rig.jsons("config/ack").contains { $0["version"] as? Int == 1 && $0["result"] as? String == "rejected" }
        }
        let errors = rig.jsons("config/ack").first { $0["version"] as? Int == 1 }?["errors"] as? [String] ?? []
        #expect(errors.count == 3, "\(errors)")
        #expect(!errors.joined().contains(Self.pin), "a rejection does not echo what looks like a PIN")
        #expect(try rig.press("login 42 \(Self.pin)") == "Wrong driver or PIN")
        let document = #"{"version":2,"settings":{"driver":{"drivers":{"42":"\#(credential.text)"}}}}"#
        #expect(!document.contains(Self.pin))
        try rig.recorder.publish(topic, try signer.sign(document, topic: topic), retain: true)
        try await rig.recorder.waitFor("the config applied") { _ in
            rig.jsons("config/ack").contains { $0["result"] as? String == "applied" }
        }
        #expect(try rig.press("login 42 1357") == "Wrong driver or PIN")
        #expect(try rig.press("login 42 \(Self.pin)") == "Logged in: 42")
        try await rig.waitForStatus("the status names the driver") { $0["driver"] as? String == "42" }
        #expect(try rig.press("login 7 \(Self.pin)") == "A driver is logged in; log out first")
        #expect(try rig.press("duty").hasPrefix("On duty"))
        #expect(try rig.press("logout") == "Go off duty first")
        // A job: the reply and every event name the driver.
        try rig.recorder.publish(rig.unit.topicBase + "job/offer", #"{"job":"J1","pickup":{"lat":46.5,"lon":7.5,"address":"Main St 1"}}"#)
        try await rig.recorder.waitFor("the offer") { _ in rig.jsons("event").contains { $0["to"] as? String == "offered" } }
        _ = try rig.press("accept")
        try await rig.recorder.waitFor("the reply") { _ in !rig.jsons("job/reply").isEmpty }
        #expect(rig.jsons("job/reply").allSatisfy { $0["driver"] as? String == "42" })
        // The reply goes out before the event it causes: wait for that event too.
        try await rig.recorder.waitFor("on duty, offered, en route") { _ in rig.jsons("event").count >= 3 }
        #expect(rig.jsons("event").allSatisfy { $0["driver"] as? String == "42" })
        _ = try rig.press("sos")
        try await rig.recorder.waitFor("the alarm") { _ in !rig.jsons("sos").isEmpty }
        #expect(rig.jsons("sos").allSatisfy { $0["driver"] as? String == "42" })
        #expect(try ContractCheck.problems(in: rig.recorder.messages).isEmpty)

        // The logged-in driver survives a restart.
        rig.unit.stop()
        try await rig.unit.start()
        try await rig.unit.waitForStatus("broker connected") { $0.broker.connected }
        #expect(try rig.press("login 42 \(Self.pin)") == "A driver is logged in; log out first")
        rig.stop()
    }

    /// The terminal's own keys: `l` asks, the id and PIN are typed, ENTER after each; LEFT erases.
    @Test func aLoginTypedOnTheTerminal() async throws {
        let credential = try #require(DriverRoster.hash(pin: Self.pin, rounds: 1000))
        let rig = try await Rig(extraTOML: "[driver]\nrequire_login = true\ndrivers = { \"D-42\" = \"\(credential.text)\" }\n")
        try await rig.screen.waitFor("off duty") { $0.rows[0].hasPrefix("OFF DUTY") }
        try await rig.screen.press("d")
        try await rig.screen.waitFor("duty refused") { $0.rows[3].hasPrefix("Log in first") }
        try await rig.screen.press("l")
        try await rig.screen.waitFor("the login screen") { $0.rows[0].hasPrefix("LOGIN") && $0.rows[1].hasPrefix("Driver _") }
        // "1" would be `pob 1` and "d" duty elsewhere: here they are typed.
        for key in ["D", "-", "4", "2", "9"] { try await rig.screen.press(key) }
        try await rig.pair.type(Array("\u{1b}[D".utf8))
        try await Task.sleep(for: .milliseconds(60))
        try await rig.screen.press("\r")
        try await rig.screen.waitFor("the PIN field") { $0.rows[1].hasPrefix("Driver D-42 ") && $0.rows[2].hasPrefix("PIN _") }
        for key in ["1", "1", "1", "1"] { try await rig.screen.press(key) }
        let typed = try await rig.screen.waitFor("four stars") { $0.rows[2].hasPrefix("PIN ****_") }
        #expect(!typed.rows.joined().contains("1111"))
        try await rig.screen.press("\r")
        try await rig.screen.waitFor("refused, back off duty") { $0.rows[0].hasPrefix("OFF DUTY") && $0.rows[3].hasPrefix("Wrong driver or PIN") }
        #expect(try rig.unit.status().state == "off_duty")
        try await rig.screen.press("l")
        for key in ["D", "-", "4", "2", "\r"] + Self.pin.map(String.init) + ["\r"] { try await rig.screen.press(key) }
        try await rig.waitForStatus("logged in") { $0["driver"] as? String == "D-42" }
        try await rig.screen.waitFor("the driver named") { $0.rows[0] == "OFF DUTY        D-42" }
        try await rig.screen.press("b")
        try await rig.screen.waitFor("the alert style said") { $0.rows[3] == "Alerts: blink only  " }
        try await rig.screen.press("d")
        try await rig.screen.waitFor("on duty") { $0.rows[0] == "AVAILABLE       D-42" }
        try await rig.screen.press("d")
        try await rig.screen.press("o")
        try await rig.waitForStatus("logged out") { $0["driver"] == nil }
        #expect(!rig.unit.log.contains(Self.pin))
        rig.stop()
    }

    /// Keys that reach the unit together (typed ahead, read late by a busy unit, handed over at once
    /// by a UART's FIFO or a PTY) all count, in order. A burst of line noise in the PIN empties the
    /// field and says so: three of them in a row lock nothing, where three wrong PINs would.
    @Test func keysTypedTogetherAllCountAndNoiseNeverCountsAsAWrongPIN() async throws {
        let credential = try #require(DriverRoster.hash(pin: Self.pin, rounds: 1000))
        let rig = try await Rig(extraTOML: "[driver]\nrequire_login = true\ndrivers = { \"D-0417\" = \"\(credential.text)\" }\n")
        try await rig.screen.waitFor("off duty") { $0.rows[0].hasPrefix("OFF DUTY") }
        try await rig.screen.press("l")
        try await rig.screen.waitFor("the login screen") { $0.rows[0].hasPrefix("LOGIN") && $0.rows[1].hasPrefix("Driver _") }
        try await rig.pair.type(Array("D-0417\r".utf8))
        try await rig.screen.waitFor("the PIN field") { $0.rows[1].hasPrefix("Driver D-0417 ") && $0.rows[2].hasPrefix("PIN _") }
        for attempt in 1...3 {
            try await rig.pair.type(Array(Self.pin.prefix(2).utf8))
            try await rig.screen.waitFor("two digits, attempt \(attempt)") { $0.rows[2].hasPrefix("PIN **_") }
            // A spike on the line as the driver types the rest: the burst is dropped whole.
            try await rig.pair.type([0x00] + Array(Self.pin.dropFirst(2).utf8) + Array("\r".utf8))
            try await rig.screen.waitFor("keys lost, attempt \(attempt)") {
                $0.rows[0].hasPrefix("LOGIN") && $0.rows[2].hasPrefix("PIN _") && $0.rows[3].hasPrefix("Keys lost: again")
            }
        }
        #expect(rig.unit.log.contains("the serial terminal dropped a burst of line noise"))
        try await rig.pair.type(Array((Self.pin + "\r").utf8))
        try await rig.waitForStatus("logged in, not locked") { $0["driver"] as? String == "D-0417" }
        try await rig.screen.press("o")
        try await rig.waitForStatus("logged out") { $0["driver"] == nil }
        // The whole login typed ahead in one write, as the reported "D-17" was typed.
        try await rig.screen.press("l")
        try await rig.screen.waitFor("the login screen again") { $0.rows[0].hasPrefix("LOGIN") }
        try await rig.pair.type(Array("D-0417\r\(Self.pin)\r".utf8))
        try await rig.waitForStatus("logged in from one write") { $0["driver"] as? String == "D-0417" }
        #expect(!rig.unit.log.contains(Self.pin))
        rig.stop()
    }

    @Test func wrongPINsLockTheTerminalAndTheLockSurvivesARestart() async throws {
        // The fleet's tool, the PIN on standard input.
        let (hashed, code) = try runCommand("/bin/sh", ["-c", "echo \(Self.pin) | '\(Corpus.binary("taxiunitctl"))' hash-pin --rounds 1000"])
        #expect(code == 0)
        let credential = hashed.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(credential.hasPrefix("pbkdf2-sha256$1000$") && !credential.contains(Self.pin))
        let rig = try await Rig(extraTOML: "[driver]\nfree_tries = 2\nlock_s = 60\ndrivers = { \"42\" = \"\(credential)\" }\n")
        #expect(try rig.press("login 42 0000") == "Wrong driver or PIN")
        #expect(try rig.press("login 43 0000").hasPrefix("Too many wrong logins; wait"))
        // The terminal says so in the driver's language.
        try await rig.screen.waitFor("the lock on the terminal") { $0.rows[3].hasPrefix("Locked: wait") }
        #expect(try rig.press("login 42 \(Self.pin)").hasPrefix("Too many wrong logins"))
        rig.unit.stop()
        try await rig.unit.start()
        try await rig.unit.waitForStatus("broker connected") { $0.broker.connected }
        #expect(try rig.press("login 42 \(Self.pin)").hasPrefix("Too many wrong logins"), "a restart does not reset the lock")
        #expect(try rig.press("login 42 12") .hasPrefix("ERROR login: a PIN is 4 to 12 digits"))
        #expect(!rig.unit.log.contains(Self.pin), "the PIN is never logged")
        rig.stop()
    }

    @Test func theDriversLanguageIsKeptAcrossLogoutAndLogin() async throws {
        let credential = try #require(DriverRoster.hash(pin: Self.pin, rounds: 1000))
        let rig = try await Rig(extraTOML: "[driver]\ndrivers = { \"42\" = \"\(credential.text)\", \"7\" = \"\(credential.text)\" }\n")
        try await rig.screen.waitFor("off duty in English") { $0.rows[0].hasPrefix("OFF DUTY") }
        #expect(try rig.press("lang it") == "Nobody logged in")
        _ = try rig.press("login 42 \(Self.pin)")
        #expect(try rig.press("lang xx") == "No such language installed")
        #expect(try rig.press("lang zu").hasPrefix("Preferences of 42: language zu"))
        try await rig.screen.waitFor("isiZulu") { $0.rows[0].hasPrefix("ANGISEBENZI") }
        // The terminal's language key goes round the installed catalogues: zu → en → it.
        try await rig.screen.press("g")
        try await rig.screen.waitFor("English by the key") { $0.rows[0].hasPrefix("OFF DUTY") }
        try await rig.screen.press("g")
        try await rig.screen.waitFor("Italian by the key") { $0.rows[0].hasPrefix("FUORI SERVIZIO") }
        try await rig.screen.press("b")
        #expect(try rig.press("logout") == "Logged out: 42")
        try await rig.screen.waitFor("the unit's English again") { $0.rows[0].hasPrefix("OFF DUTY") }
        // Another driver has no preference: English.
        _ = try rig.press("login 7 \(Self.pin)")
        try await Task.sleep(for: .milliseconds(300))
        #expect(rig.screen.rows[0].hasPrefix("OFF DUTY"))
        _ = try rig.press("logout")
        _ = try rig.press("login 42 \(Self.pin)")
        try await rig.screen.waitFor("Italian again at login") { $0.rows[0].hasPrefix("FUORI SERVIZIO") }
        #expect(try rig.press("alert next") == "Preferences of 42: language it, alert bell", "the b key had chosen blink")
        rig.stop()
    }

    @Test func offDutyPositionsStayOnTheUnit() async throws {
        let scratch = try ScratchDirectory()
        let signer = try FleetSigner(in: scratch)
        let rig = try await Rig(scratch: scratch, withGPS: true, extraTOML: signer.fleetSection() + "[privacy]\noff_duty_positions = false\n")
        try await rig.unit.waitForStatus("gpsd connected") { $0.gps.connected }
        // Fixes come every 50 ms and the policy reports every 0.5 s: none must reach the broker.
        try await Task.sleep(for: .seconds(3))
        #expect(rig.jsons("pos").isEmpty, "positions while off duty")
        #expect(try rig.unit.status().storedPositions == 0, "nor kept in the history")
        // The fleet's signed `report` is still answered, with the fix the unit kept in memory.
        let topic = rig.unit.topicBase + "cmd"
        let expires = TestClock.milliseconds() + 60_000
        try rig.recorder.publish(topic, try signer.sign(#"{"id":"r1","cmd":"report","expires_at":\#(expires)}"#, topic: topic))
        try await rig.recorder.waitFor("the report") { _ in rig.jsons("cmd/reply").contains { $0["cmd_id"] as? String == "r1" } }
        let reply = try #require(rig.jsons("cmd/reply").first { $0["cmd_id"] as? String == "r1" })
        #expect(reply["result"] as? String == "ok" && reply["position"] != nil, "\(reply)")
        try await rig.recorder.waitFor("the reported position") { _ in rig.jsons("pos").count == 1 }
        _ = try rig.press("duty")
        try await rig.recorder.waitFor("positions once on duty") { _ in rig.jsons("pos").count > 1 }
        _ = try rig.press("duty")
        try await Task.sleep(for: .seconds(1))
        let stopped = rig.jsons("pos").count
        try await Task.sleep(for: .seconds(2))
        #expect(rig.jsons("pos").count == stopped, "off duty again: silent")
        rig.stop()
    }
}
