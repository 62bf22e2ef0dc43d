import Crypto
import FleetConsole
import FleetControl
import StrictJSON
import TaxiProtocol
import Testing
import UnitConfig
import UnitCore

/// What leaves the office is signed for its topic and passes the unit's own checks first.
@Suite struct PreflightTests {
    let key = Curve25519.Signing.PrivateKey()

    @Test func aGoodDocumentIsSignedForItsTopicAndAUnitTrustingTheKeyVerifiesIt() throws {
        let settings = try SettingsFile.parse(Array("[reporting]\ninterval_s = 10\n".utf8), name: "fleet.toml")
        let payload = try Preflight.configDocument(
            settings: settings, version: 4, scope: .fleet, topic: "taxi/north/config", unit: nil, fleet: "north", base: .table([:]), key: key)
        let document = try JSONDocument.parse(payload)
        #expect(String(decoding: document.removing("signature").canonicalBytes, as: UTF8.self) == #"{"settings":{"reporting":{"interval_s":10}},"version":4}"#)
        let trust = FleetTrust(publicKeys: [Array(key.publicKey.rawRepresentation)], requireSigned: true)
        #expect(FleetMessage.authenticate(document, topic: "taxi/north/config", trust: trust, as: .config) == nil)
        #expect(FleetMessage.authenticate(document, topic: "taxi/north/T1/config", trust: trust, as: .config) != nil, "signed for its topic only")
    }

    @Test func whatTheUnitWouldRejectIsRefusedWithTheUnitsOwnErrors() throws {
        let settings = try SettingsFile.parse(Array(#"{"reporting":{"interval_s":-1,"rate":3},"unit":{"id":"T9"}}"#.utf8), name: "bad.json")
        #expect {
            try Preflight.configDocument(
                settings: settings, version: 1, scope: .fleet, topic: "taxi/north/config", unit: nil, fleet: "north", base: .table([:]), key: key)
        } throws: { error in
            (error as? ConfigError)?.problems == [
                "unit.id is not remotely settable",
                "reporting.interval_s must be between 0.0 and 86400.0, found -1.0",
                "unknown key reporting.rate",
            ]
        }
    }

    @Test func theBaseFileTakesPartInTheCheck() throws {
        // Another port is fine for a unit on its own machine's broker, not for one whose local file
        // runs in the clear to a remote broker.
        let settings = try SettingsFile.parse(Array("[mqtt]\nport = 1884\n".utf8), name: "port.toml")
        func check(_ base: ConfigValue) throws {
            _ = try Preflight.configDocument(
                settings: settings, version: 1, scope: .unit, topic: "taxi/north/T5/config", unit: "T5", fleet: "north", base: base, key: key)
        }
        try check(.table([:]))
        let remote = try ConfigValue.parseTOML("[mqtt]\nhost = \"broker.example\"\nallow_plaintext = true\n")
        #expect {
            try check(remote)
        } throws: { error in
            (error as? ConfigError)?.problems == ["mqtt.host: a fleet config cannot move the unit to a broker off this machine without TLS (broker.example:1884)"]
        }
    }

    @Test func settingsFilesThatAreNotTOMLOrJSONObjectsAreRefused() {
        #expect(throws: ConfigError.self) { try SettingsFile.parse(Array("[reporting\n".utf8), name: "x.toml") }
        #expect(throws: ConfigError.self) { try SettingsFile.parse(Array("[1]".utf8), name: "x.json") }
        #expect(throws: ConfigError.self) { try SettingsFile.parse(Array(#"{"a":1,"a":2}"#.utf8), name: "x.json") }
    }

    @Test func commandsAreAdmittedByTheUnitsGateOrRefused() throws {
        let now: Int64 = 1_000_000
        let members: [(key: String, value: JSONDocument)] = [("cmd", .string("purge")), ("days", .number(literal: "30")), ("expires_at", .number(literal: String(now + 60_000))), ("id", .string("c-1"))]
        let payload = try Preflight.command(members, topic: "taxi/north/T1/cmd", now: now, key: key)
        var gate = CommandGate(trust: FleetTrust(publicKeys: [Array(key.publicKey.rawRepresentation)], requireSigned: true))
        #expect(gate.admit(payload, topic: "taxi/north/T1/cmd", now: UnitTime(milliseconds: now)) == .execute(FleetCommand(id: "c-1", name: "purge", action: .purge(days: 30), expiresAt: UnitTime(milliseconds: now + 60_000))))
        let tooFar: [(key: String, value: JSONDocument)] = [("cmd", .string("status")), ("expires_at", .number(literal: String(now + 90_000_000))), ("id", .string("c-2"))]
        #expect(throws: ConfigError.self) { try Preflight.command(tooFar, topic: "taxi/north/T1/cmd", now: now, key: key) }
        let unknown: [(key: String, value: JSONDocument)] = [("cmd", .string("reboot")), ("expires_at", .number(literal: String(now + 1000))), ("id", .string("c-3"))]
        #expect(throws: ConfigError.self) { try Preflight.command(unknown, topic: "taxi/north/T1/cmd", now: now, key: key) }
    }

    @Test func keysFromGenKeyAndFromOpensslPEMAreRead() throws {
        let text = SigningKey.privateKeyText(key)
        #expect(SigningKey.parse(text)?.rawRepresentation == key.rawRepresentation)
        // RFC 8410's example private key.
        let pem = """
            -----BEGIN PRIVATE KEY-----
            MC4CAQAwBQYDK2VwBCIEINTuctv5E1hK1bbY8fdp+K06/nwoy/HU++CXqI9EdVhC
            -----END PRIVATE KEY-----
            """
        #expect(SigningKey.parse(pem) != nil)
        #expect(SigningKey.parse("not a key") == nil)
        #expect(SigningKey.parse("-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEAGb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE=\n-----END PUBLIC KEY-----") == nil)
    }
}
