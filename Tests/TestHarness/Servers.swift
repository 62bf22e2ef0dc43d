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

    public init(in directory: ScratchDirectory, port: Int? = nil) throws {
        self.directory = directory
        self.port = try port ?? Loopback.freePort()
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

    deinit { process?.stop() }
}

/// A real gpsd fed by gpsfake with a log captured from a real receiver.
public final class FakeGPS: @unchecked Sendable {
    public let port: Int
    public let process: ChildProcess

    /// `cycleS` is the delay between sentences; `once` stops after one pass instead of looping.
    /// `pipe` makes gpsfake a watching client itself (its output goes to its log), see `held`.
    public init(log: String, in directory: ScratchDirectory, cycleS: Double = 0.05, once: Bool = false, pipe: Bool = false, port: Int? = nil) throws {
        self.port = try port ?? Loopback.freePort()
        var arguments = ["-q", "-P", String(self.port), "-c", String(cycleS)]
        if once { arguments.insert("-1", at: 0) }
        if pipe { arguments.insert("-p", at: 0) }
        process = try ChildProcess(
            "gpsfake", arguments + [log], logPath: directory.file("gpsfake-\(self.port).log"))
        try Loopback.waitUntilAccepting(port: self.port, timeoutS: 20)
    }

    /// Stops gpsfake and its gpsd child together.
    public func stop() { process.stop() }

    /// gpsfake playing `log` once, frozen before its first sentence so that every client can attach
    /// first and all of them see the whole replay; call `releaseFeed()` then. gpsd discards what
    /// reached the device before a client activated it, and feeds only clients attached by then.
    /// In pipe mode gpsfake watches itself and sleeps 1.4 s before feeding: once gpsd shows the device
    /// activated, gpsfake alone (not gpsd) is stopped. It exits when gpsd reports the end of the log.
    public static func held(log: String, in directory: ScratchDirectory, cycleS: Double) async throws -> FakeGPS {
        let fake = try await offThePool { try FakeGPS(log: log, in: directory, cycleS: cycleS, once: true, pipe: true) }
        try await waitUntil("gpsd to activate the replay device", timeoutS: 20, detail: { fake.process.log }) {
            try GPSDProbe.devicesReply(port: fake.port).contains(#""activated":""#)
        }
        fake.process.signalLeader(SIGSTOP)
        return fake
    }

    public func releaseFeed() { process.signalLeader(SIGCONT) }

    deinit { process.stop() }
}

/// A gpsd client that never watches, so it activates nothing.
public enum GPSDProbe {
    /// gpsd's answer to `?DEVICES;`. gpsd answers at once on loopback; the short receive timeout
    /// only bounds a gpsd that is not up yet.
    public static func devicesReply(port: Int) throws -> String {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw HarnessError("socket failed") }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 0, tv_usec: 100_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
        guard connected else { return "" }
        let request = Array("?DEVICES;\n".utf8)
        _ = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        var reply = ""
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !reply.contains(#""class":"DEVICES""#) || !reply.hasSuffix("\n") {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { break }
            reply += String(decoding: buffer[..<count], as: UTF8.self)
        }
        return reply
    }
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

    /// A log for tests that loop a replay and want fixes all the time: gpsd dates it 2020 on every
    /// pass, with 3D fixes at 10 Hz. (bu303-moving.log comes out of gpsd 3.22 dated 2025 on the
    /// first pass and 2005, its true date, on later ones: the unit drops those as week rollover.)
    public static let steadyLog = "nmea-rtk.log"

    /// Every replayable log of the corpus (`*.log`), by name.
    public static func allLogs() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: gpsdLogs).filter { $0.hasSuffix(".log") }.sorted()
    }

    /// Where `swift build` put the daemon: beside the test bundle, or TAXIUNITD_BIN_DIR.
    public static let binaryDirectory: String = {
        if let path = ProcessInfo.processInfo.environment["TAXIUNITD_BIN_DIR"] { return path }
        let bundle = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        return bundle.deletingLastPathComponent().path
    }()

    public static func binary(_ name: String) -> String { binaryDirectory + "/" + name }
}
