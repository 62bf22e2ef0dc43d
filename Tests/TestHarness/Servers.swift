import Foundation

/// A scratch directory per test, removed when the test's harness goes away.
public final class ScratchDirectory: @unchecked Sendable {
    public let path: String

    public init(_ label: String = "taxiunitd-test") throws {
        let template = NSTemporaryDirectory() + "\(label)-XXXXXX"
        var bytes = Array(template.utf8CString)
        guard let created = mkdtemp(&bytes) else { throw HarnessError("mkdtemp failed") }
        path = String(cString: created)
    }

    public func file(_ name: String) -> String { path + "/" + name }

    deinit {
        if ProcessInfo.processInfo.environment["KEEP_TEST_FILES"] == nil {
            try? FileManager.default.removeItem(atPath: path)
        }
    }
}

/// A real mosquitto broker on a free loopback port.
public final class MosquittoBroker: @unchecked Sendable {
    public let port: Int
    private let directory: ScratchDirectory
    private var process: ChildProcess?
    /// Extra listener settings, e.g. TLS (`cafile`, `certfile`, `require_certificate` ...).
    private let listenerSettings: String

    public init(in directory: ScratchDirectory, port: Int? = nil, listenerSettings: String = "") throws {
        self.directory = directory
        self.port = try port ?? Loopback.freePort()
        self.listenerSettings = listenerSettings
        try start()
    }

    /// (Re)starts the broker on the same port, as a dispatcher's broker coming back would.
    public func start() throws {
        let config = directory.file("mosquitto-\(port).conf")
        // Persistence keeps subscribers' sessions across a restart, so a test subscriber misses
        // nothing the unit sends while the subscriber is still reconnecting. As root, mosquitto would
        // drop to its own user and could not write the scratch directory.
        try """
        listener \(port) 127.0.0.1
        allow_anonymous true
        \(listenerSettings)
        persistence true
        persistence_location \(directory.path)/
        persistence_file mosquitto-\(port).db
        max_queued_messages 1000000
        \(getuid() == 0 ? "user root" : "")
        """.write(toFile: config, atomically: true, encoding: .utf8)
        process = try ChildProcess("mosquitto", ["-c", config], logPath: directory.file("mosquitto-\(port).log"))
        try Loopback.waitUntilAccepting(port: port)
    }

    public func stop() {
        process?.stop()
        process = nil
    }

    public var log: String { process?.log ?? "" }

    deinit { process?.stop() }
}

/// A real gpsd fed by gpsfake with a log captured from a real receiver.
public final class FakeGPS: @unchecked Sendable {
    public let port: Int
    public let process: ChildProcess

    /// `cycleS` is the delay between sentences; `once` stops after one pass instead of looping.
    public init(log: String, in directory: ScratchDirectory, cycleS: Double = 0.05, once: Bool = false, port: Int? = nil) throws {
        self.port = try port ?? Loopback.freePort()
        var arguments = ["-q", "-P", String(self.port), "-c", String(cycleS)]
        if once { arguments.insert("-1", at: 0) }
        process = try ChildProcess(
            "gpsfake", arguments + [log], logPath: directory.file("gpsfake-\(self.port).log"))
        try Loopback.waitUntilAccepting(port: self.port, timeoutS: 20)
    }

    /// Stops gpsfake and its gpsd child together.
    public func stop() { process.stop() }

    deinit { process.stop() }
}

public enum Corpus {
    /// The package's root, found from this file's location.
    public static let packageRoot: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url.path
    }()

    /// `../shared/gpsd-logs` beside the repository.
    public static let gpsdLogs: String = {
        if let path = ProcessInfo.processInfo.environment["GPSD_LOGS"] { return path }
        return URL(fileURLWithPath: packageRoot).deletingLastPathComponent().appendingPathComponent("shared/gpsd-logs").path
    }()

    public static func log(_ name: String) -> String { gpsdLogs + "/" + name }

    /// Where `swift build` put the daemon: beside the test bundle, or TAXIUNITD_BIN_DIR.
    public static let binaryDirectory: String = {
        if let path = ProcessInfo.processInfo.environment["TAXIUNITD_BIN_DIR"] { return path }
        let bundle = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        return bundle.deletingLastPathComponent().path
    }()

    public static func binary(_ name: String) -> String { binaryDirectory + "/" + name }
}
