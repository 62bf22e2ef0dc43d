import ControlSocket
import Foundation
import Logging
import MQTTLink
import TestHarness
import Testing

// Issue 16, on the real parts: mosquitto with the shipped ACL, the daemon, taxiunitctl, openssl.

/// One logged-in connection of the project's libmosquitto adapter, recording what it receives.
final class Account: @unchecked Sendable {
    let connection: MQTTConnection
    private let lock = NSLock()
    private var received: [MQTTMessage] = []
    private var disconnections = 0
    private var connections = 0
    private var pump: Task<Void, Never>?

    init(_ username: String, port: Int, clientID: String? = nil, subscribe topics: [String] = []) async throws {
        connection = MQTTConnection(
            endpoint: MQTTEndpoint(
                host: "127.0.0.1", port: port, keepaliveS: 10, clientID: clientID ?? "acl-\(username)", cleanSession: true,
                credentials: MQTTCredentials(username: username, password: "pw-\(username)")),
            will: nil, backoff: ReconnectBackoff(minimumS: 5, maximumS: 5), logger: Logger(label: "acl-\(username)"))
        pump = Task { [connection, weak self] in
            for await event in connection.events {
                switch event {
                case .connected:
                    for topic in topics { try? connection.subscribe(topic, qos: 1) }
                    self?.lock.withLock { self?.connections += 1 }
                case .disconnected:
                    self?.lock.withLock { self?.disconnections += 1 }
                case .message(let message):
                    self?.lock.withLock { self?.received.append(message) }
                default:
                    break
                }
            }
        }
        connection.start()
        try await waitUntil("\(username) connected", timeoutS: 10) { lock.withLock { connections > 0 } }
        // SUBACK is not reported; give the broker a moment to register the subscriptions.
        try await Task.sleep(for: .milliseconds(300))
    }

    var messages: [MQTTMessage] { lock.withLock { received } }
    var wasDisconnected: Bool { lock.withLock { disconnections > 0 } }

    func publish(_ topic: String, _ payload: String) throws {
        _ = try connection.publish(topic: topic, payload: Array(payload.utf8), qos: 1, retain: false)
    }

    func stop() {
        connection.stop()
        pump?.cancel()
    }

    deinit { stop() }
}

/// A real mosquitto with `etc/mosquitto-acl.example` (`extraACL` after it) and the listener
/// settings of `etc/mosquitto.conf.example` that are not paths (those are the scratch directory's
/// here); each account's password is `pw-{account}`.
func exampleBroker(in scratch: ScratchDirectory, accounts: [String], extraACL: String) throws -> MosquittoBroker {
    let passwords = scratch.file("taxi.passwd")
    guard FileManager.default.createFile(atPath: passwords, contents: nil) else { throw HarnessError("cannot create \(passwords)") }
    for account in accounts {
        let made = try runCommand("/usr/bin/mosquitto_passwd", ["-b", passwords, account, "pw-\(account)"])
        guard made.exitCode == 0 else { throw HarnessError("mosquitto_passwd: \(made.output)") }
    }
    let acl = scratch.file("taxi.acl")
    let example = try String(contentsOfFile: Corpus.packageRoot + "/etc/mosquitto-acl.example", encoding: .utf8)
    try (example + "\n" + extraACL + "\n").write(toFile: acl, atomically: true, encoding: .utf8)
    let listener = try String(contentsOfFile: Corpus.packageRoot + "/etc/mosquitto.conf.example", encoding: .utf8)
        .split(separator: "\n").map(String.init)
        .filter { line in ["allow_anonymous ", "use_username_as_clientid ", "per_listener_settings "].contains { line.hasPrefix($0) } }
    guard listener.contains("use_username_as_clientid true") else { throw HarnessError("the example listener does not tie client ids to usernames") }
    return try MosquittoBroker(in: scratch, listenerSettings: (listener + ["password_file \(passwords)", "acl_file \(acl)"]).joined(separator: "\n"))
}

/// The example's ACL and listener in a real mosquitto, with two units, `dispatcher` and `fleet`.
@Suite(.serialized) struct BrokerACLTests {
    let scratch: ScratchDirectory
    let broker: MosquittoBroker
    static let units = ["T1", "T2"]
    static let outbound = ["status", "pos", "pos/last", "job/reply", "event", "sos", "config/ack", "cmd/reply", "telemetry"]
    static let inbound = ["job/offer", "job/cancel", "job/update", "sos/ack", "config", "cmd"]
    static let fleetConfig = "taxi/north/config"
    /// Every topic of both units and the fleet's config.
    static let topics = units.flatMap { unit in (outbound + inbound).map { "taxi/north/\(unit)/\($0)" } } + [fleetConfig]

    init() throws {
        scratch = try ScratchDirectory()
        // Test instruments, not part of the example: `observer` sees every publish that got through,
        // `admin` publishes what each account's subscriptions are tried with.
        broker = try exampleBroker(
            in: scratch, accounts: Self.units + ["dispatcher", "fleet", "observer", "admin"],
            extraACL: "user observer\ntopic read #\nuser admin\ntopic write #")
    }

    /// What each account may publish, as the issue states it.
    static func mayPublish(_ account: String, _ topic: String) -> Bool {
        let levels = topic.split(separator: "/", maxSplits: 3).map(String.init)
        if topic == fleetConfig { return account == "fleet" }
        let (unit, name) = (levels[2], levels[3])
        switch account {
        case "dispatcher": return ["job/offer", "job/cancel", "job/update", "sos/ack"].contains(name)
        case "fleet": return ["config", "cmd"].contains(name)
        default: return account == unit && outbound.contains(name)
        }
    }

    /// What each account may read. The fleet's config is readable by every account: mosquitto's
    /// `pattern` rules apply to all logins (etc/mosquitto-acl.example), and the document is signed.
    static func mayRead(_ account: String, _ topic: String) -> Bool {
        if topic == fleetConfig { return true }
        let levels = topic.split(separator: "/", maxSplits: 3).map(String.init)
        let (unit, name) = (levels[2], levels[3])
        switch account {
        case "dispatcher": return ["status", "pos", "pos/last", "job/reply", "event", "sos"].contains(name)
        case "fleet": return ["config/ack", "cmd/reply", "status", "telemetry", "pos", "pos/last", "config"].contains(name)
        default: return account == unit && inbound.contains(name)
        }
    }

    @Test func everyAllowedAndForbiddenPublishAndSubscribe() async throws {
        let accounts = Self.units + ["dispatcher", "fleet"]
        var connected: [String: Account] = [:]
        for account in accounts {
            connected[account] = try await Account(account, port: broker.port, subscribe: Self.topics)
        }
        let observer = try await Account("observer", port: broker.port, subscribe: ["#"])
        let admin = try await Account("admin", port: broker.port)

        // Subscriptions: admin publishes on every topic; each account must get exactly what it may read.
        for topic in Self.topics { try admin.publish(topic, "admin|\(topic)") }
        try await waitUntil("the observer to see admin's publishes", timeoutS: 10) {
            observer.messages.filter { $0.text.hasPrefix("admin|") }.count == Self.topics.count
        }
        try await Task.sleep(for: .milliseconds(500))
        for account in accounts {
            let got = Set(connected[account]!.messages.filter { $0.text.hasPrefix("admin|") }.map(\.topic))
            let expected = Set(Self.topics.filter { Self.mayRead(account, $0) })
            #expect(got == expected, "\(account) reads: extra \(got.subtracting(expected).sorted()), missing \(expected.subtracting(got).sorted())")
        }

        // Publishes: each account publishes on every topic; the observer sees only what it may publish.
        for account in accounts {
            for topic in Self.topics { try connected[account]!.publish(topic, "\(account)|\(topic)") }
        }
        let allowed = accounts.flatMap { account in Self.topics.filter { Self.mayPublish(account, $0) }.map { "\(account)|\($0)" } }
        try await waitUntil("the allowed publishes to arrive", timeoutS: 10) {
            Set(observer.messages.map(\.text)).isSuperset(of: allowed)
        }
        // A QoS 1 publish is acknowledged in order; give forbidden ones as long to (not) show up.
        try await Task.sleep(for: .milliseconds(500))
        for account in accounts {
            let got = Set(observer.messages.filter { $0.text.hasPrefix("\(account)|") }.map(\.topic))
            let expected = Set(Self.topics.filter { Self.mayPublish(account, $0) })
            #expect(got == expected, "\(account) publishes: extra \(got.subtracting(expected).sorted()), missing \(expected.subtracting(got).sorted())")
        }
        #expect(Set(allowed.map { String($0.split(separator: "|")[0]) }) == Set(accounts), "every account may publish something")
        for account in connected.values { account.stop() }
    }

    @Test func aUnitsCredentialsCannotConnectUnderAnotherUnitsClientID() async throws {
        // T2 as the daemon connects: client id taxiunitd-{fleet}-{unit}, persistent session.
        let victim = try await Account("T2", port: broker.port, clientID: "taxiunitd-north-T2", subscribe: ["taxi/north/T2/job/offer"])
        let dispatcher = try await Account("dispatcher", port: broker.port)
        let observer = try await Account("observer", port: broker.port, subscribe: ["#"])
        // T1's login with T2's client id, and with T2's username as client id.
        for stolen in ["taxiunitd-north-T2", "T2"] {
            let intruder = try await Account("T1", port: broker.port, clientID: stolen, subscribe: ["taxi/north/T2/job/offer"])
            try dispatcher.publish("taxi/north/T2/job/offer", "offer via \(stolen)")
            try await waitUntil("T2 to get the offer", timeoutS: 10) { victim.messages.contains { $0.text == "offer via \(stolen)" } }
            #expect(!victim.wasDisconnected, "T1 took T2's session over with client id \(stolen)")
            #expect(!intruder.messages.contains { $0.text == "offer via \(stolen)" })
            // The intruder is T1, whatever client id it sent: it can still publish as T1 only.
            try intruder.publish("taxi/north/T1/pos", "T1 as \(stolen)")
            try intruder.publish("taxi/north/T2/pos", "T2 forged as \(stolen)")
            try await waitUntil("T1's own publish", timeoutS: 10) { observer.messages.contains { $0.text == "T1 as \(stolen)" } }
            intruder.stop()
        }
        try await Task.sleep(for: .milliseconds(300))
        #expect(!observer.messages.contains { $0.text.hasPrefix("T2 forged") })
        #expect(!victim.wasDisconnected)
        victim.stop()
    }
}

/// TLS off the loopback unless the local file waives it; a fleet document cannot turn it off.
@Suite(.serialized) struct PlaintextBrokerTests {
    let scratch: ScratchDirectory

    init() throws { scratch = try ScratchDirectory() }

    /// A unit whose file names a broker that is not this machine (TEST-NET-1: nothing answers).
    func remoteUnit(_ extraMQTT: String = "") throws -> UnitUnderTest {
        let unit = try UnitUnderTest(mqttPort: 1883, gpsdPort: try Loopback.freePort(), in: scratch, mqttTOML: extraMQTT)
        let file = try String(contentsOfFile: unit.configPath, encoding: .utf8)
        try file.replacingOccurrences(of: "[mqtt]\nhost = \"127.0.0.1\"", with: "[mqtt]\nhost = \"192.0.2.1\"")
            .write(toFile: unit.configPath, atomically: true, encoding: .utf8)
        return unit
    }

    @Test func checkAndStartRefuseARemotePlaintextBrokerAndAcceptItWhenWaived() async throws {
        let refused = try remoteUnit()
        for arguments in [["--config", refused.configPath, "--check"], ["--config", refused.configPath]] {
            let result = try runCommand(Corpus.binary("taxiunitd"), arguments)
            #expect(result.exitCode == 1, "\(arguments): \(result.output)")
            #expect(result.output.contains(#"mqtt.host "192.0.2.1" is not this machine: set tls = true"#), "\(result.output)")
        }
        let waived = try remoteUnit("allow_plaintext = true")
        let checked = try runCommand(Corpus.binary("taxiunitd"), ["--config", waived.configPath, "--check"])
        #expect(checked.exitCode == 0, "\(checked.output)")
        try await waived.start()
        #expect(try waived.status().broker.connected == false)
        waived.stop()
    }

    @Test func aFleetDocumentThatTurnsTLSOffOrGoesToAPlaintextRemoteBrokerIsInvalid() async throws {
        let broker = try MosquittoBroker(in: scratch)
        let signer = try FleetSigner(in: scratch)
        let unit = try UnitUnderTest(mqttPort: broker.port, gpsdPort: try Loopback.freePort(), in: scratch, extraTOML: signer.fleetSection())
        let recorder = try await MQTTRecorder(port: broker.port, subscribe: [unit.topicBase + "config/ack"])
        try await unit.start()
        try await unit.waitForStatus("connected") { $0.broker.connected }
        let topic = "taxi/\(unit.fleet)/config"
        try recorder.publish(topic, try signer.sign(#"{"version":1,"settings":{"mqtt":{"tls":false}}}"#, topic: topic))
        try recorder.publish(topic, try signer.sign(#"{"version":2,"settings":{"mqtt":{"host":"192.0.2.1","port":1883}}}"#, topic: topic))
        let acks = try await recorder.waitFor("two acks") { $0.count == 2 }.compactMap(\.json)
        #expect(acks.map { $0["result"] as? String } == ["rejected", "rejected"])
        #expect(acks.map { $0["reason"] as? String } == ["invalid", "invalid"])
        #expect((acks[0]["errors"] as? [String])?.contains("mqtt.tls is not remotely settable") == true, "\(acks[0])")
        #expect((acks[1]["errors"] as? [String])?.contains { $0.contains(#"mqtt.host "192.0.2.1" is not this machine"#) } == true, "\(acks[1])")
        #expect(try unit.status().config?.broker == "127.0.0.1:\(broker.port)")
        unit.stop()
    }
}

/// `cafile = "system"` against mosquitto with a test CA, and what `--check` says of the TLS files.
@Suite(.serialized) struct SystemCATests {
    let scratch: ScratchDirectory
    let pki: TestCertificates
    let broker: MosquittoBroker
    /// The test CA installed as OpenSSL's default verify paths read a CA directory: by hash.
    let caDirectory: String

    init() throws {
        scratch = try ScratchDirectory()
        pki = try TestCertificates(in: scratch)
        broker = try MosquittoBroker(in: scratch, listenerSettings: pki.brokerSettings)
        caDirectory = scratch.file("ca-dir")
        try FileManager.default.createDirectory(atPath: caDirectory, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: pki.caFile, toPath: caDirectory + "/taxi-test-ca.pem")
        let rehash = try runCommand("/usr/bin/openssl", ["rehash", caDirectory])
        guard rehash.exitCode == 0 else { throw HarnessError("openssl rehash: \(rehash.output)") }
    }

    func unit(certFile: String? = nil, keyFile: String? = nil, caFile: String = "system") throws -> UnitUnderTest {
        try UnitUnderTest(
            mqttPort: broker.port, gpsdPort: try Loopback.freePort(), in: scratch,
            mqttTOML: """
                tls = true
                cafile = "\(caFile)"
                certfile = "\(certFile ?? pki.clientCertFile)"
                keyfile = "\(keyFile ?? pki.clientKeyFile)"
                alpn = "mqtt"
                """)
    }

    /// The system store is only the temporary CA directory: no bundle file.
    var systemStore: [String: String] { ["SSL_CERT_DIR": caDirectory, "SSL_CERT_FILE": scratch.file("no-bundle.pem")] }

    @Test func theSystemStoreVerifiesTheBroker() async throws {
        let unit = try unit()
        try await unit.start(environment: systemStore)
        try await unit.waitForStatus("connected over TLS with the system's CAs") { $0.broker.connected }
        unit.stop()
    }

    @Test func aSystemStoreWithoutTheCAFailsVerification() async throws {
        let unit = try unit()
        let empty = scratch.file("empty-ca-dir")
        try FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: true)
        try await unit.start(environment: ["SSL_CERT_DIR": empty, "SSL_CERT_FILE": scratch.file("no-bundle.pem")])
        try await waitUntil("the verification failure in the log", timeoutS: 10, detail: { unit.log }) { unit.log.contains("certificate verify failed") }
        #expect(try unit.status().broker.connected == false)
        unit.stop()
    }

    func check(_ unit: UnitUnderTest) throws -> (output: String, exitCode: Int32) {
        try runCommand(Corpus.binary("taxiunitd"), ["--config", unit.configPath, "--check"])
    }

    @Test func checkAcceptsGoodFilesAndWarnsOfACertificateExpiringWithin30Days() throws {
        let good = try check(try unit(caFile: pki.caFile))
        #expect(good.exitCode == 0, "\(good.output)")
        #expect(!good.output.contains("warning"), "\(good.output)")
        let soon = try check(try unit(certFile: pki.soonExpiringClientCertFile))
        #expect(soon.exitCode == 0, "\(soon.output)")
        #expect(soon.output.contains("warning: mqtt.certfile \(pki.soonExpiringClientCertFile) expires on "), "\(soon.output)")
        #expect(soon.output.contains("in 9 days: renew it") || soon.output.contains("in 10 days: renew it"), "\(soon.output)")
    }

    @Test func checkRefusesExpiredMismatchedMissingAndUnparsableFiles() throws {
        let expired = try check(try unit(certFile: pki.expiredClientCertFile))
        #expect(expired.exitCode == 1)
        #expect(expired.output.contains("mqtt.certfile \(pki.expiredClientCertFile) expired on "), "\(expired.output)")
        let mismatched = try check(try unit(keyFile: pki.otherClientKeyFile))
        #expect(mismatched.exitCode == 1)
        #expect(mismatched.output.contains("mqtt.keyfile \(pki.otherClientKeyFile) does not belong to the certificate"), "\(mismatched.output)")
        let missing = try check(try unit(caFile: scratch.file("nowhere.crt")))
        #expect(missing.exitCode == 1)
        #expect(missing.output.contains("mqtt.cafile \(scratch.file("nowhere.crt")): no such file"), "\(missing.output)")
        let notPEM = scratch.file("not-a-cert.pem")
        try "hello\n".write(toFile: notPEM, atomically: true, encoding: .utf8)
        let junk = try check(try unit(certFile: notPEM))
        #expect(junk.exitCode == 1)
        #expect(junk.output.contains("mqtt.certfile \(notPEM) holds no PEM certificate"), "\(junk.output)")
    }
}

/// The keys a unit trusts, on the daemon and taxifleet.
@Suite(.serialized) struct FleetKeyTests {
    let scratch: ScratchDirectory
    let broker: MosquittoBroker

    init() throws {
        scratch = try ScratchDirectory()
        broker = try MosquittoBroker(in: scratch)
    }

    func openssl(_ arguments: [String]) throws -> String {
        let result = try runCommand("/usr/bin/openssl", arguments, in: scratch.path)
        guard result.exitCode == 0 else { throw HarnessError("openssl \(arguments): \(result.output)") }
        return result.output
    }

    func sign(_ json: String, topic: String, key: String) throws -> String {
        let document = scratch.file("doc-\(UUID().uuidString).json")
        try json.write(toFile: document, atomically: true, encoding: .utf8)
        let (output, code) = try runCommand(Corpus.binary("taxifleet"), ["sign-config", "--key", key, "--topic", topic, document])
        guard code == 0 else { throw HarnessError("sign-config: \(output)") }
        return output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test func genKeyWritesA0600FileOnceAndNeverOverwrites() throws {
        let path = scratch.file("new.key")
        let first = try runCommand(Corpus.binary("taxifleet"), ["gen-key", "--out", path])
        #expect(first.exitCode == 0)
        let mode = try #require(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber).intValue
        #expect(mode == 0o600)
        let key = try String(contentsOfFile: path, encoding: .utf8)
        let again = try runCommand(Corpus.binary("taxifleet"), ["gen-key", "--out", path])
        #expect(again.exitCode != 0)
        #expect(again.output.contains("exists; not overwriting a key"), "\(again.output)")
        #expect(try String(contentsOfFile: path, encoding: .utf8) == key)
        // Nor through a link to somewhere else.
        let link = scratch.file("link.key")
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: scratch.file("elsewhere.key"))
        #expect(try runCommand(Corpus.binary("taxifleet"), ["gen-key", "--out", link]).exitCode != 0)
        #expect(!FileManager.default.fileExists(atPath: scratch.file("elsewhere.key")))
        // The tool that ships on every taxi no longer makes keys, and says where that went.
        for name in ["gen-key", "sign-config"] {
            let moved = try runCommand(Corpus.binary("taxiunitctl"), [name, "--out", scratch.file("old.key")])
            #expect(moved.exitCode == 64)
            #expect(moved.output.contains("\(name) moved to taxifleet"), "\(moved.output)")
        }
        #expect(!FileManager.default.fileExists(atPath: scratch.file("old.key")))
    }

    @Test func pemKeysFromOpensslSignWhatAUnitTrustingThePEMPublicKeyApplies() async throws {
        _ = try openssl(["genpkey", "-algorithm", "ed25519", "-out", "fleet.pem"])
        let publicPEM = try openssl(["pkey", "-in", "fleet.pem", "-pubout"]).trimmingCharacters(in: .whitespacesAndNewlines)
        let unit = try UnitUnderTest(
            mqttPort: broker.port, gpsdPort: try Loopback.freePort(), in: scratch,
            extraTOML: "[fleet]\nconfig_pubkeys = [\"\"\"\n\(publicPEM)\n\"\"\"]\n")
        let recorder = try await MQTTRecorder(port: broker.port, subscribe: [unit.topicBase + "config/ack"])
        try await unit.start()
        try await unit.waitForStatus("connected") { $0.broker.connected }
        let topic = "taxi/\(unit.fleet)/config"
        try recorder.publish(topic, try sign(#"{"version":1,"settings":{"reporting":{"interval_s":9}}}"#, topic: topic, key: scratch.file("fleet.pem")))
        let ack = try await recorder.waitFor("applied") { $0.count == 1 }.first?.json
        #expect(ack?["result"] as? String == "applied", "\(String(describing: ack))")
        unit.stop()
    }

    @Test func checkRefusesWeakKeys() throws {
        let zeros = Data(count: 32).base64EncodedString()
        let order8 = Data([0x26, 0xE8, 0x95, 0x8F, 0xC2, 0xB2, 0x27, 0xB0, 0x45, 0xC3, 0xF4, 0x89, 0xF2, 0xEF, 0x98, 0xF0,
                           0xD5, 0xDF, 0xAC, 0x05, 0xD3, 0xC6, 0x33, 0x39, 0xB1, 0x38, 0x02, 0x88, 0x6D, 0x53, 0xFC, 0x05]).base64EncodedString()
        for (setting, key) in [("config_pubkeys", zeros), ("command_pubkeys", order8)] {
            let unit = try UnitUnderTest(
                unitID: "W\(setting.count)", mqttPort: broker.port, gpsdPort: try Loopback.freePort(), in: scratch,
                extraTOML: "[fleet]\n\(setting) = [\"\(key)\"]\n")
            let result = try runCommand(Corpus.binary("taxiunitd"), ["--config", unit.configPath, "--check"])
            #expect(result.exitCode == 1)
            #expect(result.output.contains("fleet.\(setting) entry \"\(key)\" is a weak key"), "\(result.output)")
        }
    }

    @Test func commandsAreVerifiedWithTheCommandKeysAlone() async throws {
        let config = try FleetSigner(in: scratch, name: "config")
        let commands = try FleetSigner(in: scratch, name: "commands")
        let commandKey = commands.pubkeysLine.replacingOccurrences(of: "config_pubkeys", with: "command_pubkeys")
        let unit = try UnitUnderTest(
            mqttPort: broker.port, gpsdPort: try Loopback.freePort(), in: scratch, extraTOML: "[fleet]\n\(config.pubkeysLine)\n\(commandKey)\n")
        let recorder = try await MQTTRecorder(port: broker.port, subscribe: [unit.topicBase + "cmd/reply", unit.topicBase + "config/ack"])
        try await unit.start()
        try await unit.waitForStatus("connected") { $0.broker.connected }
        let topic = unit.topicBase + "cmd"
        let expires = Int64(Date().timeIntervalSince1970 * 1000) + 60_000
        try recorder.publish(topic, try config.sign(#"{"id":"by-config-key","cmd":"status","expires_at":\#(expires)}"#, topic: topic))
        try recorder.publish(topic, try commands.sign(#"{"id":"by-command-key","cmd":"status","expires_at":\#(expires)}"#, topic: topic))
        let fleetTopic = "taxi/\(unit.fleet)/config"
        try recorder.publish(fleetTopic, try commands.sign(#"{"version":1,"settings":{}}"#, topic: fleetTopic))
        let messages = try await recorder.waitFor("two replies and an ack") { $0.count == 3 }
        let replies = Dictionary(uniqueKeysWithValues: messages.filter { $0.topic.hasSuffix("cmd/reply") }.compactMap(\.json).map { ($0["cmd_id"] as? String ?? "?", $0) })
        #expect(replies["by-config-key"]?["result"] as? String == "rejected")
        #expect(replies["by-config-key"]?["reason"] as? String == "signature")
        #expect(replies["by-command-key"]?["result"] as? String == "ok")
        let ack = messages.first { $0.topic.hasSuffix("config/ack") }?.json
        #expect(ack?["reason"] as? String == "signature", "a command key signs no config: \(String(describing: ack))")
        unit.stop()
    }

    @Test func removingAKeyRevokesTheDocumentsItSignedAtTheNextStart() async throws {
        let old = try FleetSigner(in: scratch, name: "old")
        let new = try FleetSigner(in: scratch, name: "new")
        let unit = try UnitUnderTest(mqttPort: broker.port, gpsdPort: try Loopback.freePort(), in: scratch, extraTOML: old.fleetSection())
        let recorder = try await MQTTRecorder(port: broker.port, subscribe: [unit.topicBase + "config/ack"])
        try await unit.start()
        try await unit.waitForStatus("connected") { $0.broker.connected }
        // Sent live, not retained: after the restart only the store holds it.
        let topic = "taxi/\(unit.fleet)/config"
        try recorder.publish(topic, try old.sign(#"{"version":1,"settings":{"reporting":{"interval_s":9}}}"#, topic: topic))
        try await unit.waitForStatus("v1 applied") { $0.config?.versions == ["fleet": 1] }
        unit.stop()

        let file = try String(contentsOfFile: unit.configPath, encoding: .utf8)
        try file.replacingOccurrences(of: old.pubkeysLine, with: new.pubkeysLine).write(toFile: unit.configPath, atomically: true, encoding: .utf8)
        try await unit.start()
        let status = try unit.status()
        #expect(status.config?.versions.isEmpty == true, "\(String(describing: status.config))")
        #expect(status.aside?["fleet_config"] == 1, "\(String(describing: status.aside))")
        #expect(unit.log.contains("stored fleet config version 1: signature does not match any of the configured keys"), "\(unit.log)")
        unit.stop()
    }
}

/// A broker change is kept only when the fleet's own broker answers with its retained config.
@Suite(.serialized) struct BrokerTrialTests {
    @Test func anOpenBrokerThatIsNotTheFleetsIsRolledBack() async throws {
        let scratch = try ScratchDirectory()
        let home = try MosquittoBroker(in: scratch)
        let stranger = try MosquittoBroker(in: scratch)
        let signer = try FleetSigner(in: scratch)
        let unit = try UnitUnderTest(mqttPort: home.port, gpsdPort: try Loopback.freePort(), in: scratch, extraTOML: signer.fleetSection(rollbackAfterS: 4))
        let recorder = try await MQTTRecorder(port: home.port, subscribe: [unit.topicBase + "config/ack"])
        let watcher = try await MQTTRecorder(port: stranger.port, subscribe: [unit.topicBase + "status"])
        try await unit.start()
        try await unit.waitForStatus("connected") { $0.broker.connected }
        let topic = "taxi/\(unit.fleet)/config"
        try recorder.publish(topic, try signer.sign(#"{"version":1,"settings":{"mqtt":{"port":\#(stranger.port)}}}"#, topic: topic), retain: true)
        // The stranger accepts the unit (its status arrives there), yet that proves nothing.
        try await watcher.waitFor("the unit online on the stranger") { $0.contains { $0.json?["online"] as? Bool == true } }
        #expect(try unit.status().config?.onTrial == "fleet")
        let rolledBack = try await recorder.waitFor("rolled back", timeoutS: 20) { messages in
            messages.contains { $0.json?["result"] as? String == "rolled_back" }
        }.compactMap(\.json).first { $0["result"] as? String == "rolled_back" }
        #expect(rolledBack?["reason"] as? String == "unreachable")
        let status = try await unit.waitForStatus("back home") { $0.broker.connected && $0.config?.broker == "127.0.0.1:\(home.port)" }
        #expect(status.config?.onTrial == nil)
        #expect(status.config?.versions.isEmpty == true)
        unit.stop()
    }

    @Test func theFleetsOwnBrokerWithItsRetainedConfigKeepsTheChange() async throws {
        let scratch = try ScratchDirectory()
        let home = try MosquittoBroker(in: scratch)
        let next = try MosquittoBroker(in: scratch)
        let signer = try FleetSigner(in: scratch)
        let unit = try UnitUnderTest(mqttPort: home.port, gpsdPort: try Loopback.freePort(), in: scratch, extraTOML: signer.fleetSection(rollbackAfterS: 6))
        let topic = "taxi/\(unit.fleet)/config"
        let document = try signer.sign(#"{"version":1,"settings":{"mqtt":{"port":\#(next.port)}}}"#, topic: topic)
        // The fleet publishes the same retained document on both brokers, as a migration would.
        let atNext = try await MQTTRecorder(port: next.port, subscribe: [unit.topicBase + "config/ack"])
        try atNext.publish(topic, document, retain: true)
        let atHome = try await MQTTRecorder(port: home.port, subscribe: [unit.topicBase + "config/ack"])
        try await unit.start()
        try await unit.waitForStatus("connected") { $0.broker.connected }
        try atHome.publish(topic, document, retain: true)
        try await unit.waitForStatus("on the new broker, trial over") {
            $0.broker.connected && $0.config?.broker == "127.0.0.1:\(next.port)" && $0.config?.onTrial == nil
        }
        // Past the window: still there; the applied ack went out on one broker or the other.
        try await Task.sleep(for: .seconds(7))
        #expect(try unit.status().config?.broker == "127.0.0.1:\(next.port)")
        let acks = (atHome.messages + atNext.messages).compactMap { $0.json?["result"] as? String }
        #expect(acks == ["applied"], "\(acks)")
        unit.stop()
    }
}
