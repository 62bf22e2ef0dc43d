import ControlSocket
import DriverDevices
import DriverDisplay
import FleetControl
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import GPSReader
import LocalCache
import Logging
import MQTTLink
import Platform
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
    /// Time to publish the telemetry (`[telemetry] interval_s`).
    case telemetryDue
    /// `[mqtt] max_publish_rate` lets the outbox send again.
    case outboxDue
}

/// The imperative shell's loop: takes the inputs from gpsd, the broker, the driver, the control
/// socket and its timers one batch at a time, feeds them to `UnitStateMachine`, and has
/// `StepPerformer` perform each step. Its collaborators each have one job: `StepPerformer` (the
/// step's effects, in order), `OutboxPump` (what goes to the broker next), `ControlDesk` (the
/// control socket's answers), `EngineClock` (the clocks), and the fleet documents
/// (UnitEngine+Fleet.swift). The broker and gpsd are behind `BrokerPort` and `FixSource`.
public final class UnitEngine: Service, @unchecked Sendable {
    let store: LocalCache
    let mqtt: any BrokerPort
    let logger: Logger
    let inbox = EngineInbox<EngineInput>()
    /// Inbound MQTT messages admitted per second, with a burst (docs/protocol.md, "Limits").
    let inboundFlow: InboundFlow

    /// The open job a broken crash loop set aside with the snapshot: told dropped once running.
    private let droppedJob: CrashLoopBreaker.DroppedJob?
    /// Inbound messages the unit died handling (PoisonGuard.swift).
    let poisonGuard: PoisonGuard

    // Owned by the `run()` loop only.
    /// The local file with the fleet's documents laid over it (UnitEngine+Fleet.swift).
    var configuration: UnitConfiguration
    var machine: UnitStateMachine
    let performer: StepPerformer
    var clock: EngineClock
    private let control: ControlDesk
    var gpsConnected = false
    var lastFix: (fix: Fix, receivedAt: ContinuousClock.Instant)?
    var positionFeeds = PositionFeeds()
    var broker = ControlStatus.Broker(connected: false, since: nil, lastError: nil) {
        // Monotonic, for `health`: only a change of state moves it.
        didSet { if broker.connected { brokerDownSince = nil } else if oldValue.connected { brokerDownSince = .now } }
    }
    /// When the link went down; the start until it first comes up.
    private var brokerDownSince: ContinuousClock.Instant? = .now
    let startedAt = ContinuousClock.now
    let options: EngineOptions
    var metrics: UnitMetrics
    var fleetConfig: FleetConfigMachine
    var fleetCommands: CommandGate
    var rollbackTimer: Task<Void, Never>?
    /// Which broker connection is current; events from replaced ones are dropped.
    var linkGeneration = 0
    private var offlineStatusTicket: MQTTPublishTicket?
    private var lastAsideCounts: [String: Int] = [:]
    /// What the last retained status said was set aside.
    private var publishedAside: [String: Int]?
    private var stopping = false
    let devices: DriverDeviceSet?
    var panel = DriverPanel()
    /// Who drives (UnitEngine+Driver.swift), restored from its own table.
    var session: DriverSession
    /// The id and PIN being typed on the terminal, while it asks for them.
    var loginEntry: LoginEntry?
    private var shownView: DriverView?

    var outbox: OutboxPump { performer.outbox }
    /// The zone the taxi is in, from the state machine's zone tracker.
    private var zone: String? { machine.positions.zones.current }

    static let snapshotKey = "unit_snapshot"
    /// How long shutdown waits for the broker to acknowledge the offline status.
    static let shutdownGraceS = 2.0

    /// `local` is the validated local file; fleet documents stored in `store` are laid over it.
    /// `devices`: the driver's buttons and terminal; their presses come in, the terminal is shown
    /// every new `DriverView`.
    public convenience init(
        local: ConfigValue, store: LocalCache, mqtt: BrokerLink, gpsd: GPSDConnection, logger: Logger, devices: DriverDeviceSet? = nil,
        options: EngineOptions = EngineOptions()
    ) throws {
        try self.init(local: local, store: store, broker: mqtt, fixes: gpsd, logger: logger, devices: devices, options: options)
    }

    init(
        local: ConfigValue, store: LocalCache, broker mqtt: any BrokerPort, fixes gpsd: any FixSource, logger: Logger,
        devices: DriverDeviceSet? = nil, options: EngineOptions = EngineOptions()
    ) throws {
        let startedAt = EngineClock.systemMs()
        poisonGuard = PoisonGuard(store: store, at: startedAt, logger: logger)
        droppedJob = CrashLoopBreaker.started(store: store, at: startedAt, logger: logger, poison: poisonGuard)
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
        self.logger = logger
        mqtt.restoreConnectionCounter(from: store, logger: logger)
        self.devices = devices
        clock = EngineClock(trustSystemClock: configuration.gps.trustSystemClock)
        control = ControlDesk(store: store, logLevel: options.logLevel, logger: logger)
        self.options = options
        let metrics = UnitMetrics(factory: options.telemetry)
        self.metrics = metrics
        let snapshot = try Self.restoring("state snapshot", store: store, logger: logger, fallback: UnitSnapshot()) {
            try store.loadValue(UnitSnapshot.self, forKey: Self.snapshotKey) ?? UnitSnapshot()
        } setAside: { reason in
            try store.setAsideValue(forKey: Self.snapshotKey, kind: .snapshot, reason: reason, at: startedAt)
        }
        let serial = configuration.input.serial
        let messageSettings = DriverMessageSettings(
            capacity: configuration.messages.keep, canned: configuration.messages.canned, pageColumns: serial?.columns ?? 20,
            pageRows: max(1, (serial?.rows ?? 4) - 2))
        var keptMessages: [InboxMessage] = []
        do {
            keptMessages = try store.driverMessages(limit: messageSettings.capacity, at: startedAt)
        } catch {
            logger.error("cannot read the driver's kept messages; starting without", metadata: ["error": "\(error)"])
        }
        machine = UnitStateMachine(
            restoring: snapshot, settings: configuration.unitSettings, lastFix: (try? store.lastPosition()) ?? nil,
            messages: DriverMessages(restoring: keptMessages, settings: messageSettings))
        session = Self.restoringSession(store: store, configuration: configuration, logger: logger)
        machine.driverLoggedIn = session.driver != nil
        let outbox = OutboxPump(
            store: store, unit: configuration.unit.id, topicBase: configuration.unitTopicBase,
            maxInFlight: configuration.mqtt.maxInflight, batchMax: configuration.mqtt.batchMax, logger: logger,
            allowance: { [mqtt] in mqtt.publishAllowance() }, wake: { [inbox] wait in inbox.post(.outboxDue, after: wait) }
        ) { [mqtt] topic, message throws(MQTTLinkError) in
            let ticket = try mqtt.publish(topic: topic, payload: message.payload, qos: message.qos, retain: false)
            metrics.messagesPublished.increment()
            return ticket
        }
        performer = StepPerformer(
            store: store, outbox: outbox, timers: EngineTimers { [inbox] id, generation, delay in inbox.post(.timerFired(id, generation: generation), after: delay) },
            commitWindow: PositionCommitWindow(window: .milliseconds(configuration.store.positionCommitMs)),
            upkeep: StoreUpkeep(store: store, settings: configuration.store, logger: logger), unit: configuration.unit.id, logger: logger
        ) { [inbox] closesIn in inbox.post(.commitWindowClosed, after: closesIn) }
        performer.driver = session.driver
        gpsd.deliverEvents { [inbox] event in
            let isSample = if case .sample = event { true } else { false }
            inbox.post(.gps(event, arrivedAtS: Monotonic.seconds()), mayWait: isSample ? .fix : [], droppable: isSample)
        }
        mqtt.deliverEvents { [inbox, inboundFlow] linked in
            switch linked.event {
            case .published:
                inbox.post(.mqtt(linked), mayWait: .acknowledgement)
            case .message(let message):
                Self.admit(linked, topic: message.topic, retained: message.retained, flow: inboundFlow, inbox: inbox)
            case .oversized(let topic, _, let retained):
                Self.admit(linked, topic: topic, retained: retained, flow: inboundFlow, inbox: inbox)
            case .connected, .connectFailed, .disconnected, .refused:
                inbox.post(.mqtt(linked))
            }
        }
    }

    /// A flood is dropped here, on the broker's thread, before it queues up or is parsed. A retained
    /// document comes once per connection: never dropped for a full inbox either.
    private static func admit(_ linked: BrokerLink.Event, topic: String, retained: Bool, flow: InboundFlow, inbox: EngineInbox<EngineInput>) {
        guard flow.admit(topic: topic, retained: retained) else { return }
        inbox.post(.mqtt(linked), droppable: !retained)
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
        applyDriverPreferences()
        step(.resumed(at: clockMs()))
        if let dropped = droppedJob { step(.jobDropped(job: dropped.job, state: dropped.state, at: clockMs())) }
        // Answered unhandled where there is someone to answer.
        if let poison = poisonGuard.setAsideAtStart { refusePoison(topic: poison.topic) }
        _ = outbox.batchHandled(at: clockMs())
        refreshDriverView()
        await withGracefulShutdownHandler {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { [inbox] in
                    while (try? await Task.sleep(for: StoreUpkeep.interval)) != nil { inbox.post(.maintenance) }
                }
                inbox.post(.startSettled, after: CrashLoopBreaker.settledAfter)
                // Read once: the section is local only, a fleet document cannot change it.
                if options.telemetry != nil, configuration.telemetry.intervalS > 0 {
                    let interval = Duration.milliseconds(Int64(millisecondsOf: configuration.telemetry.intervalS) ?? EngineTimers.longestMs)
                    group.addTask { [inbox] in
                        while (try? await Task.sleep(for: interval)) != nil { inbox.post(.telemetryDue) }
                    }
                }
                for presses in devices?.presses ?? [] {
                    group.addTask { [inbox] in
                        for await press in presses { inbox.post(.driver(press)) }
                    }
                }
                // Inputs that arrived together (a fix and the PUBACKs of earlier ones) are handled
                // together: one outbox pump, one look at the driver's screen.
                loop: while let batch = await inbox.next() {
                    clock.newBatch()
                    var outcome = LoopOutcome.running
                    for input in batch where outcome == .running {
                        outcome = handle(input)
                    }
                    // A PUBACK only frees a slot in flight: while the pump has free slots and
                    // nothing to fill them with, it neither wakes the loop nor commits on its own;
                    // the next pump (the next fix, the upkeep tick) marks it. Shutdown waits for one.
                    var deferred: InputDeferral = outbox.batchHandled(at: clockMs()) ? .acknowledgement : []
                    // While fixes wait for the commit window, its timer wakes the loop: the fixes
                    // that come meanwhile wait with them, and are handled in one batch.
                    if !performer.commitWindow.held.isEmpty { deferred.insert(.fix) }
                    inbox.deferred = deferred
                    refreshDriverView()
                    if outcome == .finished { break loop }
                }
                performer.commitHeldFixes(now: clockMs())
                performer.timers.cancelAll()
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
            outbox.settle(at: clockMs())
            reply.resume(returning: control.answer(
                request, status: currentStatus, press: { DriverCommand.parse($0).map(self.driverInput) }, inFlight: outbox.inFlightRows, configLayers: { fleetConfigLayers }))
        case .healthProbe(let probe):
            probe.answer(EngineHealth(state: machine.status.state.rawValue, online: broker.connected, queued: (try? outbox.depth().total) ?? -1))
        case .driver(let press):
            // A login being typed takes the terminal's keys; other keys only mean something mapped.
            if typeLogin(press) { return .running }
            if let command = press.command { driverInput(command) }
        case .timerFired(let id, let generation):
            if performer.timers.fired(id, generation: generation) { step(.timerFired(id, at: clockMs())) }
        case .maintenance:
            // A healthy loop comes round every second; connecting may block for a while.
            mqtt.restartLoopIfSilent(longerThan: .seconds(max(60, 3 * configuration.mqtt.keepaliveS)))
            // Retention ages rows by the unit clock: only a synchronised system clock is trusted for
            // that, never GPS time that may have jumped ahead.
            let reading = machine.positions.clock.reading(at: clock.sample())
            if performer.maintain(now: reading.milliseconds, retentionClockTrusted: reading.source == .system) {
                publishStatus()
            }
            if performer.inboxUnstored {
                do {
                    try store.replaceDriverMessages(machine.driverMessages.inbox)
                    performer.inboxUnstored = false
                    logger.notice("the driver's messages are stored again", metadata: ["count": "\(machine.driverMessages.inbox.count)"])
                } catch {
                    logger.error("cannot store the driver's messages; retrying", metadata: ["error": "\(error)"])
                }
            }
            // Something set aside while running (an unreadable outbox row) is reported like one at start.
            if broker.connected, asideCounts() != publishedAside { publishStatus() }
            let dropped = inboundFlow.takeDropped()
            if dropped > 0 { logger.warning("inbound messages over the rate limit dropped", metadata: ["count": "\(dropped)"]) }
            outbox.want()
        case .shutdownRequested:
            return beginShutdown()
        case .shutdownDeadline:
            logger.warning("broker did not acknowledge the offline status in time; stopping anyway")
            return .finished
        case .fleetRollbackDue:
            // Switching brokers now would lose the offline status' acknowledgement; the trial resumes at the next start.
            if !stopping { perform(fleetConfig.handle(.rollbackDue(lastError: broker.lastError))) }
        case .commitWindowClosed:
            if performer.commitWindow.isDue(at: .now) { performer.commitHeldFixes(now: clockMs()) }
        case .startSettled:
            CrashLoopBreaker.settled(store: store, logger: logger)
        case .telemetryDue:
            publishTelemetry()
        case .outboxDue:
            outbox.rateWaitOver()
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
            performer.commitHeldFixes(now: clockMs())
        case .sample(let sample):
            metrics.fixesReceived.increment()
            step(.gps(sample, at: clock.sample(arrivedAtS: arrivedAtS)))
        }
    }

    // MARK: MQTT

    private func handleMQTT(_ event: MQTTEvent) -> LoopOutcome {
        switch event {
        case .connected(let session):
            mqtt.reserveConnectionNumbers(in: store, logger: logger)
            broker = .init(connected: true, since: clockMs(), lastError: nil)
            metrics.brokerConnects.increment()
            logger.info("connected to broker", metadata: ["broker": "\(brokerInUse)"])
            outbox.sessionStarted(session)
            subscribeInbound()
            publishStatus()
            publishLastPositionOnConnect()
            subscribeToFleet()
            outbox.want()
        case .connectFailed(let reason):
            mqtt.reserveConnectionNumbers(in: store, logger: logger)
            if broker.lastError != reason { logger.warning("cannot connect to broker", metadata: ["reason": "\(reason)"]) }
            broker.lastError = reason
        case .disconnected(_, let reason):
            broker = .init(connected: false, since: clockMs(), lastError: reason)
            metrics.brokerDisconnects.increment()
            logger.warning("broker connection lost; messages wait in the store", metadata: ["reason": "\(reason)"])
            outbox.sessionEnded()
        case .published(let ticket):
            if ticket == offlineStatusTicket { return .finished }
            if outbox.acknowledged(ticket) { metrics.messagesAcknowledged.increment() }
        case .refused(let ticket, let reasonCode):
            // Counted whatever was refused; an outbox row is kept and sent again, a status waits for the next one.
            metrics.messagesRefused.increment()
            if ticket == offlineStatusTicket { return .finished }
            outbox.refused(ticket, reasonCode: reasonCode, at: clockMs())
        case .message(let message):
            if poisonGuard.isPoison(message) {
                refusePoison(topic: message.topic)
                break
            }
            poisonGuard.handling(message)
            if !handleFleetMessage(message) { receive(message) }
            poisonGuard.handled()
        case .oversized(let topic, let bytes, _):
            if refuseFleetMessage(topic: topic, FleetMessage.tooLarge(bytes: bytes)) { break }
            refuseInbound(topic: topic, why: "oversized, \(bytes) bytes") { .tooLarge($0, bytes: bytes) }
        }
        return .running
    }

    private func refusePoison(topic: String) {
        if refuseFleetMessage(topic: topic, FleetMessage.poisoned) { return }
        refuseInbound(topic: topic, why: "poison", InboundProblem.poisoned)
    }

    /// The retained status. Published after a step's messages were handed to the broker: its
    /// outbox count is a store query that a driver's reply must not wait for.
    func publishStatus(online: Bool = true) {
        // Once the offline status is out, an online one (a fix's or a press's step while the
        // broker's acknowledgement is awaited) would replace the retained status of a unit that is
        // gone, and the clean disconnect sends no will to correct it.
        guard !(stopping && online) else { return }
        let depth = online ? performer.upkeep.refreshDepth(outbox.depth) : nil
        // The counts as last read (at start and every upkeep tick): no query on the way to the broker.
        let aside = online ? lastAsideCounts : nil
        var status = StatusMessage(
            online: online, unit: configuration.unit.id, status: machine.status, zone: zone, t: clockMs(), outbox: depth, aside: aside,
            driver: online ? session.driver : nil)
        if online { addBirthFacts(to: &status) }
        status.conn = mqtt.connectionNumber
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

    // MARK: Driver

    /// The one entry point for driver inputs: `taxiunitctl press`, the buttons and the terminal.
    /// Returns what the driver was told.
    private func driverInput(_ command: DriverCommand) -> DriverAnswer {
        switch command.action {
        case .session(let input):
            return handleSession(input)
        case .job(let input):
            let performed = step(.driver(input, at: clockMs()))
            // The terminal shows nothing of an SOS; whoever pressed it here is told it is stored.
            let stored = input == .sos ? performed.storedAlarmID.map { ["SOS alarm \($0) stored; it goes to the dispatcher before anything else"] } ?? [] : []
            return DriverAnswer(told: performed.told + stored, refused: performed.refused)
        }
    }

    /// Feeds one event to the state machine, performs its step and notes what the driver should see.
    @discardableResult
    func step(_ event: UnitEvent) -> StepPerformer.Performed {
        let before = machine.state
        let step = machine.handle(event)
        let performed = performer.perform(step, now: clockMs()) { publishStatus() }
        if let id = performed.storedAlarmID { machine.alarmStored(messageID: id) }
        if let recorded = step.fixes.last { lastFix = (recorded.fix, .now) }
        publishPositionFeeds(step.fixes)
        panel.stepped(event, before: before, after: machine.state, step: step, seatsLeft: machine.seatsLeft, stored: !performed.unstored)
        return performed
    }

    /// Hands the terminal a new view when what it shows has changed.
    private func refreshDriverView() {
        guard let terminal = devices?.terminal else { return }
        // The count of waiting messages is shown only offline: no store query while online.
        let waiting = broker.connected ? 0 : ((try? outbox.depth().total) ?? 0)
        let fix = machine.lastFix.map(Coordinate.init)
        // Deadlines are on the unit clock, which is GPS time while the system clock is
        // unsynchronised (hours off on a board without a real-time clock); the terminal counts down
        // on the system clock. In steps of 100 ms, so that GPS jitter does not change the view.
        let unitClockAheadMs = clockMs().saturatingSubtract(EngineClock.systemMs()) / 100 * 100
        var view = panel.view(
            state: machine.state, seatsLeft: machine.seatsLeft, zone: zone, online: broker.connected, waiting: waiting,
            unitClockAheadMs: unitClockAheadMs, login: machine.state.name == .offDuty ? loginEntry : nil, distance: { place in fix?.distance(to: place.coordinate) })
        view.inbox = DriverView.Inbox(machine.driverMessages)
        view.driver = session.driver
        view.queue = machine.driverMessages.queuePosition(now: clockMs())
        guard view != shownView else { return }
        shownView = view
        terminal.show(view)
    }

    // MARK: Status

    func currentStatus() -> ControlStatus {
        let depth = performer.upkeep.refreshDepth(outbox.depth)
        let stored = (try? store.positionCount()) ?? -1
        let age = lastFix.map { (ContinuousClock.now - $0.receivedAt) / .seconds(1) }
        let status = machine.status
        return ControlStatus(
            unit: configuration.unit.id,
            state: status.state.rawValue,
            gps: .init(connected: gpsConnected, lastFixAgeS: age, lastFixTime: lastFix?.fix.time),
            broker: ControlStatus.Broker(
                connected: broker.connected, since: broker.since, lastError: broker.lastError,
                downForS: brokerDownSince.map { (ContinuousClock.now - $0) / .seconds(1) }),
            outbox: .init(
                depth: depth.total, inFlight: outbox.inFlight, alarm: depth.alarm, reply: depth.reply, event: depth.event,
                position: depth.position, positionsThinned: depth.thinned, positionsDropped: depth.dropped),
            storedPositions: stored,
            pauseReason: status.pauseReason?.rawValue,
            job: ControlDesk.jobStatus(machine.state, now: clockMs()),
            seatsLeft: status.seatsLeft,
            sosPending: machine.snapshot.panic != nil,
            config: fleetConfigStatus,
            clock: machine.positions.clock.reading(at: clock.sample()).source.rawValue,
            zone: zone,
            aside: asideCounts(),
            refused: [
                "fixes_out_of_range": machine.positions.fixesOutOfRange, "inbound_over_rate": inboundFlow.droppedSinceStart,
                "inbox_full": inbox.droppedInputs,
            ],
            runningForS: (ContinuousClock.now - startedAt) / .seconds(1),
            volatileStore: options.volatileStore,
            store: performer.upkeep.diskStatus
        )
    }

    /// Kind → entries set aside; the last known counts if the store cannot be read.
    func asideCounts() -> [String: Int] {
        if let counts = try? store.asideCounts() { lastAsideCounts = Dictionary(uniqueKeysWithValues: counts.map { ($0.key.rawValue, $0.value) }) }
        return lastAsideCounts
    }

    // MARK: Shutdown

    private func beginShutdown() -> LoopOutcome {
        stopping = true
        logger.info("shutting down")
        // A clean stop is no crash.
        CrashLoopBreaker.settled(store: store, logger: logger)
        outbox.sending = false
        performer.commitHeldFixes(now: clockMs())
        outbox.want()
        guard broker.connected else { return .finished }
        publishStatus(online: false)
        guard offlineStatusTicket != nil else { return .finished }
        inbox.post(.shutdownDeadline, after: .seconds(Self.shutdownGraceS))
        return .running
    }

    /// The unit clock (system time when synchronised, else GPS time), ms.
    func clockMs() -> Int64 { machine.positions.clock.reading(at: clock.sample()).milliseconds }
}
