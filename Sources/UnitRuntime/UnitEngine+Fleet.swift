import ControlSocket
import FleetControl
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import LocalCache
import Logging
import MQTTLink
import StrictJSON
import UnitConfig
import UnitCore

/// Fleet configuration and commands over MQTT: the engine performs what `FleetConfigMachine` and
/// `CommandGate` decide.
extension UnitEngine {
    /// Connects with the configuration in force and resumes a rollback trial cut short by a restart.
    func startFleetControl() {
        for problem in fleetConfig.restoreProblems { logger.error("\(problem)") }
        linkGeneration = mqtt.connect(configuration)
        perform(fleetConfig.startupActions(now: clockMs()))
    }

    var fleetTopic: String { "\(configuration.mqtt.topicPrefix)/\(configuration.unit.fleet)/\(UnitTopic.config.rawValue)" }

    /// The fleet's three topics for this unit, and what each carries: the one place they are named.
    enum FleetTopic {
        case config(ConfigScope)
        case command
    }

    var fleetTopics: [(topic: String, carries: FleetTopic)] {
        let base = configuration.unitTopicBase
        return [(fleetTopic, .config(.fleet)), (base + UnitTopic.config.rawValue, .config(.unit)), (base + UnitTopic.cmd.rawValue, .command)]
    }

    func subscribeToFleet() {
        for (topic, _) in fleetTopics {
            do {
                try mqtt.subscribe(topic, qos: 1)
            } catch {
                logger.warning("cannot subscribe; retried on the next connection", metadata: ["topic": "\(topic)", "error": "\(error)"])
            }
        }
    }

    /// True when the message was the fleet's (handled, answered where there is someone to answer).
    func handleFleetMessage(_ message: MQTTMessage) -> Bool {
        guard let carried = fleetTopics.first(where: { $0.topic == message.topic })?.carries else { return false }
        switch carried {
        case .config(let scope):
            perform(fleetConfig.handle(.received(scope, topic: message.topic, payload: message.payload, retained: message.retained, at: clockMs())))
        case .command:
            handleCommand(message)
        }
        return true
    }

    /// True when the topic was the fleet's: a message refused unread (over the size limit, or
    /// poison), answered with `rejection`.
    func refuseFleetMessage(topic: String, _ rejection: FleetRejection) -> Bool {
        guard let carried = fleetTopics.first(where: { $0.topic == topic })?.carries else { return false }
        switch carried {
        case .config(let scope):
            perform(fleetConfig.handle(.refusedUnread(scope, rejection)))
        case .command:
            answerCommand(CommandGate.refuseUnread(rejection), at: clockMs())
        }
        return true
    }

    var fleetConfigStatus: ControlStatus.Config {
        ControlStatus.Config(
            versions: Dictionary(uniqueKeysWithValues: fleetConfig.versions.map { ($0.key.rawValue, $0.value) }),
            onTrial: fleetConfig.onProbation?.rawValue,
            broker: brokerInUse,
            remoteSettings: String(decoding: JSONDocument(fleetConfig.remoteSettings).canonicalBytes, as: UTF8.self)
        )
    }

    /// The broker node connected to (after a failover, not the first of `hosts`); while not
    /// connected, the nodes it tries, in order.
    var brokerInUse: String {
        mqtt.nodeInUse ?? configuration.mqtt.nodes.map(\.description).joined(separator: ", ")
    }

    /// The fleet's documents in force for `taxiunitctl config`, in the order they are laid over the local files.
    var fleetConfigLayers: [ControlConfigLayer] {
        ConfigScope.allCases.compactMap { scope in
            guard let version = fleetConfig.versions[scope], let settings = fleetConfig.settings(of: scope) else { return nil }
            return ControlConfigLayer(
                scope: scope.rawValue, version: version, settings: String(decoding: JSONDocument(settings).canonicalBytes, as: UTF8.self))
        }
    }

    // MARK: Configuration

    func perform(_ actions: [FleetConfigAction]) {
        for action in actions {
            do {
                try perform(action)
            } catch {
                logger.error("fleet config action failed", metadata: ["action": "\(action)", "error": "\(error)"])
            }
        }
    }

    private func perform(_ action: FleetConfigAction) throws {
        switch action {
        case .commit(let scope, let record, let ack):
            let now = clockMs()
            try store.write(.full) { transaction in
                try transaction.saveFleetConfig(record, for: scope, at: now)
                if let ack { try enqueue(ack, in: transaction, at: now) }
            }
            if let ack { log(ack) }
            outbox.want()
        case .acknowledge(let ack):
            let now = clockMs()
            try store.write { try enqueue(ack, in: $0, at: now) }
            log(ack)
            outbox.want()
        case .use(let next, let reconnect):
            configuration = next
            // The logged-in driver's language stays; a driver without one sees the fleet's.
            applyDriverPreferences()
            inboundFlow.setRate(perSecond: next.mqtt.inboundPerS)
            step(.settingsChanged(next.unitSettings))
            session.configure(lockout: next.driver.lockout)
            machine.useCannedMessages(next.messages.canned)
            outbox.maxInFlight = next.mqtt.maxInflight
            outbox.batchMax = next.mqtt.batchMax
            outbox.topicBase = next.unitTopicBase
            performer.upkeep.limits = next.store
            performer.commitWindow.window = .milliseconds(next.store.positionCommitMs)
            clock.trustSystemClock = next.gps.trustSystemClock
            if reconnect {
                logger.notice("broker settings changed; reconnecting", metadata: ["broker": "\(next.mqtt.host):\(next.mqtt.port)"])
                outbox.sessionEnded()
                broker = .init(connected: false, since: clockMs(), lastError: nil)
                linkGeneration = mqtt.connect(next)
            }
        case .startRollbackTimer(let seconds):
            rollbackTimer?.cancel()
            rollbackTimer = inbox.post(.fleetRollbackDue, after: .seconds(seconds))
        case .cancelRollbackTimer:
            rollbackTimer?.cancel()
            rollbackTimer = nil
        case .ignore(let scope, let why):
            logger.debug("fleet config ignored", metadata: ["scope": "\(scope.rawValue)", "why": "\(why)"])
        }
    }

    private func enqueue(_ ack: ConfigAck, in transaction: LocalCache.Transaction, at now: Int64) throws {
        let unit = configuration.unit.id
        try transaction.enqueue(topic: UnitTopic.configAck.rawValue, messageClass: .event, createdAt: now) { seq, id in
            try Array(JSONEncoder.wire.encode(ConfigAckMessage(ack, unit: unit, seq: seq, id: id, t: now)))
        }
    }

    private func log(_ ack: ConfigAck) {
        let metadata: Logger.Metadata = [
            "scope": "\(ack.scope.rawValue)", "version": "\(ack.version.map(String.init) ?? "?")",
            "result": "\(ack.result.rawValue)", "errors": "\(ack.errors.joined(separator: "; "))",
        ]
        if ack.result == .applied { logger.notice("fleet config applied", metadata: metadata) }
        else { logger.warning("fleet config \(ack.result.rawValue)", metadata: metadata) }
    }

    // MARK: Commands

    private func handleCommand(_ message: MQTTMessage) {
        let now = clockMs()
        answerCommand(fleetCommands.admit(message.payload, topic: message.topic, now: now), at: now)
    }

    private func answerCommand(_ decision: CommandDecision, at now: Int64) {
        let reply = { (result: CommandReplyMessage.Result, id: String?, name: String?) in
            CommandReplyMessage(unit: self.configuration.unit.id, seq: 0, id: "", t: now, cmdID: id, cmd: name, result: result)
        }
        do {
            switch decision {
            case .ignore(let id):
                logger.notice("replayed command ignored", metadata: ["id": "\(id)"])
            case .refuse(let refusal):
                logger.warning("command refused", metadata: ["id": "\(refusal.id ?? "?")", "result": "\(refusal.result.rawValue)", "errors": "\(refusal.errors.joined(separator: "; "))"])
                var answer = reply(CommandReplyMessage.Result(rawValue: refusal.result.rawValue) ?? .rejected, refusal.id, refusal.name)
                answer.reason = refusal.reason
                answer.errors = refusal.errors
                try store.write { try enqueueReply(answer, in: $0) }
            case .execute(let command):
                logger.notice("executing fleet command", metadata: ["id": "\(command.id)", "cmd": "\(command.name)"])
                try execute(command, reply: reply(.ok, command.id, command.name), now: now)
            }
        } catch {
            logger.error("cannot answer a fleet command", metadata: ["error": "\(error)"])
        }
        outbox.want()
    }

    private func execute(_ command: FleetCommand, reply: CommandReplyMessage, now: Int64) throws {
        var answer = reply
        // Read before the write transaction: the status reads the store itself.
        if command.action == .status { answer.status = currentStatus() }
        try store.write(.full) { transaction in
            try transaction.rememberCommand(command.id, expiresAt: command.expiresAt, now: now)
            switch command.action {
            case .report:
                // The state machine's last fix: off duty and private it is in no other place.
                guard let fix = machine.lastFix else {
                    answer.result = .failed
                    answer.errors = ["no fix yet"]
                    break
                }
                let point = PositionPoint(fix)
                try transaction.enqueue(topic: UnitTopic.pos.rawValue, messageClass: .position, createdAt: now) { seq, _ in
                    try LivePositionMessage(point: point, seq: seq).json()
                }
                answer.position = point
            case .status, .reconnect:
                break
            case .purge(let days):
                // The history, the rides, and what still waits to be sent (docs/protocol.md, "Privacy").
                let cutoff = now.saturatingSubtract(Int64(days) * 86_400_000)
                answer.deleted = try transaction.deletePositions(before: cutoff)
                try transaction.deleteRides(droppedBefore: cutoff)
                try transaction.dropQueuedPositions(createdBefore: cutoff)
            }
            try enqueueReply(answer, in: transaction)
        }
        // The reply waits in the outbox and goes out on the new connection.
        if command.action == .reconnect { mqtt.dropConnection() }
    }

    private func enqueueReply(_ reply: CommandReplyMessage, in transaction: LocalCache.Transaction) throws {
        try transaction.enqueue(topic: UnitTopic.cmdReply.rawValue, messageClass: .event, createdAt: reply.t) { seq, id in
            var numbered = reply
            numbered.seq = seq
            numbered.id = id
            return try numbered.json()
        }
    }
}
