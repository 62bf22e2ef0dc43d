import ControlSocket
import DriverDevices
import DriverDisplay
import FleetControl
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
    /// `arrivedAtS`: the monotonic clock when the reader handed it over; a fix may wait in the inbox.
    case gps(GPSDEvent, arrivedAtS: Double)
    case mqtt(BrokerLink.Event)
    case control(ControlRequest, reply: CheckedContinuation<ControlResponse, Never>)
    case healthProbe(EngineProbe)
    /// A button or the serial terminal.
    case driver(DriverPress)
    /// `generation` tells a restarted timer from a stale firing of the one it replaced.
    case timerFired(TimerID, generation: UInt64)
    case maintenance
    case shutdownRequested
    case shutdownDeadline
    case fleetRollbackDue
    /// The position commit window closed: the fixes held in it are committed.
    case commitWindowClosed
    /// The unit has run `CrashLoopBreaker.settledAfter`: this start did not crash early.
    case startSettled
}

/// The imperative shell: feeds `UnitStateMachine` with events from gpsd, the broker and the control
/// socket, one at a time, and performs its actions against SQLite and MQTT.
public final class UnitEngine: Service, @unchecked Sendable {
    let store: LocalCache
    let mqtt: BrokerLink
    private let gpsd: GPSDConnection
    let logger: Logger
    let inbox = EngineInbox<EngineInput>()
    /// Inbound MQTT messages admitted per second, with a burst (docs/protocol.md, "Limits").
    let inboundFlow: InboundFlow

    // Owned by the `run()` loop only.
    /// The local file with the fleet's documents laid over it (UnitEngine+Fleet.swift).
    var configuration: UnitConfiguration
    var machine: UnitStateMachine
    let outbox: OutboxPump
    var upkeep: StoreUpkeep
    /// Fixes waiting for the next commit (`[store] position_commit_ms`).
    var commitWindow: PositionCommitWindow
    /// Messages the store refused (disk full, read-only), oldest first, retried by `StoreUpkeep`.
    private var unstoredMessages: [UnstoredMessage] = []
    /// Set by `pumpOutbox()`; the loop pumps once after each batch of inputs.
    private var pumpWanted = false
    /// True while the pump has free slots in flight and nothing to fill them with.
    private var acknowledgementsMayWait = false
    /// PUBACKs the store does not know of yet: the next pump marks them.
    private var acknowledgedSincePump = false
    /// The clocks as read for the current batch of inputs: each reading costs a system call
    /// (adjtimex), and a batch is handled within milliseconds.
    private var batchClock: ClockSample?
    private var gpsConnected = false
    var lastFix: (fix: Fix, receivedAt: ContinuousClock.Instant)?
    var broker = ControlStatus.Broker(connected: false, since: nil, lastError: nil)
    var fleetConfig: FleetConfigMachine
    var fleetCommands: CommandGate
    var rollbackTimer: Task<Void, Never>?
    /// Which `BrokerLink` connection is current; events from replaced ones are dropped.
    var linkGeneration = 0
    private var offlineStatusTicket: MQTTPublishTicket?
    private var lastAsideCounts: [String: Int] = [:]
    /// What the last retained status said was set aside.
    private var publishedAside: [String: Int]?
    /// The id the store gave the alarm being written, for `UnitStateMachine.alarmStored`.
    private var alarmMessageID: String?
    private var stopping = false
    private var timers: [TimerID: (task: Task<Void, Never>, generation: UInt64)] = [:]
    private var timerGeneration: UInt64 = 0
    /// The zone the taxi is in, from the state machine's zone tracker.
    private var zone: String? { machine.positions.zones.current }
    let devices: DriverDeviceSet?
    private var panel = DriverPanel()
    private var shownView: DriverView?

    static let snapshotKey = "unit_snapshot"
    /// No timer waits longer; the longest offer window is an hour.
    static let longestTimerMs: Int64 = 3_600_000
    /// How long shutdown waits for the broker to acknowledge the offline status.
    static let shutdownGraceS = 2.0

    /// `local` is the validated local file; fleet documents stored in `store` are laid over it.
    /// `devices`: the driver's buttons and terminal; their presses come in, the terminal is shown
    /// every new `DriverView`.
    public init(
        local: ConfigValue, store: LocalCache, mqtt: BrokerLink, gpsd: GPSDConnection, logger: Logger, devices: DriverDeviceSet? = nil
    ) throws {
        let startedAt = Self.clockMs()
        CrashLoopBreaker.started(store: store, at: startedAt, logger: logger)
        // Whatever is loaded here and fails is set aside rather than failing every start.
        fleetConfig = try Self.restoring("fleet configuration documents", store: store, logger: logger, fallback: FleetConfigMachine(local: local, restoring: [:])) {
            try FleetConfigMachine(local: local, restoring: store.fleetConfigRecords())
        } setAside: { reason in
            try store.setAsideFleetConfig(reason: reason, at: startedAt)
        }
        if !fleetConfig.restoreProblems.isEmpty {
            // Kept and reported rather than tried again at every start; the broker's retained copy
            // brings the fleet's current document back.
            let reason = LogExcerpt.of(fleetConfig.restoreProblems.joined(separator: "; "), limit: 500)
            logger.critical("SET ASIDE: the stored fleet configuration documents could not be restored", metadata: ["reason": "\(reason)"])
            try? store.setAsideFleetConfig(reason: reason, at: startedAt)
        }
        let trust = fleetConfig.trust
        fleetCommands = try Self.restoring("executed commands", store: store, logger: logger, fallback: CommandGate(trust: trust, executed: [:])) {
            CommandGate(trust: trust, executed: try store.executedCommands(now: startedAt))
        } setAside: { reason in
            try store.setAsideExecutedCommands(reason: reason, at: startedAt)
        }
        let configuration = fleetConfig.configuration
        self.configuration = configuration
        inboundFlow = InboundFlow(perSecond: configuration.mqtt.inboundPerS)
        self.store = store
        self.mqtt = mqtt
        self.gpsd = gpsd
        self.logger = logger
        self.devices = devices
        let snapshot = try Self.restoring("state snapshot", store: store, logger: logger, fallback: UnitSnapshot()) {
            try store.loadValue(UnitSnapshot.self, forKey: Self.snapshotKey) ?? UnitSnapshot()
        } setAside: { reason in
            try store.setAsideValue(forKey: Self.snapshotKey, kind: .snapshot, reason: reason, at: startedAt)
        }
        machine = UnitStateMachine(restoring: snapshot, settings: configuration.unitSettings, lastFix: (try? store.lastPosition()) ?? nil)
        upkeep = StoreUpkeep(store: store, settings: configuration.store, logger: logger)
        commitWindow = PositionCommitWindow(window: .milliseconds(configuration.store.positionCommitMs))
        outbox = OutboxPump(
            store: store, unit: configuration.unit.id, topicBase: configuration.unitTopicBase,
            maxInFlight: configuration.mqtt.maxInflight, batchMax: configuration.mqtt.batchMax, logger: logger
        ) { [mqtt] topic, message throws(MQTTLinkError) in
            try mqtt.publish(topic: topic, payload: message.payload, qos: message.qos, retain: false)
        }
        gpsd.deliverEvents { [inbox] event in
            let isSample = if case .sample = event { true } else { false }
            inbox.post(.gps(event, arrivedAtS: ProcessInfo.processInfo.systemUptime), mayWait: isSample ? .fix : [], droppable: isSample)
        }
        mqtt.deliverEvents { [inbox, inboundFlow] linked in
            switch linked.event {
            case .published:
                inbox.post(.mqtt(linked), mayWait: .acknowledgement)
            case .message:
                // A flood is dropped here, on the broker's thread, before it queues up or is parsed.
                guard inboundFlow.admit() else { return }
                inbox.post(.mqtt(linked), droppable: true)
            case .connected, .connectFailed, .disconnected:
                inbox.post(.mqtt(linked))
            }
        }
    }

    /// Loads something kept in the store; when that fails, sets it aside (kept for diagnosis and
    /// counted in `status`) and starts without it, so that it cannot fail every start. Throws only
    /// what `fallback` throws.
    static func restoring<T>(
        _ what: String, store: LocalCache, logger: Logger, fallback: @autoclosure () throws -> T, load: () throws -> T,
        setAside: (String) throws -> Void
    ) throws -> T {
        do {
            return try load()
        } catch {
            let reason = LogExcerpt.of("\(error)", limit: 500)
            logger.critical("SET ASIDE: the stored \(what) could not be restored; starting without", metadata: ["reason": "\(reason)"])
            do {
                try setAside(reason)
            } catch {
                logger.error("cannot set aside the stored \(what)", metadata: ["error": "\(error)"])
            }
            return try fallback()
        }
    }

    /// For the control socket: answered from inside the engine loop, so it sees a consistent state.
    public func handleControl(_ bytes: [UInt8]) async -> [UInt8] {
        let response: ControlResponse
        do {
            let request = try JSONDecoder().decode(ControlRequest.self, from: Data(bytes))
            response = await withCheckedContinuation { reply in
                inbox.post(.control(request, reply: reply))
            }
        } catch {
            response = .failure("malformed request: \(error)")
        }
        return (try? Array(JSONEncoder().encode(response))) ?? Array(#"{"ok":false,"error":"encoding"}"#.utf8)
    }

    /// For the systemd watchdog: the probe is answered when the loop gets to it.
    public func probe() -> EngineProbe {
        let probe = EngineProbe()
        inbox.post(.healthProbe(probe))
        return probe
    }

    public func run() async throws {
        _ = asideCounts()
        startFleetControl()
        // Re-arm the restored offer's deadline, or answer `timeout` if it passed while we were down.
        // The fleet's config in force may have set another language than the local file.
        devices?.useLanguage(of: configuration)
        step(.resumed(at: clockMs()))
        pumpIfWanted()
        refreshDriverView()
        await withGracefulShutdownHandler {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { [inbox] in
                    while (try? await Task.sleep(for: StoreUpkeep.interval)) != nil { inbox.post(.maintenance) }
                }
                inbox.post(.startSettled, after: CrashLoopBreaker.settledAfter)
                for presses in devices?.presses ?? [] {
                    group.addTask { [inbox] in
                        for await press in presses { inbox.post(.driver(press)) }
                    }
                }
                // Inputs that arrived together (a fix and the PUBACKs of earlier ones) are handled
                // together: one outbox pump, one look at the driver's screen.
                loop: while let batch = await inbox.next() {
                    batchClock = nil
                    var outcome = LoopOutcome.running
                    for input in batch where outcome == .running {
                        outcome = handle(input)
                    }
                    pumpIfWanted()
                    // A PUBACK only frees a slot in flight: while the pump has free slots and
                    // nothing to fill them with, it neither wakes the loop nor commits on its own;
                    // the next pump (the next fix, the upkeep tick) marks it. Shutdown waits for one.
                    acknowledgementsMayWait = !stopping && outbox.inFlight < outbox.maxInFlight
                    // While fixes wait for the commit window, its timer wakes the loop: the fixes
                    // that come meanwhile wait with them, and are handled in one batch.
                    var deferred: InputDeferral = acknowledgementsMayWait ? .acknowledgement : []
                    if !commitWindow.held.isEmpty { deferred.insert(.fix) }
                    inbox.deferred = deferred
                    refreshDriverView()
                    if outcome == .finished { break loop }
                }
                commitHeldFixes()
                for timer in timers.values { timer.task.cancel() }
                group.cancelAll()
            }
        } onGracefulShutdown: { [inbox] in
            inbox.post(.shutdownRequested)
        }
    }

    private enum LoopOutcome { case running, finished }

    private func handle(_ input: EngineInput) -> LoopOutcome {
        switch input {
        case .gps(let event, let arrivedAtS):
            handleGPS(event, arrivedAtS: arrivedAtS)
        case .mqtt(let linked):
            guard linked.generation == linkGeneration else { return .running }
            return handleMQTT(linked.event)
        case .control(let request, let reply):
            // What was acknowledged is marked before the answer reads the store.
            if acknowledgedSincePump { pumpOutbox() }
            pumpIfWanted()
            reply.resume(returning: answer(request))
        case .healthProbe(let probe):
            probe.answer(EngineHealth(state: machine.status.state.rawValue, online: broker.connected, queued: (try? store.outboxDepth().total) ?? -1))
        case .driver(let press):
            if case .failure(let problem) = driverInput(press.input) {
                logger.error("driver input refused", metadata: ["source": "\(press.source)", "problem": "\(problem)"])
            }
        case .timerFired(let id, let generation):
            guard timers[id]?.generation == generation else { break }
            timers[id] = nil
            step(.timerFired(id, at: clockMs()))
        case .maintenance:
            // A healthy loop comes round every second; connecting may block for a while.
            mqtt.restartLoopIfSilent(longerThan: .seconds(max(60, 3 * configuration.mqtt.keepaliveS)))
            // Retention ages rows by the unit clock: only a synchronised system clock is trusted for
            // that, never GPS time that may have jumped ahead.
            let clock = machine.positions.clock.reading(at: clockSample())
            if upkeep.run(now: clock.milliseconds, retentionClockTrusted: clock.source == .system, unstored: &unstoredMessages) { publishStatus() }
            // Something set aside while running (an unreadable outbox row) is reported like one at start.
            if broker.connected, asideCounts() != publishedAside { publishStatus() }
            let dropped = inboundFlow.takeDropped()
            if dropped > 0 { logger.warning("inbound messages over the rate limit dropped", metadata: ["count": "\(dropped)"]) }
            pumpOutbox()
        case .shutdownRequested:
            return beginShutdown()
        case .shutdownDeadline:
            logger.warning("broker did not acknowledge the offline status in time; stopping anyway")
            return .finished
        case .fleetRollbackDue:
            // Switching brokers now would lose the offline status' acknowledgement; the trial resumes at the next start.
            if !stopping { perform(fleetConfig.handle(.rollbackDue(lastError: broker.lastError))) }
        case .commitWindowClosed:
            if commitWindow.isDue(at: .now) { commitHeldFixes() }
        case .startSettled:
            CrashLoopBreaker.settled(store: store, logger: logger)
        }
        return .running
    }

    // MARK: GPS

    private func handleGPS(_ event: GPSDEvent, arrivedAtS: Double) {
        switch event {
        case .connected:
            gpsConnected = true
            logger.info("connected to gpsd", metadata: ["gpsd": "\(configuration.gpsd.host):\(configuration.gpsd.port)"])
        case .disconnected(let reason):
            if gpsConnected { logger.warning("gpsd connection lost", metadata: ["reason": "\(reason)"]) }
            else { logger.debug("gpsd not reachable", metadata: ["reason": "\(reason)"]) }
            gpsConnected = false
            // No fix follows soon: what gpsd sent is stored now.
            commitHeldFixes()
        case .sample(let sample):
            step(.gps(sample, at: clockSample(arrivedAtS: arrivedAtS)))
        }
    }

    // MARK: MQTT

    private func handleMQTT(_ event: MQTTEvent) -> LoopOutcome {
        switch event {
        case .connected(let session):
            broker = .init(connected: true, since: clockMs(), lastError: nil)
            logger.info("connected to broker", metadata: ["broker": "\(configuration.mqtt.host):\(configuration.mqtt.port)"])
            outbox.sessionStarted(session)
            subscribeInbound()
            publishStatus()
            subscribeToFleet()
            perform(fleetConfig.handle(.brokerConnected))
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
            if outbox.acknowledged(ticket) {
                acknowledgedSincePump = true
                if !acknowledgementsMayWait { pumpOutbox() }
            }
        case .message(let message):
            if handleFleetMessage(message) { break }
            receive(message)
        }
        return .running
    }

    /// The outbox is pumped once the current batch of inputs is handled, so a step's messages and
    /// the PUBACKs that came with it share one commit.
    func pumpOutbox() {
        pumpWanted = true
    }

    private func pumpIfWanted() {
        guard pumpWanted else { return }
        pumpWanted = false
        acknowledgedSincePump = false
        outbox.pump(at: clockMs(), sending: !stopping)
    }

    private func publishStatus(online: Bool = true) {
        let depth = online ? upkeep.refreshDepth(unstored: unstoredMessages) : nil
        // The counts as last read (at start and every upkeep tick): no query on the way to the broker.
        let aside = online ? lastAsideCounts : nil
        let status = StatusMessage(
            online: online, unit: configuration.unit.id, status: machine.status, zone: zone, t: clockMs(), outbox: depth, aside: aside)
        do {
            let ticket = try mqtt.publish(
                topic: configuration.unitTopicBase + UnitTopic.status.rawValue,
                payload: Array(JSONEncoder.wire.encode(status)), qos: 1, retain: true)
            if !online { offlineStatusTicket = ticket }
            publishedAside = aside
        } catch {
            logger.debug("status not published now; it is sent on the next connection", metadata: ["error": "\(error)"])
        }
    }

    // MARK: Actions

    /// Performs one step's actions: first everything durable in ONE transaction (snapshot, replies,
    /// events, alarms, rides, fixes), fsync'd when it holds a promise; then what was stored goes to
    /// the broker at once (a driver's reply waits for nothing else), and only then timers, status
    /// and what the driver is told. Returns what the driver was told.
    @discardableResult
    private func perform(_ actions: [UnitAction]) -> [String] {
        var stored = false
        var told: [String] = []
        let messages = outgoingMessages(actions)
        do {
            stored = try storeDurable(actions, messages)
        } catch {
            // The state machine has moved on and keeps working: what it promised waits in memory
            // and is retried (StoreUpkeep); fixes are given up and counted.
            logger.error("cannot store the step; keeping its messages in memory and retrying", metadata: ["actions": "\(actions)", "error": "\(error)"])
            unstoredMessages += messages
            for case .recordFix(_, true) in actions { upkeep.positionLost() }
            if !messages.isEmpty { told.append("NOT STORED YET: the unit cannot write its store (\(error)); retrying") }
        }
        if stored { pumpOutbox() }
        // Only a committed alarm has an id an acknowledgement can name.
        if let id = alarmMessageID {
            alarmMessageID = nil
            if !unstoredMessages.contains(where: { $0.messageClass == .alarm }) { machine.alarmStored(messageID: id) }
        }
        for action in actions {
            switch action {
            case .recordFix(let fix, _):
                lastFix = (fix, .now)
            case .persist, .reply, .event, .sos, .recordRide, .reportStale:
                break
            case .zoneChanged(let change, _):
                logger.info("zone changed", metadata: ["from": "\(change.from ?? "-")", "to": "\(change.to ?? "-")"])
            case .startTimer(let id, let fireAt):
                startTimer(id, fireAt: fireAt)
            case .cancelTimer(let id):
                timers.removeValue(forKey: id)?.task.cancel()
            case .statusChanged:
                publishStatus()
            case .tellDriver(let text):
                logger.info("driver: \(text)")
                told.append(text)
            case .refuse(let refusal):
                logger.info("driver input refused: \(refusal)")
                told.append(refusal.description)
            case .log(let text):
                logger.notice("\(text)")
            }
        }
        return told
    }

    /// The step's replies, events and alarms, ready to be stored.
    private func outgoingMessages(_ actions: [UnitAction]) -> [UnstoredMessage] {
        let unit = configuration.unit.id
        let now = clockMs()
        return actions.compactMap { action in
            switch action {
            case .reply(let reply):
                UnstoredMessage(topic: UnitTopic.jobReply.rawValue, messageClass: .reply, createdAt: now) { seq, id in
                    try Array(JSONEncoder.wire.encode(Envelope(reply, unit: unit, seq: seq, id: id)))
                }
            case .event(let transition):
                UnstoredMessage(topic: UnitTopic.event.rawValue, messageClass: .event, createdAt: now) { seq, id in
                    try Array(JSONEncoder.wire.encode(Envelope(transition, unit: unit, seq: seq, id: id)))
                }
            case .sos(let alarm):
                UnstoredMessage(topic: UnitTopic.sos.rawValue, messageClass: .alarm, createdAt: now) { [weak self] seq, id in
                    self?.alarmMessageID = id
                    return try Array(JSONEncoder.wire.encode(Envelope(alarm, unit: unit, seq: seq, id: id)))
                }
            default:
                nil
            }
        }
    }

    /// Commits the fixes held by the commit window, alone.
    private func commitHeldFixes() {
        guard !commitWindow.held.isEmpty else { return }
        do {
            if try storeDurable([], [], mayHold: false) { pumpOutbox() }
        } catch {
            logger.error("cannot store the fixes held for this commit", metadata: ["error": "\(error)"])
        }
    }

    /// Returns whether anything was queued for the broker. A step that only records fixes may
    /// leave them to the commit window; everything else commits at once, with the held fixes.
    private func storeDurable(_ actions: [UnitAction], _ messages: [UnstoredMessage], mayHold: Bool = true) throws -> Bool {
        let promises = actions.contains {
            switch $0 {
            case .persist, .reply, .event, .sos, .recordRide: true
            default: false
            }
        }
        let fixes = actions.contains {
            switch $0 {
            case .recordFix, .reportStale, .zoneChanged: true
            default: false
            }
        }
        guard promises || fixes || !commitWindow.held.isEmpty else { return false }
        let now = clockMs()
        let instant = ContinuousClock.now
        if mayHold, !promises, commitWindow.holds(at: instant), actions.allSatisfy(Self.mayWaitForCommit) {
            let arrived = actions.compactMap { action -> PositionCommitWindow.HeldFix? in
                guard case .recordFix(let fix, let report) = action else { return nil }
                return .init(fix: fix, report: report, createdAt: now)
            }
            if let closesAt = commitWindow.hold(arrived) { startCommitWindowTimer(closingAt: closesAt) }
            return false
        }
        let held = commitWindow.takeForCommit(at: instant)
        do {
            return try write(actions, messages, held: held, durability: promises ? .full : .normal, now: now)
        } catch {
            for fix in held where fix.report { upkeep.positionLost() }
            throw error
        }
    }

    /// Recording a fix may wait for the commit window; what else a step stores may not.
    private static func mayWaitForCommit(_ action: UnitAction) -> Bool {
        switch action {
        case .persist, .reply, .event, .sos, .recordRide, .reportStale, .zoneChanged: false
        default: true
        }
    }

    private func startCommitWindowTimer(closingAt deadline: ContinuousClock.Instant) {
        inbox.post(.commitWindowClosed, after: deadline - .now)
    }

    /// One transaction: the held fixes first (they came first), then the step's.
    private func write(
        _ actions: [UnitAction], _ messages: [UnstoredMessage], held: [PositionCommitWindow.HeldFix], durability: Durability, now: Int64
    ) throws -> Bool {
        try store.write(durability) { transaction in
            var queued = !messages.isEmpty
            for message in messages { try message.enqueue(in: transaction) }
            for fix in held {
                try transaction.insertPosition(fix.fix, createdAt: fix.createdAt)
                if fix.report {
                    try transaction.queuePosition(fix.fix, createdAt: fix.createdAt)
                    queued = true
                }
            }
            for action in actions {
                switch action {
                case .recordFix(let fix, let report):
                    try transaction.insertPosition(fix, createdAt: now)
                    if report {
                        try transaction.queuePosition(fix, createdAt: now)
                        queued = true
                    }
                case .persist(let snapshot):
                    try transaction.saveValue(snapshot, forKey: Self.snapshotKey)
                case .reportStale(let fix, let ageMs):
                    try transaction.enqueue(topic: UnitTopic.pos.rawValue, messageClass: .position, createdAt: now) { seq, id in
                        try PositionMessage(unit: configuration.unit.id, seq: seq, id: id, points: [PositionPoint(fix, staleAgeMs: ageMs)]).json()
                    }
                    queued = true
                case .recordRide(let ride):
                    let record = try transaction.insertRide(ride)
                    logger.info("ride stored", metadata: ["job": "\(ride.job)", "distance_m": "\(Int(record.distanceM))"])
                default:
                    break
                }
            }
            // The same commit marks what the broker acknowledged and packs what goes next; perform's
            // pumpOutbox hands it over.
            let packed = outbox.pack(in: transaction, at: now)
            return queued || packed
        }
    }

    /// One task per timer; it only posts the id back into the loop, which re-checks it.
    private func startTimer(_ id: TimerID, fireAt: Int64) {
        timers[id]?.task.cancel()
        timerGeneration += 1
        let generation = timerGeneration
        // Capped: a unit clock that steps back (GPS time giving way to a system clock years off)
        // must not push a deadline out of reach; a timer that fires early is re-checked by the machine.
        let delayMs = min(max(0, fireAt.saturatingSubtract(clockMs())), Self.longestTimerMs)
        timers[id] = (inbox.post(.timerFired(id, generation: generation), after: .milliseconds(delayMs)), generation)
    }

    // MARK: Driver

    /// The one entry point for driver inputs: `taxiunitctl press`, the buttons and the terminal.
    /// Returns what the driver was told.
    private func driverInput(_ text: String) -> Result<[String], DriverInput.ParseError> {
        DriverInput.parse(text).map { input in step(.driver(input, at: clockMs())) }
    }

    /// Feeds one event to the state machine, performs its actions and notes what the driver should see.
    @discardableResult
    func step(_ event: UnitEvent) -> [String] {
        let before = machine.state
        let actions = machine.handle(event)
        let told = perform(actions)
        panel.stepped(event, before: before, after: machine.state, actions: actions)
        return told
    }

    /// Hands the terminal a new view when what it shows has changed.
    private func refreshDriverView() {
        guard let terminal = devices?.terminal else { return }
        // The count of waiting messages is shown only offline: no store query while online.
        let waiting = broker.connected ? 0 : ((try? store.outboxDepth().total) ?? 0)
        let fix = machine.lastFix.map(Coordinate.init)
        // Deadlines are on the unit clock, which is GPS time while the system clock is
        // unsynchronised (hours off on a board without a real-time clock); the terminal counts down
        // on the system clock. In steps of 100 ms, so that GPS jitter does not change the view.
        let unitClockAheadMs = clockMs().saturatingSubtract(Self.clockMs()) / 100 * 100
        let view = panel.view(
            state: machine.state, seatsLeft: machine.seatsLeft, zone: zone, online: broker.connected, waiting: waiting,
            unitClockAheadMs: unitClockAheadMs, distance: { place in fix?.distance(to: place.coordinate) })
        guard view != shownView else { return }
        shownView = view
        terminal.show(view)
    }

    // MARK: Control

    private func answer(_ request: ControlRequest) -> ControlResponse {
        switch request.cmd {
        case .status:
            return ControlResponse(ok: true, status: currentStatus())
        case .press:
            switch driverInput(request.input ?? "") {
            case .failure(let problem):
                return .failure(problem.description)
            case .success(let told):
                return ControlResponse(ok: true, message: told.joined(separator: "; "))
            }
        case .outbox:
            return outboxListing(limitPerClass: request.limit ?? 10)
        case .jobs:
            return rideHistory(last: request.limit ?? 20)
        }
    }

    private func outboxListing(limitPerClass: Int) -> ControlResponse {
        do {
            let overview = try store.outboxOverview(limitPerClass: max(0, limitPerClass))
            let inFlight = outbox.inFlightRows
            return ControlResponse(ok: true, outbox: ControlOutboxListing(
                depthByClass: Self.byClassName(overview.depth),
                oldest: overview.oldest.map {
                    ControlOutboxEntry(
                        messageClass: "\($0.messageClass)", topic: $0.topic, id: $0.messageID, createdAt: $0.createdAt,
                        inFlight: inFlight.contains($0.rowID))
                }))
        } catch {
            return .failure("cannot read the outbox: \(error)")
        }
    }

    private func rideHistory(last: Int) -> ControlResponse {
        do {
            let rides = try store.rides().suffix(max(0, last)).reversed().map { ride in
                ControlRide(
                    job: ride.job, passengers: ride.passengers, pickupTime: ride.pickupTime, dropTime: ride.dropTime,
                    pickupPosition: ride.pickupPosition.map { .init(lat: $0.lat, lon: $0.lon) },
                    dropPosition: ride.dropPosition.map { .init(lat: $0.lat, lon: $0.lon) }, distanceM: ride.distanceM)
            }
            return ControlResponse(ok: true, rides: rides)
        } catch {
            return .failure("cannot read the ride history: \(error)")
        }
    }

    /// Every class named, zero included, so scripts need not guess.
    private static func byClassName(_ depth: [MessageClass: Int]) -> [String: Int] {
        Dictionary(uniqueKeysWithValues: MessageClass.allCases.map { ("\($0)", depth[$0] ?? 0) })
    }

    func currentStatus() -> ControlStatus {
        let depth = upkeep.refreshDepth(unstored: unstoredMessages)
        let stored = (try? store.positionCount()) ?? -1
        let age = lastFix.map { (ContinuousClock.now - $0.receivedAt) / .seconds(1) }
        let status = machine.status
        return ControlStatus(
            unit: configuration.unit.id,
            state: status.state.rawValue,
            gps: .init(connected: gpsConnected, lastFixAgeS: age, lastFixTime: lastFix?.fix.time),
            broker: broker,
            outbox: .init(
                depth: depth.total, inFlight: outbox.inFlight, alarm: depth.alarm, reply: depth.reply, event: depth.event,
                position: depth.position, positionsThinned: depth.thinned, positionsDropped: depth.dropped),
            storedPositions: stored,
            pauseReason: status.pauseReason?.rawValue,
            job: jobStatus(),
            seatsLeft: status.seatsLeft,
            sosPending: machine.snapshot.panic != nil,
            config: fleetConfigStatus,
            clock: machine.positions.clock.reading(at: clockSample()).source.rawValue,
            zone: zone,
            aside: asideCounts(),
            refused: [
                "fixes_out_of_range": machine.positions.fixesOutOfRange, "inbound_over_rate": inboundFlow.droppedSinceStart,
                "inbox_full": inbox.droppedInputs,
            ]
        )
    }

    /// Kind → entries set aside; the last known counts if the store cannot be read.
    private func asideCounts() -> [String: Int] {
        if let counts = try? store.asideCounts() { lastAsideCounts = Dictionary(uniqueKeysWithValues: counts.map { ($0.key.rawValue, $0.value) }) }
        return lastAsideCounts
    }

    /// The countdowns the terminal shows: time left to answer an offer, time to a reservation.
    private func jobStatus() -> ControlStatus.Job? {
        guard let job = machine.state.job else { return nil }
        let now = clockMs()
        func secondsUntil(_ time: Int64) -> Int { Int(clamping: max(0, time.saturatingSubtract(now)) / 1000) }
        var offerSecondsLeft: Int?
        if case .offered(let offer) = machine.state { offerSecondsLeft = secondsUntil(offer.deadline) }
        return ControlStatus.Job(
            id: job.id, pickup: job.pickup.address ?? "\(job.pickup.lat), \(job.pickup.lon)", passengers: job.passengers,
            offerSecondsLeft: offerSecondsLeft, meetingTime: job.meetingTime, meetingInS: job.meetingTime.map(secondsUntil),
            shared: job.shared, note: job.note)
    }

    // MARK: Shutdown

    private func beginShutdown() -> LoopOutcome {
        stopping = true
        logger.info("shutting down")
        // A clean stop is no crash.
        CrashLoopBreaker.settled(store: store, logger: logger)
        commitHeldFixes()
        pumpOutbox()
        guard broker.connected else { return .finished }
        publishStatus(online: false)
        guard offlineStatusTicket != nil else { return .finished }
        inbox.post(.shutdownDeadline, after: .seconds(Self.shutdownGraceS))
        return .running
    }

    /// The unit's clock for messages, ms since the Unix epoch.
    private func clockSample() -> ClockSample {
        if let batchClock { return batchClock }
        let sample = SystemClock.sample(trustSystem: configuration.gps.trustSystemClock)
        batchClock = sample
        return sample
    }

    /// The clocks as they were when an input arrived (monotonic `arrivedAtS`): a fix may have
    /// waited in the inbox for its batch, and the unit clock follows GPS time from its arrival.
    private func clockSample(arrivedAtS: Double) -> ClockSample {
        var sample = clockSample()
        let waitedS = max(0, sample.monotonicS - arrivedAtS)
        sample.systemS -= waitedS
        sample.monotonicS -= waitedS
        return sample
    }

    /// The unit clock (system time when synchronised, else GPS time), ms.
    func clockMs() -> Int64 { machine.positions.clock.reading(at: clockSample()).milliseconds }

    static func clockMs() -> Int64 {
        Int64(Date().timeIntervalSince1970 * 1000)
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
