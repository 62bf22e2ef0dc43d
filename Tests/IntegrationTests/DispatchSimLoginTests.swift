import Foundation
import TestHarness
import Testing

/// dispatchsim on a broker that takes no anonymous client and speaks TLS only: it logs in as the
/// `dispatcher` account (`--username`, `--password-file`) and verifies the broker (`--tls`, `--cafile`).
@Suite(.serialized) struct DispatchSimLoginTests {
    let scratch: ScratchDirectory
    let pki: TestCertificates
    let broker: MosquittoBroker
    let passwordFile: String

    init() throws {
        scratch = try ScratchDirectory()
        pki = try TestCertificates(in: scratch)
        let passwords = scratch.file("broker.passwd")
        guard FileManager.default.createFile(atPath: passwords, contents: nil) else { throw HarnessError("cannot create \(passwords)") }
        let made = try runCommand("/usr/bin/mosquitto_passwd", ["-b", passwords, "dispatcher", "pw-dispatcher"])
        guard made.exitCode == 0 else { throw HarnessError("mosquitto_passwd: \(made.output)") }
        // A dispatcher has no client certificate of its own: the login is its identity.
        let listener = pki.brokerSettings.replacingOccurrences(of: "require_certificate true", with: "require_certificate false")
        broker = try MosquittoBroker(in: scratch, listenerSettings: listener + "\nallow_anonymous false\npassword_file \(passwords)")
        passwordFile = scratch.file("dispatcher.password")
    }

    func writePassword(_ password: String) throws {
        try (password + "\n").write(toFile: passwordFile, atomically: true, encoding: .utf8)
        chmod(passwordFile, 0o600)
    }

    var login: [String] { ["--username", "dispatcher", "--password-file", passwordFile, "--tls", "--cafile", pki.caFile] }

    @Test func itLogsInOverTLSAsTheDispatcherAccount() async throws {
        try writePassword("pw-dispatcher")
        let zone = DispatchSimUnderTest.square(around: 40.75, -73.98)
        let sim = try await DispatchSimUnderTest(mqttPort: broker.port, zones: [("Z", zone)], in: scratch, arguments: login)
        #expect(sim.process.isRunning)
        #expect(!sim.log.contains("pw-dispatcher"), "the password is never logged")
    }

    @Test func aWrongPasswordIsRefusedAndSaidSo() async throws {
        try writePassword("not-the-password")
        let zonesPath = scratch.file("zones.toml")
        try DispatchSimUnderTest.zonesTOML([("Z", DispatchSimUnderTest.square(around: 40.75, -73.98))])
            .write(toFile: zonesPath, atomically: true, encoding: .utf8)
        let process = try ChildProcess(
            Corpus.binary("dispatchsim"), ["--zones", zonesPath, "--port", String(broker.port), "--fleet", "test"] + login,
            logPath: scratch.file("refused.log"))
        try await waitUntil("dispatchsim to say the broker refused it", timeoutS: 20, detail: { process.log }) {
            process.log.contains("cannot connect to the broker: Connection Refused: not authorised")
        }
        #expect(!process.log.contains("connected to the broker"), "\(process.log)")
        process.stop()
    }

    @Test func loginOptionsThatCannotWorkAreUsageErrors() throws {
        try writePassword("pw-dispatcher")
        let zonesPath = scratch.file("zones.toml")
        try DispatchSimUnderTest.zonesTOML([("Z", DispatchSimUnderTest.square(around: 40.75, -73.98))])
            .write(toFile: zonesPath, atomically: true, encoding: .utf8)
        let base = ["--zones", zonesPath, "--port", String(broker.port)]
        let noUser = try runCommand(Corpus.binary("dispatchsim"), base + ["--password-file", passwordFile])
        #expect(noUser.exitCode == 64 && noUser.output.contains("--password-file needs --username"), "\(noUser.output)")
        let noTLS = try runCommand(Corpus.binary("dispatchsim"), base + ["--cafile", pki.caFile])
        #expect(noTLS.exitCode == 64 && noTLS.output.contains("--cafile needs --tls"), "\(noTLS.output)")
        chmod(passwordFile, 0o644)
        let readable = try runCommand(Corpus.binary("dispatchsim"), base + ["--username", "dispatcher", "--password-file", passwordFile])
        #expect(readable.exitCode == 1 && readable.output.contains("accessible by group or others"), "\(readable.output)")
    }
}
