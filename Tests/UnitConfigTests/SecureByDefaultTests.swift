import Crypto
import Foundation
import Testing
import UnitConfig

/// Secure by default: TLS off the loopback unless the local file waives it, and the keys a unit trusts.
@Suite struct SecureByDefaultTests {
    let unit = "[unit]\nid = \"T1\"\nfleet = \"f\"\n"

    func configuration(_ toml: String) throws(ConfigError) -> UnitConfiguration {
        try UnitConfiguration(document: try ConfigValue.parseTOML(unit + toml))
    }

    func problems(_ toml: String) -> [String] {
        do {
            _ = try configuration(toml)
            return []
        } catch {
            return error.problems
        }
    }

    // MARK: TLS unless waived

    @Test func aRemoteBrokerWithoutTLSIsRefusedUnlessTheLocalFileWaivesIt() throws {
        #expect(problems("[mqtt]\nhost = \"broker.example\"\n") == [
            #"mqtt.host "broker.example" is not this machine: set tls = true (cafile = "system" for a broker with a public CA), or allow_plaintext = true to send in the clear"#,
        ])
        #expect(problems("[mqtt]\nhost = \"10.0.0.7\"\n").count == 1)
        #expect(try configuration("[mqtt]\nhost = \"broker.example\"\nallow_plaintext = true\n").mqtt.allowPlaintext)
        #expect(problems("[mqtt]\nhost = \"broker.example\"\ntls = true\ncafile = \"system\"\n").isEmpty)
    }

    @Test(arguments: ["127.0.0.1", "127.1.2.3", "localhost", "LOCALHOST", "::1", "[::1]"])
    func theLoopbackNeedsNoTLS(host: String) {
        #expect(problems("[mqtt]\nhost = \"\(host)\"\n").isEmpty)
    }

    @Test(arguments: ["128.0.0.1", "127.0.0", "127.0.0.1.example", "localhost.example", "1127.0.0.1", "::2", "127.0.0.256"])
    func lookalikesAreNotTheLoopback(host: String) {
        #expect(!UnitConfiguration.isLoopback(host))
    }

    @Test func cafileSystemIsTheOperatingSystemsStoreAndALPNIsOptional() throws {
        let tls = try #require(try configuration("[mqtt]\ntls = true\ncafile = \"system\"\nalpn = \"mqtt\"\n").mqtt.tls)
        #expect(tls.caFile == nil)
        #expect(tls.alpn == "mqtt")
        #expect(try configuration("[mqtt]\ntls = true\ncafile = \"/etc/ca.crt\"\n").mqtt.tls?.alpn == nil)
        #expect(problems("[mqtt]\nalpn = \"mqtt\"\n") == ["mqtt.alpn needs tls = true"])
        for bad in ["a b", "a\\u0001", String(repeating: "x", count: 256)] {
            #expect(problems("[mqtt]\ntls = true\ncafile = \"system\"\nalpn = \"\(bad)\"\n")
                == [#"mqtt.alpn must be one protocol name of at most 255 printable ASCII characters, such as "mqtt""#], "\(bad)")
        }
    }

    let tlsLocal = "[mqtt]\nhost = \"broker-a.example\"\ntls = true\ncafile = \"system\"\n"
    let plaintextLocal = "[mqtt]\nhost = \"broker-a.example\"\nallow_plaintext = true\n"

    func overlayProblems(_ remote: ConfigValue, on local: String) -> [String] {
        do {
            _ = try UnitConfiguration.overlay([remote], on: ConfigValue.parseTOML(unit + local))
            return []
        } catch {
            return error.problems
        }
    }

    @Test func aFleetDocumentCannotTurnTLSOffNorWaiveIt() {
        #expect(overlayProblems(.table(["mqtt": .table(["tls": .bool(false)])]), on: tlsLocal).first == "mqtt.tls is not remotely settable")
        #expect(overlayProblems(.table(["mqtt": .table(["allow_plaintext": .bool(true), "host": .string("127.0.0.1")])]), on: tlsLocal)
            == ["mqtt.allow_plaintext is not remotely settable"])
        #expect(overlayProblems(.table(["mqtt": .table(["alpn": .string("x")])]), on: tlsLocal) == ["mqtt.alpn is not remotely settable"])
    }

    @Test func aFleetDocumentCannotMoveTheUnitToAPlaintextRemoteBroker() {
        // The local file's waiver is for its own broker only.
        #expect(overlayProblems(.table(["mqtt": .table(["host": .string("broker-b.example")])]), on: plaintextLocal)
            == ["mqtt.host: a fleet config cannot move the unit to a broker off this machine without TLS (broker-b.example:1883)"])
        #expect(overlayProblems(.table(["mqtt": .table(["port": .integer(1884)])]), on: plaintextLocal).count == 1)
        // A loopback broker in the clear.
        #expect(overlayProblems(.table(["mqtt": .table(["host": .string("broker-b.example")])]), on: "").count == 1)
        // Allowed: another TLS broker, the loopback, or other keys while on the waived broker.
        #expect(overlayProblems(.table(["mqtt": .table(["host": .string("broker-b.example"), "port": .integer(8884)])]), on: tlsLocal).isEmpty)
        #expect(overlayProblems(.table(["mqtt": .table(["host": .string("127.0.0.1")])]), on: plaintextLocal).isEmpty)
        #expect(overlayProblems(.table(["mqtt": .table(["max_inflight": .integer(3)])]), on: plaintextLocal).isEmpty)
    }

    /// Every node of a fleet's `hosts` is held to the rule, not only the first: a loopback node ahead
    /// of a remote one does not carry the local waiver to the remote one.
    @Test func everyNodeOfAFleetsHostsIsHeldToThePlaintextRule() {
        let loopbackWaived = "[mqtt]\nhost = \"127.0.0.1\"\nallow_plaintext = true\n"
        let hosts = { (nodes: [String]) in ConfigValue.table(["mqtt": .table(["hosts": .array(nodes.map(ConfigValue.string))])]) }
        #expect(overlayProblems(hosts(["127.0.0.1:1", "192.0.2.2:1883"]), on: loopbackWaived)
            == ["mqtt.hosts: a fleet config cannot move the unit to a broker off this machine without TLS (192.0.2.2:1883)"])
        #expect(overlayProblems(hosts(["192.0.2.2:1883", "127.0.0.1:1", "192.0.2.3"]), on: loopbackWaived).count == 2)
        #expect(overlayProblems(hosts(["broker-a.example:1883", "broker-b.example:1883"]), on: plaintextLocal)
            == ["mqtt.hosts: a fleet config cannot move the unit to a broker off this machine without TLS (broker-b.example:1883)"])
        // The waived broker itself, and loopback nodes, in any order.
        #expect(overlayProblems(hosts(["127.0.0.1:1", "broker-a.example:1883", "localhost:2"]), on: plaintextLocal).isEmpty)
        // Under TLS every node may be remote.
        #expect(overlayProblems(hosts(["broker-b.example:8883", "broker-c.example:8883"]), on: tlsLocal).isEmpty)
    }

    // MARK: Keys

    /// `openssl genpkey -algorithm ed25519 | openssl pkey -pubout`, and its 32 raw bytes.
    let opensslPEM = """
        -----BEGIN PUBLIC KEY-----
        MCowBQYDK2VwAyEAJuXWNMu1o71mj6gc9CUJhX+M68mHJ6IEmX4fztAkSFo=
        -----END PUBLIC KEY-----
        """
    let opensslRaw = "JuXWNMu1o71mj6gc9CUJhX+M68mHJ6IEmX4fztAkSFo="

    @Test func rawPEMAndDERKeysAreTheSameKey() throws {
        let raw = try #require(Data(base64Encoded: opensslRaw))
        #expect(try FleetPublicKey.parse(opensslRaw).get() == Array(raw))
        #expect(try FleetPublicKey.parse(opensslPEM).get() == Array(raw))
        #expect(try FleetPublicKey.parse("MCowBQYDK2VwAyEAJuXWNMu1o71mj6gc9CUJhX+M68mHJ6IEmX4fztAkSFo=").get() == Array(raw))
        let config = try configuration("[fleet]\nconfig_pubkeys = [\"\"\"\n\(opensslPEM)\n\"\"\"]\ncommand_pubkeys = [\"\(opensslRaw)\"]\n")
        #expect(config.fleet.configPubkeys == [Array(raw)])
        #expect(config.fleet.commandPubkeys == [Array(raw)])
    }

    @Test func otherKindsOfKeysAndJunkAreRefused() {
        let p256 = """
            -----BEGIN PUBLIC KEY-----
            MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE151eetmTF7d1p5TR/9KwTjNA0mvl
            qk9CfGBn7I4+/MbC4OGgx6p8eS3Uuzln4DqjO7gzrzGy3oGhqJIMh232pg==
            -----END PUBLIC KEY-----
            """
        #expect(FleetPublicKey.parse(p256) == .failure(.notEd25519))
        #expect(FleetPublicKey.parse("abc") == .failure(.unreadable))
        #expect(FleetPublicKey.parse("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----") == .failure(.unreadable))
        #expect(FleetPublicKey.parse(String(repeating: "A", count: 5000)) == .failure(.unreadable))
        #expect(problems("[fleet]\ncommand_pubkeys = [\"abc\"]\n")
            == [#"fleet.command_pubkeys entries must be Ed25519 public keys (32 bytes in base64, or PEM), found "abc""#])
    }

    @Test func everySmallOrderPointIsAWeakKeyWithOrWithoutItsSignBit() throws {
        #expect(FleetPublicKey.smallOrder.count == 7)
        for point in FleetPublicKey.smallOrder {
            var signed = point
            signed[31] |= 0x80
            for key in [point, signed] {
                #expect(FleetPublicKey.parse(Data(key).base64EncodedString()) == .failure(.weak))
            }
        }
        #expect(problems("[fleet]\nconfig_pubkeys = [\"\(String(repeating: "A", count: 43))=\"]\n") == [
            #"fleet.config_pubkeys entry "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=" is a weak key (a point of small order, under which forged signatures verify); make one with taxifleet gen-key"#,
        ])
        #expect(!FleetPublicKey.isWeak(Array(Curve25519.Signing.PrivateKey().publicKey.rawRepresentation)))
    }

    /// Why they are refused: under the identity point, a signature made with no private key at all
    /// verifies for any message.
    @Test func aWeakKeyWouldVerifyAForgedSignature() throws {
        let identity = try Curve25519.Signing.PublicKey(rawRepresentation: FleetPublicKey.smallOrder[1])
        let forged = FleetPublicKey.smallOrder[1] + [UInt8](repeating: 0, count: 32)
        #expect(identity.isValidSignature(forged, for: Array("{\"settings\":{\"mqtt\":{\"host\":\"evil\"}}}".utf8)))
    }
}
