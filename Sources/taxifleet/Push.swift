import ArgumentParser
import FleetConsole
import Foundation
import MQTTLink
import StrictJSON
import TaxiProtocol
import UnitConfig
import UnitCore

struct Push: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Sign a settings file, check it as the units will, publish it retained and wait for every unit's config/ack.",
        discussion: """
            Without --unit the document is the fleet's ({prefix}/{fleet}/config); with --unit it is \
            each named unit's own ({prefix}/{fleet}/{unit}/config). Its version is one more than the \
            highest of the retained document and the versions the units' statuses say they hold, unless \
            --version gives it. Units whose retained status says they are offline are listed apart: \
            they get the retained document when they come back.
            """
    )

    @OptionGroup var broker: BrokerOptions
    @OptionGroup var signing: KeyOption
    @OptionGroup var answers: AnswerOptions
    @Option(name: .long, help: "The units' local file the document is checked against (e.g. the fleet image's taxiunitd.toml); default: the defaults.")
    var base: String?
    @Option(name: .long, help: "The document's version (default: the next one).") var version: Int?
    @Argument(help: "The settings: a TOML file (as the unit's own file) or a .json file (the document's settings object).")
    var settings: String

    func validate() throws {
        if let version, version < 1 { throw ValidationError("--version must be at least 1") }
    }

    func run() async throws {
        try await failing { try await push() }
    }

    private func push() async throws -> Int32 {
        guard let bytes = FileManager.default.contents(atPath: settings) else {
            throw Failure("cannot read \(settings)", exitCode: Failure.usage)
        }
        let settingsDocument: JSONDocument
        do { settingsDocument = try SettingsFile.parse(Array(bytes), name: settings) } catch {
            throw Failure(error.problems.joined(separator: "\n"), exitCode: Failure.wouldBeRefused)
        }
        let brokerSettings = try broker.resolved()
        let key = try signing.load(brokerSettings.file)
        var baseFile = ConfigValue.table([:])
        if let base {
            do { baseFile = try ConfigValue.loadTOML(path: base) } catch {
                throw Failure(error.problems.joined(separator: "; "), exitCode: Failure.usage)
            }
        }
        let topics = brokerSettings.topics
        let scope: ConfigScope = answers.unit.isEmpty ? .fleet : .unit
        let targets: [(unit: String?, topic: String)] = scope == .fleet
            ? [(nil, topics.fleetConfig)]
            : answers.unit.map { ($0, topics.unit($0, .config)) }

        let link = try await FleetLink.open(brokerSettings, timeoutS: min(answers.wait, 10))
        defer { link.close() }
        var state = FleetState(topics: topics)
        var retainedVersions: [Int] = []
        try link.subscribe([topics.everyUnit(.configAck)])
        try await link.retained([topics.everyUnit(.status)] + targets.map(\.topic)) { message in
            if targets.contains(where: { $0.topic == message.topic }) {
                if let document = try? JSONDocument.parse(message.payload), case .number(let literal)? = document["version"], let held = Int(literal) {
                    retainedVersions.append(held)
                }
            } else {
                state.take(topic: message.topic, payload: message.payload)
            }
        }
        let units = scope == .fleet ? Array(state.units.keys) : answers.unit
        let version = version ?? (([state.highestConfigVersion(scope.rawValue, among: units) ?? 0] + retainedVersions).max()! + 1)

        var payloads: [(topic: String, payload: [UInt8])] = []
        for target in targets {
            do {
                let payload = try Preflight.configDocument(
                    settings: settingsDocument, version: version, scope: scope, topic: target.topic, unit: target.unit,
                    fleet: topics.fleet, base: baseFile, key: key)
                payloads.append((target.topic, payload))
            } catch {
                throw Failure("the units would refuse this document, nothing was published:\n" + error.problems.joined(separator: "\n"), exitCode: Failure.wouldBeRefused)
            }
        }
        let online = units.filter { state.units[$0]?.online == true }
        var rollout = Rollout(
            topics: topics, awaited: .config(scope: scope.rawValue, version: version),
            online: online, offline: units.filter { !online.contains($0) })
        let display = ProgressDisplay(json: answers.json)
        let deadline = ContinuousClock.now + .milliseconds(Int(answers.wait * 1000))
        display.started("\(scope.rawValue) config version \(version) on \(targets.map(\.topic).joined(separator: " ")): \(online.count) units online" + (rollout.offline.isEmpty ? "" : ", \(rollout.offline.count) offline"))
        try await publishAll(payloads, on: link, until: deadline, into: &rollout, showing: display)
        await collect(&rollout, on: link, until: deadline, showing: display)
        display.finished(rollout)
        return rollout.outcome.rawValue
    }
}

/// Publishes each message retained or not and waits for every PUBACK (the broker has it), taking
/// answers that already arrive on the way. A publish the broker refuses (MQTT 5 reason code) ends it.
func publishAll(
    _ payloads: [(topic: String, payload: [UInt8])], retain: Bool = true, on link: FleetLink, until deadline: ContinuousClock.Instant,
    into rollout: inout Rollout, showing display: ProgressDisplay
) async throws {
    var unacknowledged: [MQTTPublishTicket: String] = [:]
    for (topic, payload) in payloads {
        unacknowledged[try link.publish(topic, payload, retain: retain)] = topic
    }
    while !unacknowledged.isEmpty {
        guard let event = await link.next(before: deadline) else {
            throw Failure("the broker did not acknowledge the publish on \(unacknowledged.values.sorted().joined(separator: " ")) in time", exitCode: Failure.unreachable)
        }
        switch event {
        case .published(let ticket):
            unacknowledged[ticket] = nil
        case .refused(let ticket, let code):
            throw Failure("the broker refused the publish on \(unacknowledged[ticket] ?? "?") (reason code 0x\(String(code, radix: 16))): is this the fleet account?", exitCode: Failure.unreachable)
        case .disconnected(_, let reason):
            throw Failure("the broker went away before it acknowledged the publish: \(reason)", exitCode: Failure.unreachable)
        case .message(let message):
            if let answer = rollout.take(topic: message.topic, payload: message.payload) { display.answered(answer, rollout) }
        case .connected, .connectFailed, .oversized:
            break
        }
    }
}
