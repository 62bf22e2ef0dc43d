import ControlSocket
import Foundation
import GPSReader
import LocalCache
import Logging
import MQTTLink
import ServiceLifecycle
import UnitConfig
import UnitCore

/// Everything that can happen to the unit, in the one order the engine sees it.
enum EngineInput: Sendable {
    case gps(GPSDEvent)
    case mqtt(MQTTEvent)
    case control(ControlRequest, reply: CheckedContinuation<ControlResponse, Never>)
    /// `generation` tells a timer that was replaced, but had already fired, from the current one.
    case timerFired(UnitTimer, generation: Int)
    case shutdownRequested
    case shutdownDeadline
}

/// The imperative shell: feeds `UnitStateMachine` with events from gpsd, the broker and the control
/// socket, one at a time, and performs its actions against SQLite and MQTT.
public final class UnitEngine: Service, @unchecked Sendable {
    private let configuration: UnitConfiguration
    private let store: LocalCache
    private let mqtt: MQTTConnection
    private let gpsd: GPSDConnection
    private let logger: Logger
    private let inputs: AsyncStream<EngineInput>
    private let inputSink: AsyncStream<EngineInput>.Continuation

    // Owned by the `run()` loop only.
    private var machine: UnitStateMachine
    private var outbox: OutboxPump
    private var gpsConnected = false
    private var lastFix: (fix: Fix, receivedAt: ContinuousClock.Instant)?
    private var broker = ControlStatus.Broker(connected: false, since: nil, lastError: nil)
    private var offlineStatusTicket: MQTTPublishTicket?
    private var timers: [UnitTimer: (task: Task<Void, Never>, generation: Int)] = [:]
    private var timerGenerations = 0
    private var stopping = false

    static let snapshotKey = "unit_snapshot"
    /// How long shutdown waits for the broker to acknowledge the offline status.
    static let shutdownGraceS = 2.0

    public init(configuration: UnitConfiguration, store: LocalCache, mqtt: MQTTConnection, gpsd: GPSDConnection, logger: Logger) throws {
        self.configuration = configuration
        self.store = store
        self.mqtt = mqtt
        self.gpsd = gpsd
        self.logger = logger
        let snapshot = try store.loadValue(UnitSnapshot.self, forKey: Self.snapshotKey) ?? UnitSnapshot()
        machine = UnitStateMachine(restoring: snapshot, settings: configuration.unitSettings)
        outbox = OutboxPump(maxInFlight: configuration.mqtt.maxInflight)
        (inputs, inputSink) = AsyncStream.makeStream(of: EngineInput.self, bufferingPolicy: .unbounded)
    }

    /// For the control socket: answered from inside the engine loop, so it sees a consistent state.
    public func handleControl(_ bytes: [UInt8]) async -> [UInt8] {
        let response: ControlResponse
        do {
            let request = try JSONDecoder().decode(ControlRequest.self, from: Data(bytes))
            response = await withCheckedContinuation { reply in
                inputSink.yield(.control(request, reply: reply))
            }
        } catch {
            response = .failure("malformed request: \(error)")
        }
        return (try? Array(JSONEncoder().encode(response))) ?? Array(#"{"ok":false,"error":"encoding"}"#.utf8)
    }

    public func run() async throws {
        await withGracefulShutdownHandler {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { [gpsd, inputSink] in
                    for await event in gpsd.events { inputSink.yield(.gps(event)) }
                }
                group.addTask { [mqtt, inputSink] in
                    for await event in mqtt.events { inputSink.yield(.mqtt(event)) }
                }
                for await input in inputs {
                    if handle(input) == .finished { break }
                }
                group.cancelAll()
            }
        } onGracefulShutdown: { [inputSink] in
            inputSink.yield(.shutdownRequested)
        }
    }

    private enum LoopOutcome { case running, finished }

    private func handle(_ input: EngineInput) -> LoopOutcome {
        switch input {
        case .gps(let event):
            handleGPS(event)
        case .mqtt(let event):
            return handleMQTT(event)
        case .control(let request, let reply):
            reply.resume(returning: answer(request))
        case .timerFired(let timer, let generation):
            guard timers[timer]?.generation == generation else { break }
            timers[timer] = nil
            perform(machine.handle(.timerFired(timer, at: SystemClock.sample())))
        case .shutdownRequested:
            return beginShutdown()
        case .shutdownDeadline:
            logger.warning("broker did not acknowledge the offline status in time; stopping anyway")
            return .finished
        }
        return .running
    }

    // MARK: GPS

    private func handleGPS(_ event: GPSDEvent) {
        switch event {
        case .connected:
            gpsConnected = true
            logger.info("connected to gpsd", metadata: ["gpsd": "\(configuration.gpsd.host):\(configuration.gpsd.port)"])
        case .disconnected(let reason):
            if gpsConnected { logger.warning("gpsd connection lost", metadata: ["reason": "\(reason)"]) }
            else { logger.debug("gpsd not reachable", metadata: ["reason": "\(reason)"]) }
            gpsConnected = false
        case .sample(let sample):
            perform(machine.handle(.gps(sample, at: SystemClock.sample())))
        }
    }

    // MARK: MQTT

    private func handleMQTT(_ event: MQTTEvent) -> LoopOutcome {
        switch event {
        case .connected(let session):
            broker = .init(connected: true, since: clockMs(), lastError: nil)
            logger.info("connected to broker", metadata: ["broker": "\(configuration.mqtt.host):\(configuration.mqtt.port)"])
            outbox.sessionStarted(session)
            publishStatus()
            pumpOutbox()
        case .connectFailed(let reason):
            if broker.lastError != reason { logger.warning("cannot connect to broker", metadata: ["reason": "\(reason)"]) }
            broker.lastError = reason
        case .disconnected(_, let reason):
            broker = .init(connected: false, since: clockMs(), lastError: reason)
            logger.warning("broker connection lost; messages wait in the store", metadata: ["reason": "\(reason)"])
            outbox.sessionEnded()
        case .published(let ticket):
            if ticket == offlineStatusTicket { return .finished }
            if let rowID = outbox.acknowledged(ticket) {
                do {
                    try store.markDelivered(rowID, at: clockMs())
                } catch {
                    logger.error("cannot mark message delivered; it will be sent again", metadata: ["error": "\(error)"])
                }
            }
            pumpOutbox()
        case .message(let message):
            logger.debug("ignoring message", metadata: ["topic": "\(message.topic)"])
        }
        return .running
    }

    /// Hands the oldest undelivered messages to libmosquitto, up to the in-flight limit.
    private func pumpOutbox() {
        guard !stopping, let free = outbox.freeSlots, free > 0 else { return }
        let pending: [OutboxMessage]
        do {
            pending = try store.pendingMessages(limit: free, excluding: outbox.inFlightRows)
        } catch {
            logger.error("cannot read the outbox", metadata: ["error": "\(error)"])
            return
        }
        for message in pending {
            do {
                let ticket = try mqtt.publish(
                    topic: configuration.unitTopicBase + message.topic, payload: message.payload, qos: message.qos, retain: false)
                outbox.handedOver(message.rowID, as: ticket)
            } catch {
                logger.debug("publish deferred", metadata: ["error": "\(error)"])
                return
            }
        }
    }

    private func publishStatus(online: Bool = true) {
        let status = StatusMessage(
            online: online, unit: configuration.unit.id, state: machine.state, t: clockMs(), zone: machine.positions.zones.current)
        do {
            let ticket = try mqtt.publish(
                topic: configuration.unitTopicBase + UnitTopic.status.rawValue,
                payload: Array(JSONEncoder.wire.encode(status)), qos: 1, retain: true)
            if !online { offlineStatusTicket = ticket }
        } catch {
            logger.debug("status not published now; it is sent on the next connection", metadata: ["error": "\(error)"])
        }
    }

    // MARK: Actions

    private func perform(_ actions: [UnitAction]) {
        for action in actions {
            do {
                try perform(action)
            } catch {
                logger.error("action failed", metadata: ["action": "\(action)", "error": "\(error)"])
            }
        }
    }

    private func perform(_ action: UnitAction) throws {
        switch action {
        case .recordFix(let fix, let report):
            lastFix = (fix, .now)
            let unit = configuration.unit.id
            try store.write { transaction in
                try transaction.insertPosition(fix)
                if report {
                    try transaction.enqueue(topic: UnitTopic.pos.rawValue, messageClass: .position, createdAt: clockMs()) { seq, id in
                        try Array(JSONEncoder.wire.encode(PositionMessage(unit: unit, seq: seq, id: id, points: [PositionPoint(fix)])))
                    }
                }
            }
            if report { pumpOutbox() }
        case .statusChanged:
            publishStatus()
        case .persist(let snapshot):
            try store.write(.full) { try $0.saveValue(snapshot, forKey: Self.snapshotKey) }
        case .tellDriver(let text):
            logger.info("driver: \(text)")
        case .reportStale(let fix, let ageMs):
            let unit = configuration.unit.id
            try store.write { transaction in
                try transaction.enqueue(topic: UnitTopic.pos.rawValue, messageClass: .position, createdAt: clockMs()) { seq, id in
                    try Array(JSONEncoder.wire.encode(PositionMessage(unit: unit, seq: seq, id: id, points: [PositionPoint(fix, staleAgeMs: ageMs)])))
                }
            }
            pumpOutbox()
        case .zoneChanged(let change, let time):
            logger.info("zone changed", metadata: ["from": "\(change.from ?? "-")", "to": "\(change.to ?? "-")"])
            let unit = configuration.unit.id
            try store.write { transaction in
                try transaction.enqueue(topic: UnitTopic.event.rawValue, messageClass: .event, createdAt: time) { seq, id in
                    try Array(JSONEncoder.wire.encode(ZoneEventMessage(unit: unit, seq: seq, id: id, t: time, change: change)))
                }
            }
            pumpOutbox()
        case .startTimer(let timer, let afterS):
            timers[timer]?.task.cancel()
            timerGenerations += 1
            let generation = timerGenerations
            let task = Task { [inputSink] in
                guard (try? await Task.sleep(for: .seconds(afterS))) != nil else { return }
                inputSink.yield(.timerFired(timer, generation: generation))
            }
            timers[timer] = (task, generation)
        }
    }

    // MARK: Control

    private func answer(_ request: ControlRequest) -> ControlResponse {
        switch request.cmd {
        case .status:
            return ControlResponse(ok: true, status: currentStatus())
        case .press:
            guard let input = request.input, let command = DriverCommand(rawValue: input) else {
                let known = DriverCommand.allCases.map(\.rawValue).joined(separator: ", ")
                return .failure("unknown input \"\(request.input ?? "")\"; known: \(known)")
            }
            let actions = machine.handle(.driver(command))
            perform(actions)
            let told = actions.compactMap { if case .tellDriver(let text) = $0 { text } else { nil } }
            return ControlResponse(ok: true, message: told.joined(separator: "; "))
        }
    }

    private func currentStatus() -> ControlStatus {
        let depth = (try? store.undeliveredCount()) ?? -1
        let stored = (try? store.positionCount()) ?? -1
        let age = lastFix.map { (ContinuousClock.now - $0.receivedAt) / .seconds(1) }
        return ControlStatus(
            unit: configuration.unit.id,
            state: machine.state.rawValue,
            gps: .init(connected: gpsConnected, lastFixAgeS: age, lastFixTime: lastFix?.fix.time),
            clock: machine.positions.clock.reading(at: SystemClock.sample()).source.rawValue,
            zone: machine.positions.zones.current,
            broker: broker,
            outbox: .init(depth: depth, inFlight: outbox.inFlightRows.count),
            storedPositions: stored
        )
    }

    // MARK: Shutdown

    private func beginShutdown() -> LoopOutcome {
        stopping = true
        logger.info("shutting down")
        guard broker.connected else { return .finished }
        publishStatus(online: false)
        guard offlineStatusTicket != nil else { return .finished }
        Task { [inputSink] in
            try? await Task.sleep(for: .seconds(Self.shutdownGraceS))
            inputSink.yield(.shutdownDeadline)
        }
        return .running
    }

    /// The unit's clock for messages, ms since the Unix epoch.
    private func clockMs() -> Int64 {
        machine.positions.clock.reading(at: SystemClock.sample()).milliseconds
    }
}

extension JSONEncoder {
    /// Compact, stable key order, no escaped slashes: what goes on the wire.
    static var wire: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }
}
