import Foundation
import Logging
import MQTTLink
import TestHarness
import Testing

/// libmosquitto over TLS with client certificates against a real mosquitto, with a PKI the test
/// makes with openssl.
@Suite(.serialized) struct MQTTTLSTests {
    let scratch: ScratchDirectory
    let pki: TestCertificates
    let broker: MosquittoBroker

    init() throws {
        scratch = try ScratchDirectory()
        pki = try TestCertificates(in: scratch)
        broker = try MosquittoBroker(in: scratch, listenerSettings: pki.brokerSettings)
    }

    /// The first connected or connect-failed event of a connection with these TLS settings.
    func firstOutcome(_ tls: MQTTTLS) async throws -> MQTTEvent {
        let connection = MQTTConnection(
            endpoint: MQTTEndpoint(host: "127.0.0.1", port: broker.port, keepaliveS: 10, clientID: "tls-\(UUID().uuidString.prefix(6))", tls: tls),
            will: nil, backoff: ReconnectBackoff(minimumS: 5, maximumS: 5), logger: Logger(label: "tls-test"))
        connection.start()
        defer { connection.stop() }
        let outcome = Task { () -> MQTTEvent? in
            for await event in connection.events {
                switch event {
                case .connected, .connectFailed: return event
                default: continue
                }
            }
            return nil
        }
        let timeout = Task {
            try await Task.sleep(for: .seconds(15))
            outcome.cancel()
        }
        defer { timeout.cancel() }
        return try #require(await outcome.value, "no outcome within 15 s; broker log:\n\(broker.log)")
    }

    @Test(arguments: ["tlsv1.2", "tlsv1.3"])
    func connectsWithTheRightClientCertificate(version: String) async throws {
        let event = try await firstOutcome(MQTTTLS(caFile: pki.caFile, certFile: pki.clientCertFile, keyFile: pki.clientKeyFile, version: version))
        guard case .connected = event else {
            Issue.record("expected to connect, got \(event)")
            return
        }
    }

    /// A refused TLS setup and the words the operator gets to read about it.
    enum Refusal: String, CaseIterable, Sendable {
        case brokerCertificateFromAnotherCA, expiredClientCertificate, certificateAndKeyDoNotMatch
        case clientCertificateFromAnUntrustedCA, noClientCertificate

        func settings(_ pki: TestCertificates) -> MQTTTLS {
            switch self {
            case .brokerCertificateFromAnotherCA:
                MQTTTLS(caFile: pki.otherCAFile, certFile: pki.clientCertFile, keyFile: pki.clientKeyFile, version: "tlsv1.2")
            case .expiredClientCertificate:
                MQTTTLS(caFile: pki.caFile, certFile: pki.expiredClientCertFile, keyFile: pki.clientKeyFile, version: "tlsv1.2")
            case .certificateAndKeyDoNotMatch:
                MQTTTLS(caFile: pki.caFile, certFile: pki.clientCertFile, keyFile: pki.otherClientKeyFile, version: "tlsv1.2")
            case .clientCertificateFromAnUntrustedCA:
                MQTTTLS(caFile: pki.caFile, certFile: pki.foreignClientCertFile, keyFile: pki.clientKeyFile, version: "tlsv1.2")
            case .noClientCertificate:
                MQTTTLS(caFile: pki.caFile, certFile: nil, keyFile: nil, version: "tlsv1.2")
            }
        }

        /// OpenSSL's reason, then our hint.
        var expected: [String] {
            switch self {
            case .brokerCertificateFromAnotherCA: ["certificate verify failed", "not signed by cafile"]
            case .expiredClientCertificate: ["certificate expired", "our client certificate: it has expired"]
            case .certificateAndKeyDoNotMatch: ["key values mismatch", "certfile and keyfile do not belong together"]
            case .clientCertificateFromAnUntrustedCA: ["unknown ca", "does not trust the CA that signed our client certificate"]
            case .noClientCertificate: ["certificate required", "requires a client certificate"]
            }
        }
    }

    @Test(arguments: Refusal.allCases)
    func refusedWithAClearReason(refusal: Refusal) async throws {
        let event = try await firstOutcome(refusal.settings(pki))
        guard case .connectFailed(let reason) = event else {
            Issue.record("expected a refused connection, got \(event)")
            return
        }
        for text in refusal.expected {
            #expect(reason.contains(text), "\(reason)")
        }
    }
}

/// The daemon with `[mqtt] tls`, client certificates, username and password_file.
@Suite(.serialized) struct DaemonTLSTests {
    let scratch: ScratchDirectory
    let pki: TestCertificates
    let broker: MosquittoBroker
    let passwordFile: String

    init() throws {
        scratch = try ScratchDirectory()
        pki = try TestCertificates(in: scratch)
        let brokerPasswords = scratch.file("broker.passwd")
        guard FileManager.default.createFile(atPath: brokerPasswords, contents: nil) else {
            throw HarnessError("cannot create \(brokerPasswords)")
        }
        let made = try runCommand("/usr/bin/mosquitto_passwd", ["-b", brokerPasswords, "T1", "s3cret-pa55"])
        guard made.exitCode == 0 else { throw HarnessError("mosquitto_passwd: \(made.output)") }
        broker = try MosquittoBroker(in: scratch, listenerSettings: pki.brokerSettings + "\nallow_anonymous false\npassword_file \(brokerPasswords)")
        passwordFile = scratch.file("mqtt.password")
        try "s3cret-pa55\n".write(toFile: passwordFile, atomically: true, encoding: .utf8)
        chmod(passwordFile, 0o600)
    }

    func unit(keyFile: String? = nil, password: String? = nil) throws -> UnitUnderTest {
        if let password { try (password + "\n").write(toFile: passwordFile, atomically: true, encoding: .utf8); chmod(passwordFile, 0o600) }
        return try UnitUnderTest(
            mqttPort: broker.port, gpsdPort: try Loopback.freePort(), in: scratch,
            mqttTOML: """
                tls = true
                cafile = "\(pki.caFile)"
                certfile = "\(pki.clientCertFile)"
                keyfile = "\(keyFile ?? pki.clientKeyFile)"
                tls_version = "tlsv1.2"
                username = "T1"
                password_file = "\(passwordFile)"
                """)
    }

    @Test func connectsWithCertificateAndPasswordAndNeverLogsThePassword() async throws {
        let unit = try unit()
        try await unit.start()
        try await unit.waitForStatus("connected over TLS") { $0.broker.connected }
        unit.stop()
        #expect(!unit.log.contains("s3cret-pa55"))
    }

    @Test func wrongPasswordIsAClearErrorAndNoSecretInTheLog() async throws {
        let unit = try unit(password: "wrong-guess")
        try await unit.start()
        try await waitUntil("the refusal in the log", timeoutS: 10, detail: { unit.log }) { unit.log.contains("not authorised") }
        #expect(try unit.status().broker.connected == false)
        unit.stop()
        #expect(!unit.log.contains("wrong-guess"))
    }

    @Test func refusesAGroupReadablePasswordFile() async throws {
        let unit = try unit()
        chmod(passwordFile, 0o640)
        for arguments in [["--config", unit.configPath, "--check"], ["--config", unit.configPath]] {
            let result = try runCommand(Corpus.binary("taxiunitd"), arguments)
            #expect(result.exitCode == 1)
            #expect(result.output.contains("password_file \(passwordFile) is accessible by group or others (mode 640); refusing to use it"), "\(result.output)")
        }
    }

    @Test func refusesAWorldReadableClientKey() async throws {
        let unit = try unit()
        chmod(pki.clientKeyFile, 0o644)
        let result = try runCommand(Corpus.binary("taxiunitd"), ["--config", unit.configPath, "--check"])
        #expect(result.exitCode == 1)
        #expect(result.output.contains("keyfile \(pki.clientKeyFile) is accessible by group or others (mode 644)"), "\(result.output)")
    }

    @Test func logsAClearLineForAnExpiredClientCertificate() async throws {
        let unit = try UnitUnderTest(
            mqttPort: broker.port, gpsdPort: try Loopback.freePort(), in: scratch,
            mqttTOML: """
                tls = true
                cafile = "\(pki.caFile)"
                certfile = "\(pki.expiredClientCertFile)"
                keyfile = "\(pki.clientKeyFile)"
                """)
        try await unit.start()
        try await waitUntil("the expiry in the log", timeoutS: 10, detail: { unit.log }) {
            unit.log.contains("<4>taxiunitd: cannot connect to broker") && unit.log.contains("the broker rejected our client certificate: it has expired")
        }
        unit.stop()
    }
}
