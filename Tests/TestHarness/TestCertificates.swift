import Foundation

/// A test PKI made with the openssl command: a CA, a broker certificate for 127.0.0.1, client
/// certificates signed by it (valid and expired), and a second, unrelated CA.
public struct TestCertificates: Sendable {
    public let directory: String

    public var caFile: String { directory + "/ca.crt" }
    public var otherCAFile: String { directory + "/other-ca.crt" }
    public var serverCertFile: String { directory + "/server.crt" }
    public var serverKeyFile: String { directory + "/server.key" }
    public var clientCertFile: String { directory + "/client.crt" }
    public var clientKeyFile: String { directory + "/client.key" }
    public var expiredClientCertFile: String { directory + "/expired-client.crt" }
    /// `clientKeyFile`'s certificate, valid for ten more days.
    public var soonExpiringClientCertFile: String { directory + "/soon-client.crt" }
    /// A valid client certificate whose key is `clientKeyFile`'s stranger.
    public var otherClientKeyFile: String { directory + "/other-client.key" }
    /// Signed by the other CA: the broker does not trust it.
    public var foreignClientCertFile: String { directory + "/foreign-client.crt" }
    /// The OwnTracks feed of unit T1 in fleet "test": CN `test/T1`, its username where the
    /// certificate is the login.
    public var feedCertFile: String { directory + "/feed-client.crt" }
    public var feedKeyFile: String { directory + "/feed-client.key" }
    /// A client of the test's own (CN `observer`), to watch what a unit publishes.
    public var observerCertFile: String { directory + "/observer-client.crt" }
    public var observerKeyFile: String { directory + "/observer-client.key" }

    public init(in scratch: ScratchDirectory) throws {
        directory = scratch.file("pki")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try makeCA("ca", subject: "/CN=taxiunitd test CA")
        try makeCA("other-ca", subject: "/CN=someone else's CA")
        try makeKeyAndRequest("server", subject: "/CN=localhost")
        try write("san.ext", "subjectAltName=IP:127.0.0.1,DNS:localhost\n")
        try sign("server", by: "ca", output: "server.crt", days: 30, extensions: "san.ext")
        try makeKeyAndRequest("client", subject: "/CN=T1")
        // Longer than the 30 days within which `--check` warns of the expiry.
        try sign("client", by: "ca", output: "client.crt", days: 90)
        // Not after one day before its not-before: expired from the start.
        try sign("client", by: "ca", output: "expired-client.crt", days: -1)
        try sign("client", by: "ca", output: "soon-client.crt", days: 10)
        try sign("client", by: "other-ca", output: "foreign-client.crt", days: 30)
        try makeKeyAndRequest("other-client", subject: "/CN=T2")
        // openssl reads "\/" as a "/" inside the CN.
        try makeKeyAndRequest("feed-client", subject: "/CN=test\\/T1")
        try sign("feed-client", by: "ca", output: "feed-client.crt", days: 90)
        try makeKeyAndRequest("observer-client", subject: "/CN=observer")
        try sign("observer-client", by: "ca", output: "observer-client.crt", days: 90)
        for key in ["ca", "other-ca", "server", "client", "other-client", "feed-client", "observer-client"] {
            chmod(directory + "/\(key).key", 0o600)
        }
    }

    private func makeCA(_ name: String, subject: String) throws {
        try openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                     "-keyout", "\(name).key", "-out", "\(name).crt", "-days", "30", "-subj", subject])
    }

    private func makeKeyAndRequest(_ name: String, subject: String) throws {
        try openssl(["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                     "-keyout", "\(name).key", "-out", "\(name).csr", "-subj", subject])
    }

    private func sign(_ name: String, by ca: String, output: String, days: Int, extensions: String? = nil) throws {
        var arguments = ["x509", "-req", "-in", "\(name).csr", "-CA", "\(ca).crt", "-CAkey", "\(ca).key",
                         "-CAcreateserial", "-out", output, "-days", String(days)]
        if let extensions { arguments += ["-extfile", extensions] }
        try openssl(arguments)
    }

    private func write(_ name: String, _ text: String) throws {
        try text.write(toFile: directory + "/" + name, atomically: true, encoding: .utf8)
    }

    private func openssl(_ arguments: [String]) throws {
        let result = try runCommand("/usr/bin/openssl", arguments, in: directory)
        guard result.exitCode == 0 else { throw HarnessError("openssl \(arguments.joined(separator: " ")) failed: \(result.output)") }
    }

    /// mosquitto settings for a TLS listener that requires a client certificate from our CA.
    public var brokerSettings: String {
        """
        cafile \(caFile)
        certfile \(serverCertFile)
        keyfile \(serverKeyFile)
        require_certificate true
        """
    }
}
