import ArgumentParser
import ControlSocket
import Foundation
import GPSReader
import LocalCache
import Logging
import ServiceLifecycle
import UnitConfig
import UnitRuntime

@main
struct TaxiUnitDaemon: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "taxiunitd",
        abstract: "The taxi unit daemon: GPS from gpsd, the driver's job state machine, SQLite store-and-forward, MQTT to dispatch.",
        discussion: """
            Reads the TOML configuration (see /etc/taxiunitd/taxiunitd.toml), opens the store, connects to \
            gpsd and the MQTT broker, and serves the control socket used by taxiunitctl. SIGTERM or SIGINT \
            shut it down gracefully.
            """
    )

    @Option(name: .long, help: "Path of the TOML configuration file.")
    var config: String = "/etc/taxiunitd/taxiunitd.toml"

    @Flag(name: .long, help: "Validate the configuration file, print one line per problem, and exit (0 valid, 1 not).")
    var check = false

    func run() async throws {
        let local: ConfigValue
        let settings: UnitConfiguration
        do {
            local = try ConfigValue.loadTOML(path: config)
            settings = try UnitConfiguration(document: local)
        } catch {
            for problem in error.problems { printToStandardError("\(config): \(problem)") }
            throw ExitCode(1)
        }
        if check {
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

        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = Logger.Level(rawValue: settings.log.level) ?? .info
            return handler
        }
        let logger = Logger(label: "taxiunitd")

        let store = try LocalCache(path: settings.store.path)
        // The engine connects it with the fleet's config in force, which may name another broker.
        let mqtt = BrokerLink(logger: logger)
        let gpsd = GPSDConnection(host: settings.gpsd.host, port: settings.gpsd.port)
        let devices = DriverDeviceSet(configuration: settings, logger: logger)
        let engine = try UnitEngine(local: local, store: store, mqtt: mqtt, gpsd: gpsd, logger: logger, devices: devices)
        let control = ControlServer(path: settings.control.socket) { request in await engine.handleControl(request) }

        // Shut down in reverse: the engine first (it says goodbye over MQTT), the broker connection last.
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = [
            .init(service: AdapterService(mqtt)),
            .init(service: AdapterService(gpsd)),
            .init(service: AdapterService(control)),
        ]
        if let buttons = devices.buttons { services.append(.init(service: AdapterService(buttons))) }
        if let terminal = devices.terminal { services.append(.init(service: AdapterService(terminal))) }
        services.append(.init(service: engine, successTerminationBehavior: .gracefullyShutdownGroup))
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
}

func printToStandardError(_ line: String) {
    FileHandle.standardError.write(Data((line + "\n").utf8))
}
