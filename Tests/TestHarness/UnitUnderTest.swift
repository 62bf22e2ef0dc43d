import ControlSocket
import Foundation

/// A real taxiunitd process with its own config, SQLite file and control socket.
public final class UnitUnderTest: @unchecked Sendable {
    public let unitID: String
    public let fleet: String
    public let configPath: String
    public let storePath: String
    public let controlSocket: String
    public let directory: ScratchDirectory
    public private(set) var process: ChildProcess?

    /// `extraTOML` is appended to the generated file; use it for sections the defaults do not cover.
    /// `mqttTOML` and `storeTOML` add keys to those sections.
    public init(
        unitID: String = "T1", fleet: String = "test", mqttPort: Int, gpsdPort: Int,
        in directory: ScratchDirectory, extraTOML: String = "", reportingIntervalS: Double = 0.5, language: String = "en",
        mqttTOML: String = "", storeTOML: String = "",
        trustSystemClock: Bool = true
    ) throws {
        self.unitID = unitID
        self.fleet = fleet
        self.directory = directory
        configPath = directory.file("\(unitID).toml")
        storePath = directory.file("\(unitID).sqlite")
        controlSocket = directory.file("\(unitID).sock")
        try """
        [unit]
        id = "\(unitID)"
        fleet = "\(fleet)"
        language = "\(language)"
        catalogues = "\(Corpus.packageRoot)/share/taxiunitd/lang"

        [gpsd]
        host = "127.0.0.1"
        port = \(gpsdPort)

        [gps]
        # Replayed logs are years old and the test machine's clock is right even where the kernel
        # does not call it synchronised: the unit clock must not become the replay's GPS time.
        trust_system_clock = \(trustSystemClock)

        [mqtt]
        host = "127.0.0.1"
        port = \(mqttPort)
        keepalive_s = 5
        reconnect_min_s = 0.2
        reconnect_max_s = 1
        \(mqttTOML)

        [store]
        path = "\(storePath)"
        \(storeTOML)

        [control]
        socket = "\(controlSocket)"

        [reporting]
        interval_s = \(reportingIntervalS)

        [log]
        level = "debug"

        \(extraTOML)
        """.write(toFile: configPath, atomically: true, encoding: .utf8)
    }

    /// `launcher` runs the daemon through another program (e.g. one that restricts it first);
    /// `arguments` follow the daemon's own `--config`.
    public func start(environment: [String: String] = [:], launcher: [String] = [], arguments: [String] = []) async throws {
        let command = launcher + [Corpus.binary("taxiunitd"), "--config", configPath] + arguments
        let process = try ChildProcess(
            command[0], Array(command.dropFirst()), logPath: directory.file("\(unitID).log"), environment: environment)
        self.process = process
        try await waitUntil("taxiunitd to come up", timeoutS: 15, detail: { "its log:\n\(process.log)" }) {
            if (try? status()) != nil { return true }
            if !process.isRunning { throw HarnessError("taxiunitd exited at start; its log:\n\(process.log)") }
            return false
        }
    }

    public func stop() { process?.stop(graceS: 10) }

    public func killHard() { process?.killHard() }

    public var log: String { process?.log ?? "" }

    public func request(_ request: ControlRequest) throws -> ControlResponse {
        let bytes = try ControlClient.request(Array(JSONEncoder().encode(request)), socket: controlSocket)
        return try JSONDecoder().decode(ControlResponse.self, from: Data(bytes))
    }

    public func status() throws -> ControlStatus {
        let response = try request(ControlRequest(cmd: .status))
        guard let status = response.status else { throw HarnessError("no status: \(response.error ?? "")") }
        return status
    }

    /// Polls `condition` on the unit's status until it holds.
    @discardableResult
    public func waitForStatus(_ what: String, timeoutS: Double = 20, _ condition: (ControlStatus) -> Bool) async throws -> ControlStatus {
        var last: ControlStatus?
        try await waitUntil(what, timeoutS: timeoutS, detail: { "last status: \(String(describing: last))" }) {
            last = try? status()
            return last.map(condition) ?? false
        }
        return last!
    }

    public var topicBase: String { "taxi/\(fleet)/\(unitID)/" }

    deinit { process?.stop() }
}

/// Runs `command` and returns its standard output and exit code.
public func runCommand(
    _ executable: String, _ arguments: [String], in directory: String? = nil, environment: [String: String] = [:]
) throws -> (output: String, exitCode: Int32) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
    if !environment.isEmpty { process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 } }
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = pipe
    try process.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (String(decoding: data, as: UTF8.self), process.terminationStatus)
}

/// Polls `condition` every 50 ms without blocking a thread of the cooperative pool.
public func waitUntil(
    _ what: String, timeoutS: Double, detail: () -> String = { "" }, _ condition: () throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + .milliseconds(Int(timeoutS * 1000))
    while ContinuousClock.now < deadline {
        if try condition() { return }
        try await Task.sleep(for: .milliseconds(50))
    }
    throw HarnessError("timed out after \(timeoutS) s waiting for \(what). \(detail())")
}
