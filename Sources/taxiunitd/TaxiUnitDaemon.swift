import AdapterLifecycle
import ArgumentParser
import CTaxiUnitLinux
import ControlSocket
import Dispatch
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import GPSReader
import JournalLog
import LocalCache
import Logging
import Metrics
import Platform
import ServiceLifecycle
import SystemdNotify
import UnitConfig
import UnitCore
import UnitRuntime

/// The entry point is synchronous on purpose: an `async` main ends the main thread with
/// `pthread_exit` (libdispatch's `dispatch_main`), and that forced unwind reads the program's unwind
/// tables once at start, which then stay resident for the daemon's life: about 0.6 MB
/// (bench/README.md, "Memory"). The main thread waits here while the cooperative pool runs the
/// daemon, detached: `main` is on the main actor, which the waiting thread would never serve.
@main
enum TaxiUnitMain {
    static func main() {
        limitMallocArenas()
        let command: TaxiUnitDaemon
        do {
            command = try TaxiUnitDaemon.parse()
        } catch {
            TaxiUnitDaemon.exit(withError: error)
        }
        let outcome = DaemonOutcome()
        Task.detached {
            do { try await command.run() } catch { outcome.error = error }
            outcome.finished.signal()
        }
        outcome.finished.wait()
        if let error = outcome.error { TaxiUnitDaemon.exit(withError: error) }
    }
}

/// How `run` ended, handed from the task to the waiting main thread; the semaphore orders the two.
private final class DaemonOutcome: @unchecked Sendable {
    let finished = DispatchSemaphore(value: 0)
    var error: Error?
}

struct TaxiUnitDaemon: AsyncParsableCommand, Sendable {
    static let configuration = CommandConfiguration(
        commandName: "taxiunitd",
        abstract: "The taxi unit daemon: GPS from gpsd, the driver's job state machine, SQLite store-and-forward, MQTT to dispatch.",
        discussion: """
            Reads the TOML configuration, opens the store, connects to gpsd and the MQTT broker (retrying \
            both for as long as it runs, whichever comes up first), and serves the control socket used by \
            taxiunitctl.

            SYSTEMD
            Runs as Type=notify: READY=1 once the store is open and the configuration valid, WATCHDOG=1 \
            while the engine loop and the gpsd and broker threads are alive, STATUS= with state, link and \
            queue, STOPPING=1 on shutdown. Outside systemd these are no-ops.

            LOGGING
            One line per entry on standard error with a syslog priority prefix (<3> error ... <7> debug) \
            that journald keeps as the level: journalctl -u taxiunitd -p warning. Identical warnings and \
            errors are written at most once a minute, the next one with a count. Level: --log-level, else \
            [log] level; while it runs, taxiunitctl log-level LEVEL changes it until the next start.

            FILES
              /etc/taxiunitd/taxiunitd.toml   configuration, every key with its default
              /etc/taxiunitd/conf.d/*.toml    drop-ins laid over it in name order (e.g. the unit's id)
              /var/lib/taxiunitd/unit.sqlite  positions, outbox, state ([store] path)
              /run/taxiunitd/control.sock     control socket ([control] socket)

            SIGNALS
              SIGTERM, SIGINT  publish the offline status, then stop gracefully.

            EXIT STATUS
            0 after a graceful stop or a valid --check; 1 for an invalid configuration, an unusable secret \
            file, or a store that cannot be opened.
            """,
        version: SoftwareVersion.software
    )

    @Option(name: .long, help: "Path of the TOML configuration file.")
    var config: String = "/etc/taxiunitd/taxiunitd.toml"

    @Flag(name: .long, help: "Validate the configuration file, print one line per problem, and exit (0 valid, 1 not).")
    var check = false

    @Option(name: .long, help: "Log level, over [log] level: trace, debug, info, notice, warning, error or critical.")
    var logLevel: String?

    func validate() throws {
        if let logLevel, Logger.Level(rawValue: logLevel) == nil {
            throw ValidationError("--log-level must be one of \(UnitConfiguration.logLevels.joined(separator: ", ")), found \"\(logLevel)\"")
        }
    }

    func run() async throws {
        let local: ConfigValue
        let settings: UnitConfiguration
        do {
            // The file and its conf.d drop-ins (a fleet image's settings, one small per-unit file).
            local = try LocalConfigSources.load(path: config).value
            settings = try UnitConfiguration(document: local)
            // Checked here too, so that --check catches an unusable secret file.
            _ = try settings.mqtt.login()
            if settings.ownTracks.enabled { _ = try settings.ownTracks.login(fleet: settings.unit.fleet, unit: settings.unit.id) }
        } catch {
            for problem in error.problems { printToStandardError("\(config): \(problem)") }
            throw ExitCode(1)
        }
        if check {
            let findings = TLSFileCheck.check(settings, now: Date(), read: Self.readFile)
            for warning in findings.warnings { print("\(config): warning: \(warning)") }
            for problem in findings.problems { printToStandardError("\(config): \(problem)") }
            if !findings.problems.isEmpty { throw ExitCode(1) }
            // The language matters only to a terminal: without one, its catalogue need not exist here.
            if settings.input.serial != nil {
                do {
                    let catalogue = try DriverDeviceSet.catalogue(settings)
                    for key in catalogue.missingKeys { print("\(config): warning: catalogue \(catalogue.language) has no \(key.rawValue); English is shown") }
                    for key in catalogue.unknownKeys { print("\(config): warning: catalogue \(catalogue.language) has an unknown text \(key)") }
                } catch {
                    for problem in error.problems { printToStandardError("\(config): \(problem)") }
                    throw ExitCode(1)
                }
            }
            print("\(config): OK")
            return
        }

        let journal = JournalOutput(level: Logger.Level(rawValue: logLevel ?? settings.log.level) ?? .info)
        // Handlers follow the output's level, so that `taxiunitctl log-level` reaches every logger.
        LoggingSystem.bootstrap { label in JournalLogHandler(label: label, output: journal) }
        let logger = Logger(label: "taxiunitd")
        // The same reading as --check, logged: an expiring certificate shows in the journal before
        // the broker refuses it.
        let findings = TLSFileCheck.check(settings, now: Date(), read: Self.readFile)
        for warning in findings.warnings { logger.warning("\(warning)") }
        for problem in findings.problems { logger.error("\(problem)") }
        // Whatever records swift-metrics in this process lands in the telemetry.
        let telemetry = TelemetryRegistry()
        MetricsSystem.bootstrap(telemetry)

        let store: LocalCache
        var volatileStore: String?
        do {
            store = try LocalCache(path: settings.store.path)
        } catch {
            // A read-only or full store must not take the taxi off the dispatcher's map: run on a
            // volatile store (RAM) and say so loudly; systemd's restart retries the real one. It goes
            // in a fresh directory only we can enter: never at a path another local user could
            // predict and prepare (a symlink to the real store, a file of their own).
            let volatile = try makePrivateDirectory(in: Self.runtimeDirectory, prefix: "taxiunitd-volatile") + "/unit.sqlite"
            logger.critical(
                "STORE NOT WRITABLE: running on a volatile store; messages are lost on restart",
                metadata: ["store": "\(settings.store.path)", "error": "\(error)", "volatile": "\(volatile)"])
            store = try LocalCache(path: volatile)
            volatileStore = volatile
        }
        if let aside = store.fileSetAside {
            let what = switch aside.cause {
            case .corrupt: "STORE WAS CORRUPT"
            case .newerRelease: "STORE FROM A NEWER RELEASE"
            }
            logger.critical(
                "\(what): moved it aside and started an empty one; messages queued in it were not sent",
                metadata: ["store": "\(settings.store.path)", "moved_to": "\(aside.path)", "reason": "\(aside.reason)"])
        }
        // The engine connects it with the fleet's config in force, which may name another broker;
        // the OwnTracks feed's connection follows it there.
        let ownTracks = settings.ownTracks.enabled ? OwnTracksLink(logger: logger) : nil
        let mqtt = BrokerLink(logger: logger, ownTracks: ownTracks)
        let gpsd = GPSDConnection(host: settings.gpsd.host, port: settings.gpsd.port)
        let devices = DriverDeviceSet(configuration: settings, logger: logger)
        let options = EngineOptions(
            volatileStore: volatileStore,
            logLevel: LogLevelControl(current: { journal.level }, set: { journal.level = $0 }),
            telemetry: telemetry)
        let engine = try UnitEngine(local: local, store: store, mqtt: mqtt, gpsd: gpsd, logger: logger, devices: devices, options: options)
        let control = ControlServer(path: settings.control.socket) { request in await engine.handleControl(request) }

        // Shut down in reverse: the engine first (it says goodbye over MQTT), the broker connection last.
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = [
            .init(service: AdapterService(mqtt)),
        ]
        // Its stop has the broker publish its will, the OwnTracks lwt, after the engine's goodbye.
        if let ownTracks { services.append(.init(service: AdapterService(ownTracks))) }
        services += [
            .init(service: AdapterService(gpsd)),
            .init(service: AdapterService(control)),
        ]
        if let buttons = devices.buttons { services.append(.init(service: AdapterService(buttons))) }
        if let badgeReader = devices.badgeReader { services.append(.init(service: AdapterService(badgeReader))) }
        if let ignition = devices.ignition { services.append(.init(service: AdapterService(ignition))) }
        if let meter = devices.meterSignal { services.append(.init(service: AdapterService(meter))) }
        if let meter = devices.serialMeter { services.append(.init(service: AdapterService(meter))) }
        if let terminal = devices.terminal { services.append(.init(service: AdapterService(terminal))) }
        services.append(.init(service: engine, successTerminationBehavior: .gracefullyShutdownGroup))
        // Last, so that it is told first on shutdown and says STOPPING=1 at once.
        services.append(.init(service: SystemdWatchdogService(
            notifier: SystemdNotifier(), engine: engine, heartbeats: { [mqtt.heartbeat, gpsd.heartbeat].compactMap { $0 } }, logger: logger)))
        let group = ServiceGroup(
            configuration: .init(
                services: services,
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger
            )
        )
        logger.info("taxiunitd starting", metadata: ["unit": "\(settings.unit.id)", "fleet": "\(settings.unit.fleet)"])
        try await group.run()
    }

    /// A TLS file for `--check`, read at most one byte past the limit it is held to.
    static func readFile(_ path: String) -> Result<[UInt8], TLSFileCheck.FileProblem> {
        do {
            return .success(try Platform.readFile(at: path, upTo: TLSFileCheck.maximumFileBytes + 1))
        } catch where error.code == ENOENT {
            return .failure(.missing)
        } catch {
            return .failure(.unreadable(error.message))
        }
    }
}

extension TaxiUnitDaemon {
    /// systemd's `RuntimeDirectory=` (/run/taxiunitd, the first if it names several), else the
    /// temporary directory (`$TMPDIR`, /tmp: private to the service under `PrivateTmp=`).
    static var runtimeDirectory: String {
        ProcessInfo.processInfo.environment["RUNTIME_DIRECTORY"]?.split(separator: ":").first.map(String.init) ?? ProcessInfo.processInfo.environment["TMPDIR"] ?? "/tmp"
    }
}

func printToStandardError(_ line: String) {
    var text = line + "\n"
    _ = text.withUTF8 { write(STDERR_FILENO, $0.baseAddress, $0.count) }
}

/// glibc gives every thread that allocates an arena of its own (up to 8 per core), each holding on to
/// memory it freed; two arenas keep the peak of a 24 h backlog drain about 2 MB lower (bench/README.md).
private func limitMallocArenas() {
    _ = CTaxiUnitLinux_limitMallocArenas(2)
}
