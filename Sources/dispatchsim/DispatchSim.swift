import AdapterLifecycle
import ArgumentParser
import DispatchCore
import Foundation
import Logging
import MQTTLink
import ServiceLifecycle
import UnitConfig

@main
struct DispatchSim: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dispatchsim",
        abstract: "A reference dispatcher speaking docs/protocol.md: zone queues, offers, reservations, cancellations, SOS.",
        discussion: """
            Requests come from a scenario file and/or a random generator per zone. Prints one line per \
            event and, at the end (the scenario's duration, --duration, or Ctrl-C), latency percentiles \
            and counts.
            """
    )

    @Option(help: "TOML file with the fleet's [[zones]] (a unit's configuration will do).") var zones: String
    @Option(help: "Scenario TOML: [dispatch] settings, [[request]], [[cancel]], [[generate]].") var scenario: String?
    @Option(help: "Random requests per minute in every zone (Poisson), on top of the scenario.") var ratePerZone: Double?
    @Option(help: "Stop generating after this many seconds, then wait for open offers and exit.") var duration: Double?
    @Option(help: "After --duration, also wait up to this many seconds for held pre-bookings and next jobs to start.")
    var waitHeld: Double = 0
    @Option(help: "Seed of the random generator.") var seed: UInt64 = 1
    @Option(help: "Broker host.") var host = "127.0.0.1"
    @Option(help: "Broker port.") var port = 1883
    @Option(help: "Fleet id (second topic level).") var fleet = "demo"
    @Option(help: "Topic prefix.") var topicPrefix = "taxi"
    @Option(help: "respond_within_s of every offer (overrides the scenario).") var respondWithin: Int?
    @Option(help: "MQTT version: 5 or 3.1.1.") var mqttProtocol = "5"
    @Option(help: "Client id, distinct per instance; default dispatchsim-{fleet}.") var clientId: String?
    @Option(help: "Broker username, e.g. the dispatcher account of etc/mosquitto-acl.example.") var username: String?
    @Option(help: "File whose first line is the broker password (mode 600); needs --username.") var passwordFile: String?
    @Flag(help: "Connect with TLS, verifying the broker's certificate against --cafile or the system's CAs.") var tls = false
    @Option(help: "CA certificate (PEM) the broker's certificate must chain to; needs --tls.") var cafile: String?
    @Option(
        help: """
            Run as one of several instances on an MQTT 5 shared subscription ($share/NAME/...): each \
            booking and SOS is handled by one instance. Needs --client-id and MQTT 5.
            """) var shareGroup: String?
    @Flag(help: "Print only warnings, alarms and the summary.") var quiet = false
    @Option(help: "Also write the summary's raw numbers as JSON to this file.") var statsJson: String?
    @Option(help: "Send every unit seen a message (in turn: plain, with canned replies, urgent) every this many seconds.")
    var messageEvery: Double?

    func run() async throws {
        let startMs = Int64(Date().timeIntervalSince1970 * 1000)
        let zoneMap: ZoneMap
        var scenarioFile = ScenarioFile()
        do {
            zoneMap = try ScenarioFile.zones(path: zones)
            if let scenario { scenarioFile = try ScenarioFile.load(path: scenario, startMs: startMs) }
        } catch let error as ConfigError {
            for problem in error.problems { FileHandle.standardError.write(Data("\(problem)\n".utf8)) }
            throw ExitCode(1)
        }
        if let respondWithin { scenarioFile.settings.respondWithinS = respondWithin }
        if let unknown = scenarioFile.broadcasts.first(where: { $0.zone.map { zoneMap[$0] == nil } ?? false })?.zone {
            FileHandle.standardError.write(Data("\(scenario ?? ""): a [[broadcast]] names zone \(unknown), which --zones does not have\n".utf8))
            throw ExitCode(1)
        }
        if let ratePerZone {
            scenarioFile.demands += zoneMap.zones.map { ZoneDemand(zone: $0.id, rate: .poisson(perMinute: ratePerZone)) }
        }
        if let messageEvery, !(messageEvery >= 1 && messageEvery <= 86400) {
            throw ValidationError("--message-every must be from 1 to 86400 seconds")
        }
        guard waitHeld >= 0 && waitHeld <= 86400 else { throw ValidationError("--wait-held must be from 0 to 86400 seconds") }
        let durationS = duration ?? scenarioFile.durationS
        if !scenarioFile.demands.isEmpty && durationS == nil {
            throw ValidationError("random requests need a duration: --duration or [dispatch] duration_s")
        }
        let generated = try RequestSchedule.generate(scenarioFile.demands, zones: zoneMap, durationS: durationS ?? 0, seed: seed, startMs: startMs)
        let schedule = RequestSchedule.merge(scenarioFile.inputs, generated)

        guard let version = MQTTProtocolVersion(rawValue: mqttProtocol) else {
            throw ValidationError("--mqtt-protocol must be 5 or 3.1.1")
        }
        if let shareGroup {
            // A group name is one topic level (MQTT 5, 4.8.2).
            guard !shareGroup.isEmpty, !shareGroup.contains(where: { "/+#".contains($0) }) else {
                throw ValidationError("--share-group must be one topic level, without '/', '+' or '#'")
            }
            guard version == .v5, clientId != nil else {
                throw ValidationError("--share-group needs MQTT 5 and a --client-id of its own per instance")
            }
        }
        if passwordFile != nil && username == nil { throw ValidationError("--password-file needs --username") }
        if cafile != nil && !tls { throw ValidationError("--cafile needs --tls") }
        let credentials: MQTTCredentials?
        do {
            credentials = try username.map { name throws(ConfigError) in
                MQTTCredentials(username: name, password: try passwordFile.map { path throws(ConfigError) in try SecretFile.read(path, role: "--password-file") })
            }
        } catch {
            for problem in error.problems { FileHandle.standardError.write(Data("\(problem)\n".utf8)) }
            throw ExitCode(1)
        }
        let logger = Logger(label: "dispatchsim")
        // A persistent session: replies sent while we reconnect are queued for us by the broker.
        let mqtt = MQTTConnection(
            endpoint: MQTTEndpoint(
                host: host, port: port, keepaliveS: 30, clientID: clientId ?? "dispatchsim-\(fleet)",
                tls: tls ? MQTTTLS(caFile: cafile, certFile: nil, keyFile: nil, version: "tlsv1.2") : nil, credentials: credentials,
                protocolVersion: version),
            will: nil, backoff: ReconnectBackoff(minimumS: 0.2, maximumS: 5), logger: logger)
        let loop = DispatchLoop(
            connection: mqtt, dispatcher: Dispatcher(zones: zoneMap, settings: scenarioFile.settings), schedule: schedule,
            broadcasts: scenarioFile.broadcasts, startMs: startMs,
            options: .init(
                topicPrefix: topicPrefix, fleet: fleet, durationS: durationS, quiet: quiet, statsPath: statsJson, shareGroup: shareGroup,
                messageEveryS: messageEvery, waitHeldS: waitHeld))
        let group = ServiceGroup(
            configuration: .init(
                services: [
                    .init(service: AdapterService(mqtt)),
                    .init(service: loop, successTerminationBehavior: .gracefullyShutdownGroup),
                ],
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger))
        try await group.run()
    }
}
