import ControlSocket
import DriverDevices
import DriverDisplay
import DriverKeys
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
import TaxiProtocol
import UnitConfig
import UnitCoordination
import UnitCore

/// The imperative shell's loop, owned by `UnitEngine.run()`: takes the inputs from gpsd, the
/// broker, the driver, the control socket and its timers one batch at a time, has the core
/// (`UnitCoordinator`) decide one `UnitStep` per input, and `StepPerformer` perform it. What it
/// keeps itself is what only the shell knows: connections, clocks, the screen.
final class EngineLoop {
    let store: LocalCache
    let mqtt: any BrokerPort
    let logger: Logger
    let inbox: EngineInbox<EngineInput>
    /// Inbound MQTT messages admitted per second, with a burst (docs/protocol.md, "Limits").
    let inboundFlow: InboundFlow
    /// The open job a broken crash loop set aside with the snapshot: told dropped once running.
    private let droppedJob: CrashLoopBreaker.DroppedJob?
    /// Inbound messages the unit died handling (PoisonGuard.swift).
    private let poisonGuard: PoisonGuard

    /// Every decision: the job machine, the driver session, the fleet's documents and commands.
    private(set) var core: UnitCoordinator
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
    var brokerDownSince: ContinuousClock.Instant? = .now
    let startedAt = ContinuousClock.now
    let options: EngineOptions
    var metrics: UnitMetrics
    /// Which broker connection is current; events from replaced ones are dropped.
    private var linkGeneration = 0
    private var offlineStatusTicket: MQTTPublishTicket?
    private var lastAsideCounts: [String: Int] = [:]
    /// What the last retained status said was set aside.
    private var publishedAside: [String: Int]?
    private var stopping = false
    /// Zones whose broadcast topic the unit left while the broker was away (at the start: every
    /// zone): unsubscribed at the next connection, as the persistent session may still hold them.
    var broadcastZonesToLeave: Set<String> = []
    let devices: DriverDeviceSet?
    private var panel = DriverPanel()
    /// The open shift's rides for the history pages.
    private var shiftHistory: ShiftHistory
    private var shownView: DriverView?
    /// The catalogues in `[unit] catalogues` that load (a local setting: read once).
    private let installedLanguages: [String]

    /// The configuration in force: the local file with the fleet's documents laid over it.
    var configuration: UnitConfiguration { core.configuration }
    /// The zone the taxi is in, from the core's zone tracker.
    var zone: String? { core.machine.positions.zones.current }

    static let snapshotKey = "unit_snapshot"
    /// How long shutdown waits for the broker to acknowledge the offline status.
    static let shutdownGraceS = 2.0

    init(
        local: ConfigValue, store: LocalCache, broker mqtt: any BrokerPort, fixes gpsd: any FixSource, logger: Logger, devices: DriverDeviceSet?,
        options: EngineOptions, inbox: EngineInbox<EngineInput>
    ) throws {
        let startedAt = EngineClock.systemTime()
        self.inbox = inbox
        poisonGuard = PoisonGuard(store: store, at: startedAt, logger: logger)
        droppedJob = CrashLoopBreaker.started(store: store, at: startedAt, logger: logger, poison: poisonGuard)
        // Whatever is loaded here and fails is set aside rather than failing every start.
        let fleetConfig = try Self.restoring("fleet configuration documents", store: store, logger: logger, fallback: FleetConfigMachine(local: local, restoring: [:])) {
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
        let commands = try Self.restoring("executed commands", store: store, logger: logger, fallback: CommandGate(trust: trust, executed: [:])) {
            CommandGate(trust: trust, executed: try store.executedCommands(now: startedAt))
        } setAside: { reason in
            try store.setAsideExecutedCommands(reason: reason, at: startedAt)
        }
        let configuration = fleetConfig.configuration
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
        let machine = UnitStateMachine(
            restoring: snapshot, settings: configuration.unitSettings, lastFix: (try? store.lastPosition()) ?? nil,
            messages: DriverMessages(restoring: keptMessages, settings: messageSettings))
        let session = Self.restoringSession(store: store, configuration: configuration, logger: logger)
        core = UnitCoordinator(machine: machine, session: session, fleetConfig: fleetConfig, commands: commands)
        shiftHistory = Self.restoringShiftHistory(shift: machine.shift, store: store, logger: logger)
        // The session may hold the zone the taxi was in before the restart; it starts in none.
        broadcastZonesToLeave = Set(machine.positions.zones.zones.map(\.id).filter(ContractTopic.isBroadcastZone))
        installedLanguages = Self.installedLanguages(in: configuration.unit.catalogues)
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
            upkeep: StoreUpkeep(store: store, settings: configuration.store, logger: logger), unit: configuration.unit.id,
            driver: session.driver, logger: logger,
            closeCommitWindow: { [inbox] closesIn in inbox.post(.commitWindowClosed, after: closesIn) },
            startRollbackTimer: { [inbox] after in inbox.post(.fleetRollbackDue, after: after) })
        gpsd.deliverEvents { [inbox] event in
            let isSample = if case .sample = event { true } else { false }
            inbox.post(.gps(event, arrivedAt: Monotonic.elapsed), mayWait: isSample ? .fix : [], droppable: isSample)
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

    /// The open shift's rides, read once: afterwards the steps that end rides keep them.
    static func restoringShiftHistory(shift: Shift?, store: LocalCache, logger: Logger) -> ShiftHistory {
        guard let shift else { return ShiftHistory(shift: nil, rides: []) }
        do {
            return ShiftHistory(shift: shift, rides: try store.rides(endedSince: shift.startedAt))
        } catch {
            // The history pages are the driver's overview, not a record: they start empty.
            logger.error("cannot read the shift's rides; the history starts empty", metadata: ["error": "\(error)"])
            return ShiftHistory(shift: shift, rides: [])
        }
    }

    static func restoringSession(store: LocalCache, configuration: UnitConfiguration, logger: Logger) -> DriverSession {
        do {
            return DriverSession(restoring: try store.driverSession(), lockout: configuration.driver.lockout)
        } catch {
            // Nobody logged in is the safe reading: the driver logs in again.
            logger.error("cannot read the driver session; nobody is logged in", metadata: ["error": "\(error)"])
            return DriverSession(lockout: configuration.driver.lockout)
        }
    }

    func run() async {
        _ = asideCounts()
        for problem in core.fleetConfig.restoreProblems { logger.error("\(problem)") }
        linkGeneration = mqtt.connect(configuration)
        // The fleet's config in force may have set another language than the local file.
        applyDriverPreferences()
        // Re-arm the restored offer's deadline (or answer `timeout` if it passed while we were
        // down) and a rollback trial cut short by a restart.
        let now = clockNow()
        perform(core.start(at: now), for: .job(.resumed(at: now)), before: core.machine.state)
        if let dropped = droppedJob { step(.job(.jobDropped(job: dropped.job, state: dropped.state, at: clockNow()))) }
        // Answered unhandled where there is someone to answer.
        if let poison = poisonGuard.setAsideAtStart { refusePoison(topic: poison.topic) }
        _ = performer.batchHandled(at: clockNow())
        refreshDriverView()
        await withGracefulShutdownHandler {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { [inbox] in
                    while (try? await Task.sleep(for: StoreUpkeep.interval)) != nil { inbox.post(.maintenance) }
                }
                inbox.post(.startSettled, after: CrashLoopBreaker.settledAfter)
                // Read once: the section is local only, a fleet document cannot change it.
                if options.telemetry != nil, configuration.telemetry.intervalS > 0 {
                    let interval = Duration.checkedSeconds(configuration.telemetry.intervalS)
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
                    inbox.deferred = performer.batchHandled(at: clockNow())
                    refreshDriverView()
                    if outcome == .finished { break loop }
                }
                performer.finish(now: clockNow())
                group.cancelAll()
            }
        } onGracefulShutdown: { [inbox] in
            inbox.post(.shutdownRequested)
        }
    }

    private enum LoopOutcome { case running, finished }

    private func handle(_ input: EngineInput) -> LoopOutcome {
        switch input {
        case .gps(let event, let arrivedAt):
            handleGPS(event, arrivedAt: arrivedAt)
        case .mqtt(let linked):
            guard linked.generation == linkGeneration else { return .running }
            return handleMQTT(linked.event)
        case .control(let request, let reply):
            // What was acknowledged is marked before the answer reads the store.
            performer.settle(at: clockNow())
            reply.resume(returning: control.answer(
                request, status: currentStatus, press: { DriverCommand.parse($0).map { self.driverCommand($0, key: nil) } },
                inFlight: performer.inFlightRows, configLayers: { fleetConfigLayers }))
        case .healthProbe(let probe):
            probe.answer(EngineHealth(state: core.machine.status.state.rawValue, online: broker.connected, queued: (try? performer.depthNow().total) ?? -1))
        case .driver(let press):
            driverPressed(press)
        case .timerFired(let id, let generation):
            if performer.timerFired(id, generation: generation) { step(.job(.timerFired(id, at: clockNow()))) }
        case .maintenance:
            // A healthy loop comes round every second; connecting may block for a while.
            mqtt.restartLoopIfSilent(longerThan: .seconds(max(60, 3 * configuration.mqtt.keepaliveS)))
            // Retention ages rows by the unit clock: only a synchronised system clock is trusted for
            // that, never GPS time that may have jumped ahead.
            let reading = core.machine.positions.clock.reading(at: clock.sample())
            if performer.maintain(now: reading.time, retentionClockTrusted: reading.source == .system, inbox: core.machine.driverMessages.inbox) {
                publishStatus()
            }
            // Something set aside while running (an unreadable outbox row) is reported like one at start.
            if broker.connected, asideCounts() != publishedAside { publishStatus() }
            let dropped = inboundFlow.takeDropped()
            if dropped > 0 { logger.warning("inbound messages over the rate limit dropped", metadata: ["count": "\(dropped)"]) }
            performer.want()
        case .shutdownRequested:
            return beginShutdown()
        case .shutdownDeadline:
            logger.warning("broker did not acknowledge the offline status in time; stopping anyway")
            return .finished
        case .fleetRollbackDue:
            // Switching brokers now would lose the offline status' acknowledgement; the trial resumes at the next start.
            if !stopping { step(.fleetConfig(.rollbackDue(lastError: broker.lastError))) }
        case .commitWindowClosed:
            performer.commitWindowClosed(now: clockNow())
        case .startSettled:
            CrashLoopBreaker.settled(store: store, logger: logger)
        case .telemetryDue:
            publishTelemetry()
        case .outboxDue:
            performer.rateWaitOver()
        }
        return .running
    }

    // MARK: One step per input

    /// Has the core decide `input`, performs the step, and notes what the driver should see.
    @discardableResult
    func step(_ input: UnitInput) -> StepPerformer.Performed {
        let before = core.machine.state
        return perform(core.handle(input), for: input, before: before)
    }

    @discardableResult
    private func perform(_ step: UnitStep, for input: UnitInput, before: DriverState) -> StepPerformer.Performed {
        let performed = performer.perform(step, now: clockNow(), status: currentStatus, adopt: adopt) { publishStatus() }
        if let id = performed.storedAlarmID { core.alarmStored(messageID: id) }
        if let recorded = step.job.fixes.last { lastFix = (recorded.fix, .now) }
        if let ride = step.job.ride { shiftHistory.ended(ride, in: core.machine.shift) }
        publishPositionFeeds(step.job.fixes)
        let stored = !performed.unstored
        switch input {
        case .job(let event):
            panel.stepped(event, before: before, after: core.machine.state, step: step.job, seatsLeft: core.machine.seatsLeft, stored: stored)
        case .driver(let command, _, _, let now):
            if case .job(let driverInput)? = command?.action {
                panel.stepped(
                    .driver(driverInput, at: now), before: before, after: core.machine.state, step: step.job, seatsLeft: core.machine.seatsLeft,
                    stored: stored, historyPages: shiftHistory.history(in: core.machine.shift).pageCount(rows: terminalRows),
                    preBookings: core.machine.snapshot.upcoming.count)
            }
        case .badge, .fleetConfig, .fleetCommand, .fleetCommandRefusedUnread, .driverLogout:
            break
        }
        switch step.sessionEvent {
        case .loggedIn(let driver)?:
            logger.notice("driver logged in", metadata: ["driver": "\(driver)"])
            applyDriverPreferences()
        case .loggedOut(let driver)?:
            logger.notice("driver logged out", metadata: ["driver": "\(driver)"])
            applyDriverPreferences()
        case .preferences(_, let preferences, let alertChosen)?:
            applyDriverPreferences()
            // A new language shows itself; a new alert style is silent until the next alert: it is said.
            if alertChosen { panel.alertStyleChosen(preferences.alert ?? .bell) }
        case .refused(let refusal)?:
            panel.sessionRefused(refusal)
        case .loggedInElsewhere(let driver, let unit, let loggedOut)?:
            logger.notice(loggedOut ? "driver logged out: logged in on another unit" : "driver logged in on another unit; logs out off duty",
                metadata: ["driver": "\(driver)", "elsewhere": "\(unit)"])
            if loggedOut { applyDriverPreferences() }
            panel.loggedInElsewhere(unit: unit)
        case .loginPrompted?, nil:
            break
        }
        if let change = performed.broadcastZones { moveBroadcastSubscription(change) }
        if performed.dropConnection { mqtt.dropConnection() }
        return performed
    }

    /// The engine's own parts of a configuration the core put in force, before anything it
    /// acknowledges is sent.
    private func adopt(_ next: UnitStep.ConfigurationInForce) {
        let configuration = next.configuration
        // The logged-in driver's language stays; a driver without one sees the fleet's.
        applyDriverPreferences()
        inboundFlow.setRate(perSecond: configuration.mqtt.inboundPerS)
        clock.trustSystemClock = configuration.gps.trustSystemClock
        if next.reconnect {
            logger.notice("broker settings changed; reconnecting", metadata: ["broker": "\(configuration.mqtt.host):\(configuration.mqtt.port)"])
            performer.brokerSessionEnded()
            broker = .init(connected: false, since: clockNow().milliseconds, lastError: nil)
            linkGeneration = mqtt.connect(configuration)
        }
    }

    // MARK: GPS

    private func handleGPS(_ event: GPSDEvent, arrivedAt: Duration) {
        switch event {
        case .connected:
            gpsConnected = true
            logger.info("connected to gpsd", metadata: ["gpsd": "\(configuration.gpsd.host):\(configuration.gpsd.port)"])
        case .disconnected(let reason):
            if gpsConnected { logger.warning("gpsd connection lost", metadata: ["reason": "\(reason)"]) }
            else { logger.debug("gpsd not reachable", metadata: ["reason": "\(reason)"]) }
            gpsConnected = false
            // No fix follows soon: what gpsd sent is stored now.
            performer.commitHeldFixes(now: clockNow())
        case .sample(let sample):
            metrics.fixesReceived.increment()
            step(.job(.gps(sample, at: clock.sample(arrivedAt: arrivedAt))))
        }
    }

    // MARK: MQTT

    private func handleMQTT(_ event: MQTTEvent) -> LoopOutcome {
        switch event {
        case .connected(let session):
            mqtt.reserveConnectionNumbers(in: store, logger: logger)
            broker = .init(connected: true, since: clockNow().milliseconds, lastError: nil)
            metrics.brokerConnects.increment()
            logger.info("connected to broker", metadata: ["broker": "\(brokerInUse)"])
            performer.brokerSessionStarted(session)
            subscribeInbound()
            subscribeDriverLogout()
            publishStatus()
            publishLastPositionOnConnect()
            subscribeToFleet()
            subscribeBroadcasts()
            performer.want()
        case .connectFailed(let reason):
            mqtt.reserveConnectionNumbers(in: store, logger: logger)
            if broker.lastError != reason { logger.warning("cannot connect to broker", metadata: ["reason": "\(reason)"]) }
            broker.lastError = reason
        case .disconnected(_, let reason):
            broker = .init(connected: false, since: clockNow().milliseconds, lastError: reason)
            metrics.brokerDisconnects.increment()
            logger.warning("broker connection lost; messages wait in the store", metadata: ["reason": "\(reason)"])
            performer.brokerSessionEnded()
        case .published(let ticket):
            if ticket == offlineStatusTicket { return .finished }
            if performer.acknowledged(ticket) { metrics.messagesAcknowledged.increment() }
        case .refused(let ticket, let reasonCode):
            // Counted whatever was refused; an outbox row is kept and sent again, a status waits for the next one.
            metrics.messagesRefused.increment()
            if ticket == offlineStatusTicket { return .finished }
            performer.refused(ticket, reasonCode: reasonCode, at: clockNow())
        case .message(let message):
            if poisonGuard.isPoison(message) {
                refusePoison(topic: message.topic)
                break
            }
            poisonGuard.handling(message)
            if !handleFleetMessage(message), !receiveBroadcast(message), !receiveDriverLogout(message) { receive(message) }
            poisonGuard.handled()
        case .oversized(let topic, let bytes, _):
            if refuseFleetMessage(topic: topic, FleetMessage.tooLarge(bytes: bytes)) { break }
            if refuseDriverLogout(topic: topic, why: "oversized, \(bytes) bytes") { break }
            refuseInbound(topic: topic, why: "oversized, \(bytes) bytes") { .tooLarge($0, bytes: bytes) }
        }
        return .running
    }

    private func refusePoison(topic: String) {
        if refuseFleetMessage(topic: topic, FleetMessage.poisoned) { return }
        if refuseDriverLogout(topic: topic, why: "poison") { return }
        refuseInbound(topic: topic, why: "poison", InboundProblem.poisoned)
    }

    /// The retained status. Published after a step's messages were handed to the broker: its
    /// outbox count is a store query that a driver's reply must not wait for.
    func publishStatus(online: Bool = true) {
        // Once the offline status is out, an online one (a fix's or a press's step while the
        // broker's acknowledgement is awaited) would replace the retained status of a unit that is
        // gone, and the clean disconnect sends no will to correct it.
        guard !(stopping && online) else { return }
        let depth = online ? performer.depth() : nil
        // The counts as last read (at start and every upkeep tick): no query on the way to the broker.
        let aside = online ? lastAsideCounts : nil
        var status = StatusMessage(
            online: online, unit: configuration.unit.id, status: core.machine.status, zone: zone, t: clockNow(), outbox: depth, aside: aside,
            driver: online ? core.session.driver : nil)
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

    /// The taximeter: hired and vacant drive the job, a fare goes on the ride. `found`: the first
    /// hired or vacant since its device opened, which drives nothing.
    private func meterRead(_ reading: MeterReading, found: Bool) {
        switch reading {
        case .hired where found: step(.job(.meterFound(hired: true, at: clockNow())))
        case .vacant where found: step(.job(.meterFound(hired: false, at: clockNow())))
        case .hired: step(.job(.meter(hired: true, at: clockNow())))
        case .vacant: step(.job(.meter(hired: false, at: clockNow())))
        case .fare(let amount, let currency): step(.job(.meterFare(amount: amount, currency: currency, at: clockNow())))
        }
    }

    /// A button, the terminal or a badge reader. A login being typed takes the terminal's keys;
    /// other keys only mean something mapped. The PIN and the badge number are passed on, never logged.
    private func driverPressed(_ press: DriverPress) {
        if let on = press.ignition {
            step(.job(.ignition(on: on, at: clockNow())))
            return
        }
        if let reading = press.meter {
            meterRead(reading, found: press.meterFound)
            return
        }
        if let badge = press.badge {
            for line in step(.badge(badge, context: sessionContext(readingPreferences: false), at: clockNow())).told { logger.info("badge read: \(line)") }
            return
        }
        if press.discarded {
            logger.notice("the serial terminal dropped a burst of line noise", metadata: ["login": "\(core.loginEntry != nil)"])
            panel.inputDiscarded()
        }
        let key: LoginEntry.Key?
        switch press.typed {
        case _ where press.discarded: key = .lost
        case "\n": key = .enter
        case "\u{8}": key = .erase
        case let typed?: key = .character(typed)
        case nil: key = nil
        }
        driverCommand(press.command, key: key)
    }

    /// The one entry point for driver inputs: `taxiunitctl press`, the buttons and the terminal.
    /// Returns what the driver was told.
    @discardableResult
    private func driverCommand(_ command: DriverCommand?, key: LoginEntry.Key?) -> DriverAnswer {
        // Only a session word needs the driver's stored preferences: no store read on a job key's way to the broker.
        let session = if case .session? = command?.action { true } else { false }
        let performed = step(.driver(command, key: key, context: sessionContext(readingPreferences: session), at: clockNow()))
        // The terminal shows nothing of an SOS; whoever pressed it here is told it is stored.
        let sos = if case .job(.sos)? = command?.action { true } else { false }
        let stored = sos ? performed.storedAlarmID.map { ["SOS alarm \($0) stored; it goes to the dispatcher before anything else"] } ?? [] : []
        return DriverAnswer(told: performed.told + stored, refused: performed.refused)
    }

    /// What the core needs to know of the driver's surroundings for a session input.
    private func sessionContext(readingPreferences: Bool) -> SessionContext {
        let stored = readingPreferences ? core.session.driver.flatMap { try? store.driverPreferences($0) } : nil
        let preferences = stored ?? DriverPreferences()
        return SessionContext(preferences: preferences, installedLanguages: installedLanguages, hasTerminal: devices?.terminal != nil)
    }

    /// The terminal in the logged-in driver's language and alert style, else the configuration's.
    func applyDriverPreferences() {
        let preferences = core.session.driver.flatMap { try? store.driverPreferences($0) } ?? DriverPreferences()
        let catalogues = configuration.unit.catalogues
        let shown = preferences.language.map { devices?.useLanguage($0, catalogues: catalogues) == true } ?? false
        if !shown { devices?.useLanguage(configuration.unit.language, catalogues: catalogues) }
        devices?.terminal?.setRingsBell((preferences.alert ?? .bell) == .bell)
    }

    /// The catalogues in `directory` that load.
    private static func installedLanguages(in directory: String) -> [String] {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return files.filter { $0.hasSuffix(".toml") }.map { String($0.dropLast(5)) }.sorted()
            .filter { SessionInput.isLanguage($0) && (try? MessageCatalogue.load(language: $0, directory: directory)) != nil }
    }

    /// The rows of the terminal the history pages are laid out for.
    private var terminalRows: Int { configuration.input.serial?.rows ?? ScreenSize.minimum.rows }

    /// Hands the terminal a new view when what it shows has changed.
    private func refreshDriverView() {
        guard let terminal = devices?.terminal else { return }
        let machine = core.machine
        // The count of waiting messages is shown only offline: no store query while online.
        let waiting = broker.connected ? 0 : ((try? performer.depthNow().total) ?? 0)
        let fix = machine.lastFix.map(Coordinate.init)
        // Deadlines are on the unit clock, which is GPS time while the system clock is
        // unsynchronised (hours off on a board without a real-time clock); the terminal counts down
        // on the system clock. In steps of 100 ms, so that GPS jitter does not change the view.
        let unitClockAhead = Duration.milliseconds((clockNow() - EngineClock.systemTime()).wholeMilliseconds / 100 * 100)
        var view = panel.view(
            state: machine.state, seatsLeft: machine.seatsLeft, zone: zone, online: broker.connected, waiting: waiting,
            unitClockAhead: unitClockAhead, login: machine.state.name == .offDuty ? core.loginEntry : nil,
            fare: core.fareEntry, paymentRequired: machine.settings.paymentRequired,
            distance: { place in fix?.distance(to: place.coordinate) })
        view.inbox = DriverView.Inbox(machine.driverMessages)
        view.driver = core.session.driver
        view.queue = machine.driverMessages.queuePosition(now: clockNow())
        view.cancelAsked = machine.snapshot.cancelRequest.map { $0.job == machine.state.job?.id } ?? false
        if let page = panel.historyPage {
            view.history = shiftHistory.history(in: machine.shift)
            view.historyPage = page
        }
        if let page = panel.preBookingPage {
            view.preBookings = machine.snapshot.upcoming.map(DriverView.PreBooking.init)
            view.preBookingPage = page
        }
        guard view != shownView else { return }
        shownView = view
        terminal.show(view)
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
        performer.stopSending(now: clockNow())
        guard broker.connected else { return .finished }
        publishStatus(online: false)
        guard offlineStatusTicket != nil else { return .finished }
        inbox.post(.shutdownDeadline, after: .seconds(Self.shutdownGraceS))
        return .running
    }

    /// The unit clock (system time when synchronised, else GPS time), ms.
    func clockNow() -> UnitTime { core.machine.positions.clock.reading(at: clock.sample()).time }
}
