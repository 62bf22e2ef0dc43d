import StrictJSON
import TaxiProtocol
import UnitConfig
import UnitCore

public enum FleetConfigEvent: Sendable, Equatable {
    /// A message on `{prefix}/{fleet}/config` (fleet scope) or `{prefix}/{fleet}/{unit}/config`;
    /// `retained` when the broker sent its stored copy rather than a message published just now;
    /// `at`: the unit clock, ms.
    case received(ConfigScope, topic: String, payload: [UInt8], retained: Bool, at: UnitTime)
    /// A message refused unread (over the size limit, or set aside as poison), for this reason.
    case refusedUnread(ConfigScope, FleetRejection)
    /// The rollback timer ran out before the fleet's own broker answered.
    case rollbackDue(lastError: String?)
}

/// The `config/ack` the unit sends for a document.
public struct ConfigAck: Sendable, Equatable {
    public typealias Result = ConfigAckReport.Result

    public var scope: ConfigScope
    /// Omitted when the document's version could not be read.
    public var version: Int?
    public var result: Result
    public var reason: String?
    public var errors: [String]

    public init(scope: ConfigScope, version: Int?, result: Result, reason: String? = nil, errors: [String] = []) {
        self.scope = scope
        self.version = version
        self.result = result
        self.reason = reason
        self.errors = errors
    }
}

public enum FleetConfigAction: Sendable, Equatable {
    /// Store the scope's record and queue the ack (if any) in one transaction, before anything else.
    case commit(ConfigScope, ConfigScopeRecord, ack: ConfigAck?)
    /// Queue an ack that changes nothing stored.
    case acknowledge(ConfigAck)
    /// Run with this configuration from now on; `reconnect` when [mqtt] changed.
    case use(UnitConfiguration, reconnect: Bool)
    case startRollbackTimer(after: Duration)
    case cancelRollbackTimer
    /// Nothing to do or say: a retained copy of the document in force, or an empty retained message.
    case ignore(ConfigScope, because: String)
}

/// Decides what to do with fleet configuration documents: authenticity, version ordering, the
/// merge of local file ⊕ fleet ⊕ unit scopes, validation, and rollback of [mqtt] changes that
/// cannot reach a broker. Pure: the shell stores, swaps, publishes and runs the timer.
public struct FleetConfigMachine: Sendable {
    public let local: ConfigValue
    public let trust: FleetTrust
    public private(set) var records: [ConfigScope: ConfigScopeRecord]
    /// What the unit runs with: the local file with the applied scopes laid over it.
    public private(set) var configuration: UnitConfiguration
    /// Problems found restoring stored documents; those documents were set aside.
    public private(set) var restoreProblems: [String] = []
    private var settings: [ConfigScope: ConfigValue] = [:]

    /// The highest version a document may carry (2^53, the largest integer every JSON reader keeps
    /// exact): a signed version near Int.max would otherwise leave a scope no newer version.
    public static let highestVersion = 1 << 53

    /// `local` must be a valid configuration document (the unit refuses to start otherwise).
    public init(local: ConfigValue, restoring records: [ConfigScope: ConfigScopeRecord]) throws(ConfigError) {
        let localConfiguration = try UnitConfiguration(document: local)
        self.local = local
        self.trust = FleetTrust(localConfiguration)
        self.records = records
        configuration = localConfiguration
        for scope in ConfigScope.allCases {
            // Verified again: a key removed from the local file revokes what it signed.
            let topic = Self.topic(of: scope, in: localConfiguration)
            if let lastGood = records[scope]?.probation?.lastGood, let rejection = Self.verify(lastGood, topic: topic, trust: trust) {
                restoreProblems.append("stored \(scope.rawValue) config version \(lastGood.version) (the last good one): \(rejection.errors.joined(separator: "; "))")
                self.records[scope]?.probation?.lastGood = nil
            }
            // A version is held only while a trusted key vouches for it: one signed by a removed key,
            // or past the ceiling, no longer blocks newer documents.
            if let seen = records[scope]?.seenVersion, seen > Self.highestVersion {
                restoreProblems.append("stored \(scope.rawValue) config: held version \(seen) is above the highest version \(Self.highestVersion)")
                self.records[scope]?.seenVersion = records[scope]?.applied.map(\.version).flatMap { $0 <= Self.highestVersion ? $0 : nil } ?? 0
            }
            guard let document = records[scope]?.applied else { continue }
            if let rejection = Self.verify(document, topic: topic, trust: trust) {
                restoreProblems.append("stored \(scope.rawValue) config version \(document.version): \(rejection.errors.joined(separator: "; "))")
                let trustedVersion = self.records[scope]?.probation?.lastGood?.version ?? 0
                self.records[scope]?.seenVersion = trustedVersion
                continue
            }
            switch Self.settings(of: document.payload) {
            case .success(let value): settings[scope] = value
            case .failure(let error): restoreProblems.append("stored \(scope.rawValue) config version \(document.version): \(error.problems.joined(separator: "; "))")
            }
        }
        do {
            configuration = try effective()
        } catch {
            restoreProblems.append("the stored fleet config no longer fits the local file; running on the local file alone: \(error.problems.joined(separator: "; "))")
            settings = [:]
        }
        // Set aside in memory only: the versions stay seen, and the next restart tries them again.
        for scope in ConfigScope.allCases where settings[scope] == nil {
            self.records[scope]?.applied = nil
            self.records[scope]?.probation = nil
        }
    }

    /// What the shell does right after starting, at `now` (unit clock): resume a rollback timer
    /// cut short by a restart with what was left of its window.
    public func startupActions(now: UnitTime) -> [FleetConfigAction] {
        guard let scope = onProbation, let probation = records[scope]?.probation else { return [] }
        let window = Duration.checkedSeconds(probation.windowS ?? configuration.fleet.rollbackAfterS)
        // A clock that went back counts as no time passed; one that leapt ahead ends the trial.
        let elapsed = probation.startedAt.map { max(.zero, now - $0) } ?? .zero
        return [.startRollbackTimer(after: max(.zero, window - elapsed))]
    }

    public var versions: [ConfigScope: Int] { records.compactMapValues { $0.applied?.version } }

    /// The fleet's settings in force: the unit scope laid over the fleet scope.
    public var remoteSettings: ConfigValue {
        (settings[.fleet] ?? .table([:])).overlaid(by: settings[.unit] ?? .table([:]))
    }

    /// One scope's settings in force, nil when it has no document applied.
    public func settings(of scope: ConfigScope) -> ConfigValue? { settings[scope] }

    public var onProbation: ConfigScope? { ConfigScope.allCases.first { records[$0]?.probation != nil } }

    public mutating func handle(_ event: FleetConfigEvent) -> [FleetConfigAction] {
        switch event {
        case .received(let scope, let topic, let payload, let retained, let now):
            return receive(scope, topic: topic, payload: payload, retained: retained, at: now)
        case .refusedUnread(let scope, let rejection):
            return [.acknowledge(Self.rejected(scope, version: nil, rejection))]
        case .rollbackDue(let lastError):
            return rollBack(lastError: lastError)
        }
    }

    private mutating func receive(_ scope: ConfigScope, topic: String, payload: [UInt8], retained: Bool, at now: UnitTime) -> [FleetConfigAction] {
        // Deleting a retained document is how a fleet stops sending it; the unit keeps what it has.
        if payload.isEmpty { return [.ignore(scope, because: "empty message (retained document cleared)")] }
        let document: JSONDocument
        switch FleetMessage.parse(payload) {
        case .success(let parsed): document = parsed
        case .failure(let rejection): return [.acknowledge(Self.rejected(scope, version: nil, rejection))]
        }
        let version = FleetMessage.integer("version", in: document)
        if let rejection = FleetMessage.authenticate(document, topic: topic, trust: trust, as: .config) {
            return [.acknowledge(Self.rejected(scope, version: version, rejection))]
        }
        // The fleet's retained, authentic config on the broker tried: it is the fleet's own broker.
        if retained, let trial = onProbation, var trialRecord = records[trial] {
            trialRecord.probation = nil
            records[trial] = trialRecord
            return [.cancelRollbackTimer, .commit(trial, trialRecord, ack: nil)]
                + receive(scope, topic: topic, payload: payload, retained: retained, at: now)
        }
        guard let version, (1...Self.highestVersion).contains(version) else {
            let rejection = FleetRejection(.invalid, ["version must be an integer from 1 to \(Self.highestVersion)"])
            return [.acknowledge(Self.rejected(scope, version: version, rejection))]
        }
        let record = records[scope] ?? ConfigScopeRecord()
        if version == record.seenVersion {
            return [.ignore(scope, because: "version \(version) is the one held")]
        }
        // The broker's stored copy of an older document comes with every connection: not news.
        if version < record.seenVersion && retained {
            return [.ignore(scope, because: "retained version \(version) is older than version \(record.seenVersion) held")]
        }
        if version < record.seenVersion {
            let rejection = FleetRejection(.stale, ["version \(version) is older than version \(record.seenVersion) held for the \(scope.rawValue) scope"])
            return [.acknowledge(Self.rejected(scope, version: version, rejection))]
        }
        if let busy = onProbation {
            let rejection = FleetRejection(.busy, ["the \(busy.rawValue) config's [mqtt] change is still being tried; send again after it settles"])
            return [.acknowledge(Self.rejected(scope, version: version, rejection))]
        }

        var problems = FleetMessage.unknownMembers(of: document, allowed: ["version", "settings"])
        var candidate = ConfigValue.table([:])
        switch Self.settings(of: document) {
        case .success(let value): candidate = value
        case .failure(let error): problems += error.problems
        }
        var next = settings
        next[scope] = candidate
        var nextConfiguration: UnitConfiguration?
        do {
            nextConfiguration = try Self.effective(local: local, settings: next)
        } catch {
            problems += error.problems
        }
        guard let nextConfiguration, problems.isEmpty else {
            return [.acknowledge(Self.rejected(scope, version: version, FleetRejection(.invalid, problems)))]
        }

        let reconnect = !nextConfiguration.mqtt.isSameConnection(as: configuration.mqtt)
        let trial = !nextConfiguration.mqtt.isSameBroker(as: configuration.mqtt)
        var updated = record
        updated.seenVersion = version
        updated.applied = AppliedConfigDocument(version: version, payload: payload, topic: topic)
        // The trial runs on the last good config's clock: a push cannot lengthen its own trial.
        let trialS = configuration.fleet.rollbackAfterS
        updated.probation = trial ? .init(lastGood: record.applied, startedAt: now, windowS: trialS) : nil
        records[scope] = updated
        settings = next
        configuration = nextConfiguration
        var actions: [FleetConfigAction] = [
            .commit(scope, updated, ack: ConfigAck(scope: scope, version: version, result: .applied)),
            .use(nextConfiguration, reconnect: reconnect),
        ]
        if trial { actions.append(.startRollbackTimer(after: .checkedSeconds(trialS))) }
        return actions
    }

    private mutating func rollBack(lastError: String?) -> [FleetConfigAction] {
        guard let scope = onProbation, var record = records[scope], let probation = record.probation else { return [] }
        let tried = record.applied
        let broker = "\(configuration.mqtt.host):\(configuration.mqtt.port)"
        record.applied = probation.lastGood
        record.probation = nil
        records[scope] = record
        settings[scope] = probation.lastGood.flatMap { try? Self.settings(of: $0.payload).get() }
        configuration = (try? effective()) ?? configuration
        let why = "did not get the fleet's signed config from the broker \(broker) within \(probation.windowS ?? configuration.fleet.rollbackAfterS) s"
            + (lastError.map { ": \($0)" } ?? "")
        let ack = ConfigAck(scope: scope, version: tried?.version, result: .rolledBack, reason: "unreachable", errors: [why])
        return [.commit(scope, record, ack: ack), .use(configuration, reconnect: true)]
    }

    /// The topic a stored document came on; for one stored before topics were kept, the topic of
    /// its scope under the local file.
    private static func topic(of scope: ConfigScope, in local: UnitConfiguration) -> String {
        switch scope {
        case .fleet: "\(local.mqtt.topicPrefix)/\(local.unit.fleet)/\(UnitTopic.config.rawValue)"
        case .unit: local.unitTopicBase + UnitTopic.config.rawValue
        }
    }

    private static func verify(_ document: AppliedConfigDocument, topic fallback: String, trust: FleetTrust) -> FleetRejection? {
        if document.version > highestVersion {
            return FleetRejection(.invalid, ["version \(document.version) is above the highest version \(highestVersion)"])
        }
        return switch FleetMessage.parse(document.payload) {
        case .success(let parsed): FleetMessage.authenticate(parsed, topic: document.topic ?? fallback, trust: trust, as: .config)
        case .failure(let rejection): rejection
        }
    }

    private func effective() throws(ConfigError) -> UnitConfiguration {
        try Self.effective(local: local, settings: settings)
    }

    /// local ⊕ fleet ⊕ unit, validated.
    private static func effective(local: ConfigValue, settings: [ConfigScope: ConfigValue]) throws(ConfigError) -> UnitConfiguration {
        try UnitConfiguration.overlay(ConfigScope.allCases.compactMap { settings[$0] }, on: local)
    }

    private static func settings(of payload: [UInt8]) -> Result<ConfigValue, ConfigError> {
        do {
            return settings(of: try JSONDocument.parse(payload))
        } catch {
            return .failure(ConfigError(problems: error.problems))
        }
    }

    private static func settings(of document: JSONDocument) -> Result<ConfigValue, ConfigError> {
        guard let value = document["settings"] else { return .failure(ConfigError(problems: ["settings is missing"])) }
        guard case .object = value else { return .failure(ConfigError(problems: ["settings must be an object"])) }
        do {
            return .success(try value.configValue())
        } catch {
            return .failure(error)
        }
    }

    private static func rejected(_ scope: ConfigScope, version: Int?, _ rejection: FleetRejection) -> ConfigAck {
        ConfigAck(scope: scope, version: version, result: .rejected, reason: rejection.reason.rawValue, errors: rejection.errors)
    }
}
