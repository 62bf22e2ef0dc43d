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

/// A real mosquitto broker on a free loopback port. `listenerSettings` may name an `acl_file`:
/// `writeACL` writes one, which the broker reads when it (re)starts.
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

    /// SIGKILL: the node dies. It publishes no last will and saves nothing, so what it held in
    /// memory (sessions, queued messages) is gone when it comes back.
    public func killHard() {
        process?.killHard()
        process = nil
    }

    /// SIGHUP: mosquitto reads its ACL file again and keeps every connection, as `systemctl reload`
    /// does after an operator fixed an ACL. (After a restart, mosquitto 2.0.11 delivers nothing to a
    /// session restored from disk under anonymous `topic` lines until its client reconnects: a test
    /// subscriber would race the unit for what it sends first.)
    public func reload() {
        process?.signalLeader(SIGHUP)
    }

    /// Read leniently: with `log_type all` mosquitto may log bytes that are not UTF-8.
    public var log: String {
        String(decoding: FileManager.default.contents(atPath: directory.file("mosquitto-\(port).log")) ?? Data(), as: UTF8.self)
    }

    /// An ACL for anonymous clients (mosquitto's acl_file syntax, e.g. `topic deny taxi/+/+/job/reply`
    /// before `topic readwrite #`); `aclSettings` names it for `listenerSettings`.
    public static func writeACL(_ lines: [String], in directory: ScratchDirectory, name: String = "acl") throws -> String {
        let path = directory.file(name)
        try (lines.joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
        return "acl_file \(path)"
    }

    deinit { process?.stop() }
}

/// A real gpsd fed by gpsfake with a log captured from a real receiver.
public final class FakeGPS: @unchecked Sendable {
    public let port: Int
    public let process: ChildProcess

    /// gpsfake's start-up races (below) hit one start in several when four replays and their
    /// daemons share two cores: six tries make a corpus run of 136 logs fail on them next to never.
    static let startAttempts = 6

    /// `cycleS` is the delay between sentences; `once` stops after one pass instead of looping.
    /// Under load gpsfake may add its device before gpsd's control socket listens, silently, and
    /// gpsd then serves nothing: a start whose gpsd lists no device is retried.
    public init(log: String, in directory: ScratchDirectory, cycleS: Double = 0.05, once: Bool = false, port: Int? = nil) throws {
        var failures: [String] = []
        for _ in 0..<Self.startAttempts {
            let chosenPort = try port ?? Loopback.freePort()
            let process = try Self.spawn(log, in: directory, cycleS: cycleS, once: once, pipe: false, port: chosenPort)
            try Loopback.waitUntilAccepting(port: chosenPort, timeoutS: 20)
            if Self.gpsdListsADevice(port: chosenPort, timeoutS: 10) {
                self.port = chosenPort
                self.process = process
                return
            }
            failures.append(process.log)
            Self.stop(process, port: chosenPort)
        }
        throw HarnessError("gpsd got no device from gpsfake for \(log):\n\(failures.joined(separator: "\n---\n"))")
    }

    private init(port: Int, process: ChildProcess) {
        self.port = port
        self.process = process
    }

    /// `pipe`: gpsfake watches gpsd itself and prints what it gets, unbuffered, to its log.
    private static func spawn(_ log: String, in directory: ScratchDirectory, cycleS: Double, once: Bool, pipe: Bool, port: Int) throws -> ChildProcess {
        var arguments = ["-q", "-P", String(port), "-c", String(cycleS)]
        if once { arguments.insert("-1", at: 0) }
        if pipe { arguments.insert("-p", at: 0) }
        return try ChildProcess(
            "gpsfake", arguments + [log], logPath: directory.file("gpsfake-\(port).log"),
            environment: pipe ? ["PYTHONUNBUFFERED": "1"] : [:])
    }

    /// Asks gpsd `?DEVICES;` until it lists one, or `timeoutS` passes.
    private static func gpsdListsADevice(port: Int, timeoutS: Double) -> Bool {
        let deadline = ContinuousClock.now + .milliseconds(Int(timeoutS * 1000))
        while ContinuousClock.now < deadline {
            if let answer = Loopback.exchange(port: port, request: "?DEVICES;\n", until: #""class":"DEVICES""#),
               answer.contains(#""class":"DEVICES","devices":[{"#) {
                return true
            }
            usleep(200_000)
        }
        return false
    }

    /// Stops gpsfake and its gpsd child together.
    public func stop() { Self.stop(process, port: port) }

    /// gpsd never removes the shared-memory segment it exports under gpsfake's port-derived key;
    /// once earlier runs have used up the system's 4096 segments, new gpsds fail. Removed here as
    /// soon as the dying gpsd has detached.
    private static func stop(_ process: ChildProcess, port: Int) {
        process.stop()
        let segment = shmget(key_t(bitPattern: 0x4770_0000 | UInt32(port & 0xFFFF)), 0, 0)
        guard segment >= 0 else { return }
        for _ in 0..<50 {
            var status = shmid_ds()
            guard shmctl(segment, IPC_STAT, &status) == 0 else { return }
            if status.shm_nattch == 0 {
                shmctl(segment, IPC_RMID, nil)
                return
            }
            usleep(20_000)
        }
    }

    /// gpsfake playing `log` once, frozen near its start so that every client can watch before it
    /// goes on and all of them see the same replay; call `releaseFeed()` then. (gpsd feeds only the
    /// clients watching at the time, and discards what reached the device before any watched.)
    /// In pipe mode gpsfake is a watcher itself: it sleeps 1.4 s, during which gpsd, probing the
    /// device, does not serve clients; then it prints gpsd's greeting and starts feeding. At that
    /// greeting gpsfake alone is stopped (gpsd keeps serving) and gpsd gets a moment to digest the
    /// first sentences, which only gpsfake sees. gpsfake exits at the end of the log, after gpsd has
    /// told its watchers the device is gone (`"activated":0`).
    /// gpsfake has start-up races of its own under load (its client connects before gpsd listens,
    /// or it adds the device before gpsd's control socket listens, silently): such a start is
    /// recognised by gpsfake's greeting and retried.
    public static func held(log: String, in directory: ScratchDirectory, cycleS: Double) async throws -> FakeGPS {
        var failures: [String] = []
        for _ in 0..<Self.startAttempts {
            let port = try Loopback.freePort()
            let fake = FakeGPS(port: port, process: try spawn(log, in: directory, cycleS: cycleS, once: true, pipe: true, port: port))
            let deadline = ContinuousClock.now + .seconds(30)
            while fake.process.isRunning && !fake.process.log.contains(#""class":"WATCH""#) && ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(2))
            }
            fake.process.signalLeader(SIGSTOP)
            if fake.process.isRunning && fake.process.log.contains(#""class":"DEVICES","devices":[{"#) {
                try await Task.sleep(for: .milliseconds(200))
                return fake
            }
            failures.append(fake.process.log)
            fake.process.signal(SIGKILL)
            try await offThePool { fake.process.waitForExit() }
        }
        throw HarnessError("gpsfake did not start feeding \(log):\n\(failures.joined(separator: "\n---\n"))")
    }

    public func releaseFeed() { process.signalLeader(SIGCONT) }

    deinit { stop() }
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

    public static func size(of log: String) throws -> Int {
        try (FileManager.default.attributesOfItem(atPath: self.log(log))[.size] as? Int) ?? 0
    }

    /// Where `swift build` put the daemon: beside the test bundle, or TAXIUNITD_BIN_DIR.
    public static let binaryDirectory: String = {
        if let path = ProcessInfo.processInfo.environment["TAXIUNITD_BIN_DIR"] { return path }
        let bundle = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        return bundle.deletingLastPathComponent().path
    }()

    public static func binary(_ name: String) -> String { binaryDirectory + "/" + name }
}
