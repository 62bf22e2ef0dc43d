#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ControlSocket
import FleetControl
import LocalCache
import Logging
import MQTTLink
import TaxiProtocol
import UnitConfig
import UnitCoordination
import UnitCore

/// The one place where a `UnitStep` of the core becomes effects, and the one writer of the
/// store, always in this order:
///
/// 1. **commit**: everything durable in ONE transaction (snapshot, replies, events, alarms, ride,
///    fixes, the driver's session, fleet documents with their acks, executed commands with their
///    replies, and the outbox's PUBACK marks and next messages), synced when it holds a promise;
/// 2. **the configuration in force**: a document's settings are adopted before its ack can leave;
/// 3. **hand to the broker**: what the commit queued goes out at once, so a driver's reply waits
///    for nothing else (not even the status);
/// 4. **status**, 5. **timers**, 6. **the driver** is told, last: "sent" is only said of what is
///    stored.
///
/// Every kind of effect is a field or an exhaustive switch over a core enum: a new case does not
/// compile until it is performed here. The outbox pump, the store's upkeep and the commit window
/// are its own: the engine asks through the methods below.
final class StepPerformer {
    private let store: LocalCache
    private let outbox: OutboxPump
    private let timers: EngineTimers
    /// Fixes waiting for the next commit (`[store] position_commit_ms`).
    private var commitWindow: PositionCommitWindow
    /// Purging, retention, the size bound, and the messages the store refused.
    private var upkeep: StoreUpkeep
    private let logger: Logger
    private let unit: String
    /// The driver logged in (`DriverSession`): named in every reply, event and alarm made meanwhile.
    private var driver: String?
    /// A step's inbox changes were not stored: the whole inbox is written again at the next upkeep.
    private var inboxUnstored = false
    /// Starts the timer that commits the held fixes when the window closes.
    private let closeCommitWindow: (Duration) -> Void
    /// Starts the fleet's rollback timer (a trial of new `[mqtt]` settings).
    private let startRollbackTimer: (Duration) -> Task<Void, Never>
    private var rollbackTimer: Task<Void, Never>?

    /// What performing a step did that the engine keeps.
    struct Performed {
        /// What the driver was told, for the terminal or the control answer.
        var told: [String] = []
        /// The message id the store gave the step's alarm, once committed.
        var storedAlarmID: String?
        /// The driver's input was refused (what for is in `told`).
        var refused = false
        /// The step's messages could not be stored: they wait in memory (the driver is told so).
        var unstored = false
        /// An executed `reconnect` command: its reply is stored, the connection may go.
        var dropConnection = false
        /// The zone broadcast subscription to move, after the commit (the engine owns the subscriptions).
        var broadcastZones: BroadcastZoneChange?
    }

    init(
        store: LocalCache, outbox: OutboxPump, timers: EngineTimers, commitWindow: PositionCommitWindow, upkeep: StoreUpkeep, unit: String,
        driver: String?, logger: Logger, closeCommitWindow: @escaping (Duration) -> Void,
        startRollbackTimer: @escaping (Duration) -> Task<Void, Never>
    ) {
        self.store = store
        self.outbox = outbox
        self.timers = timers
        self.commitWindow = commitWindow
        self.upkeep = upkeep
        self.unit = unit
        self.logger = logger
        self.closeCommitWindow = closeCommitWindow
        self.startRollbackTimer = startRollbackTimer
        self.driver = driver
        outbox.held = { [unowned self] in self.upkeep.unstored }
    }

    /// Performs `step` at unit clock `now`. `status`: the status as `taxiunitctl` reads it, for a
    /// `status` command; `adopt`: the engine takes a new configuration in force (its own parts:
    /// the broker link, the clocks, the terminal); `publishStatus` sends the retained status.
    func perform(
        _ step: UnitStep, now: UnitTime, status: () -> ControlStatus, adopt: (UnitStep.ConfigurationInForce) -> Void, publishStatus: () -> Void
    ) -> Performed {
        driver = step.driver
        var performed = Performed()
        let job = step.job
        let messages = job.messages.map { unstored($0, now: now) } + step.acks.map { ackMessage($0, now: now) } + commandReply(step.command, now: now)
        do {
            // Read before the write transaction: the status reads the store itself.
            let statusNow = if case .execute(_, .status) = step.command { status() } else { ControlStatus?.none }
            let commit = try self.commit(step, messages, now: now, status: statusNow)
            if commit.wrote { upkeep.written() }
            if let configuration = step.configuration { use(configuration, adopt: adopt) }
            if commit.queued { outbox.pump(at: now) }
            // Only an alarm stored after every older one has an id an acknowledgement can name.
            if !upkeep.holdsUnstoredAlarm { performed.storedAlarmID = commit.alarmID }
            if let alarm = commit.alarmID { logger.notice("SOS alarm stored; it goes to the dispatcher before anything else", metadata: ["id": "\(alarm)"]) }
            if case .execute(_, .reconnect) = step.command { performed.dropConnection = true }
        } catch {
            // The core has moved on and keeps working: what it promised waits in memory, goes to
            // the broker from there, and is stored by the next commit that succeeds; fixes are
            // given up and counted.
            logger.error("cannot store the step; keeping its messages in memory and retrying", metadata: ["step": "\(job)", "error": "\(error)"])
            if let configuration = step.configuration { use(configuration, adopt: adopt) }
            upkeep.writeFailed(error)
            upkeep.keepUnstored(messages)
            upkeep.positionsLost(job.fixes.count(where: \.report))
            if !job.inbox.isEmpty { inboxUnstored = true }
            if !messages.isEmpty || !job.inbox.isEmpty || step.durability == .promised {
                // One text, and a true one: nothing of this step is stored, so nothing is "sent" yet.
                performed.told.append(
                    "NOT STORED: the unit cannot write its store (\(error)); kept in memory, it goes out when the broker is reachable")
                performed.unstored = true
                outbox.pump(at: now)
            }
        }
        log(step)
        performed.broadcastZones = job.broadcastZones
        if job.status != nil { publishStatus() }
        for timer in job.timers {
            switch timer {
            case .start(let id, let fireAt): timers.start(id, fireAt: fireAt, now: now)
            case .cancel(let id): timers.cancel(id)
            }
        }
        switch step.rollbackTimer {
        case .start(let after)?:
            rollbackTimer?.cancel()
            rollbackTimer = startRollbackTimer(after)
        case .cancel?:
            rollbackTimer?.cancel()
            rollbackTimer = nil
        case nil:
            break
        }
        for notice in job.driver {
            switch notice {
            case .told(let text), .reminder(let text), .offDutySuggested(let text), .cancelAnswered(_, _, let text), .offeredBeside(_, _, let text), .shiftWarning(_, let text),
                .meterDisagrees(_, let text), .heldJobChanged(_, let text):
                // Nothing of this step is stored: what the core says of it (a "sent") is not true yet.
                guard !performed.unstored else { continue }
                // What the driver reads holds pickup addresses and the dispatcher's texts: debug only.
                logger.debug("driver: \(LogExcerpt.of(text, limit: 200))")
                performed.told.append(text)
            case .refused(let refusal):
                logger.info("driver input refused: \(refusal)")
                performed.told.append(refusal.description)
                performed.refused = true
            }
        }
        for note in job.notes { logger.notice("\(note)") }
        for note in step.debugNotes { logger.debug("\(note)") }
        return performed
    }

    /// The parts of a new configuration that are the performer's, then the engine's.
    private func use(_ next: UnitStep.ConfigurationInForce, adopt: (UnitStep.ConfigurationInForce) -> Void) {
        let configuration = next.configuration
        outbox.maxInFlight = configuration.mqtt.maxInflight
        outbox.batchMax = configuration.mqtt.batchMax
        outbox.topicBase = configuration.unitTopicBase
        upkeep.limits = configuration.store
        commitWindow.window = .milliseconds(configuration.store.positionCommitMs)
        adopt(next)
    }

    private func log(_ step: UnitStep) {
        for message in step.job.messages {
            switch message {
            case .zone(let change, _):
                logger.info("zone changed", metadata: ["from": "\(change.from ?? "-")", "to": "\(change.to ?? "-")"])
            case .messageReply(let reply) where reply.invalid != nil:
                logger.notice("msg refused", metadata: ["msg": "\(reply.msg ?? "-")", "reason": "\(reply.invalid ?? "")"])
            case .ignition(let change, _):
                logger.info("ignition \(change.on ? "on" : "off")")
            case .logoutRefused(let refusal):
                logger.notice("driver/logout refused", metadata: ["logout": "\(refusal.logout ?? "-")", "reason": "\(refusal.reason.rawValue)"])
            case .shift(let report):
                logger.info("shift \(report.what.rawValue)", metadata: ["limit": "\(report.limit?.rawValue ?? "-")"])
            case .reply, .event, .sos, .stalePosition, .ride, .messageReply, .messageRead, .soonClear, .cancelRequest, .driverSession:
                break
            }
        }
        for ack in step.acks {
            let metadata: Logger.Metadata = [
                "scope": "\(ack.scope.rawValue)", "version": "\(ack.version.map(String.init) ?? "?")",
                "result": "\(ack.result.rawValue)", "errors": "\(ack.errors.joined(separator: "; "))",
            ]
            if ack.result == .applied { logger.notice("fleet config applied", metadata: metadata) }
            else { logger.warning("fleet config \(ack.result.rawValue)", metadata: metadata) }
        }
        switch step.command {
        case .ignore(let id)?:
            logger.notice("replayed command ignored", metadata: ["id": "\(id)"])
        case .refuse(let refusal)?:
            logger.warning(
                "command refused",
                metadata: ["id": "\(refusal.id ?? "?")", "result": "\(refusal.result.rawValue)", "errors": "\(refusal.errors.joined(separator: "; "))"])
        case .execute(let command, _)?:
            logger.notice("executing fleet command", metadata: ["id": "\(command.id)", "cmd": "\(command.name)"])
        case nil:
            break
        }
    }

    /// Commits the fixes held by the commit window, alone (the window closed, gpsd went away,
    /// shutdown).
    func commitHeldFixes(now: @autoclosure () -> UnitTime) {
        guard !commitWindow.held.isEmpty else { return }
        do {
            if try commit(UnitStep(driver: driver), [], now: now(), status: nil).queued { outbox.want() }
        } catch {
            logger.error("cannot store the fixes held for this commit", metadata: ["error": "\(error)"])
        }
    }

    private struct Commit {
        /// Something was written.
        var wrote = false
        /// Something was queued for the broker.
        var queued = false
        var alarmID: String?
    }

    /// Stores the messages held in memory, in one commit of their own (the upkeep tick).
    func storeHeldMessages() {
        guard !upkeep.unstored.isEmpty else { return }
        do {
            let delivered = outbox.deliveredFromMemory
            let rows = try store.write(upkeep.holdsPromise ? .full : .normal) { try upkeep.storeHeld(in: $0, delivered: delivered) }
            heldWereStored(rows)
        } catch {
            upkeep.writeFailed(error)
        }
    }

    /// Once committed: the pump learns their rows (some may be in flight from memory).
    private func heldWereStored(_ rows: [OutboxMessage]) {
        upkeep.heldStored()
        outbox.heldStored(rows)
        outbox.want()
    }

    /// The upkeep tick: room first (a WAL that starts over), then what waits in memory (messages,
    /// and the driver's `inbox` when a step's changes to it were not stored), then the chores.
    /// True when the retained status is stale.
    func maintain(now: UnitTime, retentionClockTrusted: Bool, inbox: [InboxMessage]) -> Bool {
        upkeep.makeRoom()
        storeHeldMessages()
        if inboxUnstored {
            do {
                try store.replaceDriverMessages(inbox)
                inboxUnstored = false
                logger.notice("the driver's messages are stored again", metadata: ["count": "\(inbox.count)"])
            } catch {
                logger.error("cannot store the driver's messages; retrying", metadata: ["error": "\(error)"])
            }
        }
        return upkeep.run(now: now, retentionClockTrusted: retentionClockTrusted, depth: outbox.depth)
    }

    /// A step that only records fixes may leave them to the commit window; everything else commits
    /// at once, with the held fixes.
    private func commit(_ step: UnitStep, _ messages: [UnstoredMessage], now: UnitTime, status: ControlStatus?) throws -> Commit {
        let durability = step.durability
        guard durability > .nothingToStore || !commitWindow.held.isEmpty else { return Commit() }
        let instant = ContinuousClock.now
        if durability == .fixesOnly, commitWindow.holds(at: instant) {
            let arrived = step.job.fixes.map { PositionCommitWindow.HeldFix(fix: $0.fix, report: $0.report, createdAt: now) }
            if let closesAt = commitWindow.hold(arrived) { closeCommitWindow(closesAt - .now) }
            return Commit()
        }
        let held = commitWindow.takeForCommit(at: instant)
        do {
            let promised = durability == .promised || upkeep.holdsPromise
            return try write(step, messages, held: held, durability: promised ? .full : .normal, now: now, status: status)
        } catch {
            upkeep.positionsLost(held.count(where: \.report))
            throw error
        }
    }

    /// One transaction: the messages held in memory (they are older), the step's messages, the
    /// held fixes (they came first), the step's fixes, snapshot and ride, the driver's session,
    /// the fleet's documents and commands, and the outbox's marks and next messages.
    private func write(
        _ unitStep: UnitStep, _ messages: [UnstoredMessage], held: [PositionCommitWindow.HeldFix], durability: Durability, now: UnitTime,
        status: ControlStatus?
    ) throws -> Commit {
        let step = unitStep.job
        let delivered = outbox.deliveredFromMemory
        var heldRows: [OutboxMessage] = []
        let commit = try store.write(durability) { transaction in
            heldRows = try upkeep.storeHeld(in: transaction, delivered: delivered)
            var commit = Commit(wrote: true, queued: !messages.isEmpty || !heldRows.isEmpty)
            // The ride message waits for the ride's row below: it carries the distance measured there.
            for message in messages where message.topic != RideMessage.topic {
                let row = try message.enqueue(in: transaction)
                if message.messageClass == .alarm { commit.alarmID = row.messageID }
            }
            let fixes = held.map { (fix: $0.fix, report: $0.report, createdAt: $0.createdAt) }
                + step.fixes.map { (fix: $0.fix, report: $0.report, createdAt: now) }
            for recorded in fixes {
                try transaction.insertPosition(recorded.fix, createdAt: recorded.createdAt)
                if recorded.report {
                    try transaction.queuePosition(recorded.fix, createdAt: recorded.createdAt)
                    commit.queued = true
                }
            }
            if let snapshot = step.snapshot { try transaction.saveValue(snapshot, forKey: UnitEngine.snapshotKey) }
            for change in step.inbox { try transaction.apply(change) }
            if let ride = step.ride {
                let record = try transaction.insertRide(ride)
                logger.info("ride stored", metadata: ["job": "\(ride.job)", "distance_m": "\(Int(clamping: Int64(roundingChecked: record.distanceM) ?? 0))"])
                // Without a fix at either end nothing was measured: the message says so by leaving it out.
                let measured = ride.pickupFix != nil && ride.dropFix != nil ? record.distanceM : nil
                for case .ride(let summary) in step.messages {
                    try rideMessage(summary, distanceM: measured, now: now).enqueue(in: transaction)
                }
            }
            for outcome in Self.jobOutcomes(step.messages) { try transaction.insertJobOutcome(outcome) }
            if let session = unitStep.session { try transaction.saveDriverSession(session) }
            if let change = unitStep.preferences { try transaction.saveDriverPreferences(change.preferences, for: change.driver) }
            for document in unitStep.fleetRecords { try transaction.saveFleetConfig(document.record, for: document.scope, at: now) }
            if case .execute(let command, let execution) = unitStep.command {
                try execute(command, execution, in: transaction, status: status, now: now)
                commit.queued = true
            }
            // The same commit marks what the broker acknowledged and packs what goes next.
            if outbox.pack(in: transaction, at: now) { commit.queued = true }
            return commit
        }
        if !heldRows.isEmpty || !upkeep.unstored.isEmpty { heldWereStored(heldRows) }
        return commit
    }

    /// `config/ack`, on the event lane.
    private func ackMessage(_ ack: ConfigAck, now: UnitTime) -> UnstoredMessage {
        let unit = self.unit
        return UnstoredMessage(topic: UnitTopic.configAck.rawValue, messageClass: .event, createdAt: now) { seq, id in
            try Array(JSONEncoder.wire.encode(ConfigAckMessage(ack, unit: unit, seq: seq, id: id, t: now)))
        }
    }

    /// A refused command's `cmd/reply`; an executed one's is made in its transaction (`execute`).
    private func commandReply(_ outcome: CommandOutcome?, now: UnitTime) -> [UnstoredMessage] {
        guard case .refuse(let refusal) = outcome else { return [] }
        var reply = CommandReplyMessage(
            unit: unit, seq: 0, id: "", t: now, cmdID: refusal.id, cmd: refusal.name,
            result: CommandReplyMessage.Result(rawValue: refusal.result.rawValue) ?? .rejected)
        reply.reason = refusal.reason
        reply.errors = refusal.errors
        return [replyMessage(reply)]
    }

    private func replyMessage(_ reply: CommandReplyMessage) -> UnstoredMessage {
        UnstoredMessage(topic: UnitTopic.cmdReply.rawValue, messageClass: .event, createdAt: reply.t) { seq, id in
            var numbered = reply
            numbered.seq = seq
            numbered.id = id
            return try numbered.json()
        }
    }

    /// An admitted command, in the step's transaction: its id remembered until it expires, what it
    /// does, and its reply.
    private func execute(
        _ command: FleetCommand, _ execution: CommandExecution, in transaction: LocalCache.Transaction, status: ControlStatus?, now: UnitTime
    ) throws {
        var reply = CommandReplyMessage(unit: unit, seq: 0, id: "", t: now, cmdID: command.id, cmd: command.name, result: .ok)
        try transaction.rememberCommand(command.id, expiresAt: command.expiresAt, now: now)
        switch execution {
        case .report(let point):
            try transaction.enqueue(topic: UnitTopic.pos.rawValue, messageClass: .position, createdAt: now) { seq, _ in
                try LivePositionMessage(point: point, seq: seq).json()
            }
            reply.position = point
        case .noFixToReport:
            reply.result = .failed
            reply.errors = ["no fix yet"]
        case .status:
            reply.status = status
        case .purge(let cutoff):
            // The history, the rides, and what still waits to be sent (docs/protocol.md, "Privacy").
            reply.deleted = try transaction.deletePositions(before: cutoff)
            try transaction.deleteRides(droppedBefore: cutoff)
            try transaction.deleteJobOutcomes(before: cutoff)
            try transaction.dropQueuedPositions(createdBefore: cutoff)
        case .reconnect:
            // The reply waits in the outbox and goes out on the new connection.
            break
        }
        try replyMessage(reply).enqueue(in: transaction)
    }

    /// `ride`, on the event lane (QoS 1 like every unit message but the telemetry).
    private func rideMessage(_ ride: RideSummary, distanceM: Double?, now: UnitTime) -> UnstoredMessage {
        let unit = self.unit, driver = self.driver
        return UnstoredMessage(topic: RideMessage.topic, messageClass: .event, createdAt: now) { seq, id in
            try Array(JSONEncoder.wire.encode(RideMessage(ride, distanceM: distanceM, unit: unit, seq: seq, id: id, driver: driver)))
        }
    }

    /// `body` with the unit, sequence number, id and driver every unit message carries beside it.
    private func enveloped(_ body: some Encodable & Sendable, topic: String, messageClass: MessageClass, now: UnitTime) -> UnstoredMessage {
        let unit = self.unit, driver = self.driver
        return UnstoredMessage(topic: topic, messageClass: messageClass, createdAt: now) { seq, id in
            try Array(JSONEncoder.wire.encode(Envelope(body, unit: unit, seq: seq, id: id, driver: driver)))
        }
    }

    /// The jobs the step ended without a ride, for `taxiunitctl jobs`: offers rejected or not
    /// answered in time, and jobs left by a no-show or a cancel.
    static func jobOutcomes(_ messages: [OutgoingMessage]) -> [JobOutcomeRecord] {
        let byReply: [ReplyCode: JobOutcomeRecord.Outcome] = [.reject: .rejected, .timeout: .timedOut]
        let byReason: [String: JobOutcomeRecord.Outcome] = ["no_show": .noShow, "cancelled": .cancelled]
        return messages.compactMap { message in
            if case .reply(let reply) = message, reply.re == .jobOffer, let outcome = byReply[reply.reply] {
                return JobOutcomeRecord(job: reply.job, time: reply.t, outcome: outcome)
            }
            if case .event(let transition) = message, let job = transition.job, let outcome = transition.reason.flatMap({ byReason[$0] }) {
                return JobOutcomeRecord(job: job, time: transition.t, outcome: outcome)
            }
            return nil
        }
    }

    /// A message for the dispatcher with its topic and class; numbered and given an id when stored.
    private func unstored(_ message: OutgoingMessage, now: UnitTime) -> UnstoredMessage {
        let unit = self.unit, driver = self.driver
        switch message {
        case .reply(let reply):
            return enveloped(reply, topic: UnitTopic.jobReply.rawValue, messageClass: .reply, now: now)
        case .event(let transition):
            return enveloped(transition, topic: UnitTopic.event.rawValue, messageClass: .event, now: now)
        case .sos(let alarm):
            return enveloped(alarm, topic: UnitTopic.sos.rawValue, messageClass: .alarm, now: now)
        case .zone(let change, let at):
            return UnstoredMessage(topic: UnitTopic.event.rawValue, messageClass: .event, createdAt: now) { seq, id in
                try Array(JSONEncoder.wire.encode(ZoneEventMessage(unit: unit, seq: seq, id: id, t: at, change: change, driver: driver)))
            }
        case .soonClear(let soonClear, let at):
            return UnstoredMessage(topic: UnitTopic.event.rawValue, messageClass: .event, createdAt: now) { seq, id in
                try Array(JSONEncoder.wire.encode(SoonClearEventMessage(unit: unit, seq: seq, id: id, t: at, soonClear: soonClear, driver: driver)))
            }
        case .shift(let report):
            return UnstoredMessage(topic: UnitTopic.event.rawValue, messageClass: .event, createdAt: now) { seq, id in
                try Array(JSONEncoder.wire.encode(ShiftEventMessage(unit: unit, seq: seq, id: id, report: report, driver: driver)))
            }
        case .cancelRequest(let request, let state):
            return UnstoredMessage(topic: UnitTopic.event.rawValue, messageClass: .event, createdAt: now) { seq, id in
                try Array(JSONEncoder.wire.encode(CancelRequestEventMessage(unit: unit, seq: seq, id: id, request: request, state: state, driver: driver)))
            }
        case .ignition(let change, let at):
            return UnstoredMessage(topic: UnitTopic.event.rawValue, messageClass: .event, createdAt: now) { seq, id in
                try Array(JSONEncoder.wire.encode(IgnitionEventMessage(unit: unit, seq: seq, id: id, t: at, change: change, driver: driver)))
            }
        case .ride(let ride):
            // Kept in memory only when the commit failed; the retry has no ride row to measure on.
            return rideMessage(ride, distanceM: nil, now: now)
        case .messageReply(let reply):
            return enveloped(reply, topic: MessageTopic.reply.rawValue, messageClass: .reply, now: now)
        case .messageRead(let read):
            return enveloped(read, topic: MessageTopic.read.rawValue, messageClass: .reply, now: now)
        case .driverSession(let event, let driver):
            return UnstoredMessage(topic: UnitTopic.event.rawValue, messageClass: .event, createdAt: now) { seq, id in
                try Array(JSONEncoder.wire.encode(DriverSessionEventMessage(event, unit: unit, seq: seq, id: id, driver: driver)))
            }
        case .logoutRefused(let refusal):
            return enveloped(refusal, topic: UnitTopic.event.rawValue, messageClass: .event, now: now)
        case .stalePosition(let fix, let age):
            return UnstoredMessage(topic: UnitTopic.pos.rawValue, messageClass: .position, createdAt: now) { seq, _ in
                try LivePositionMessage(point: PositionPoint(fix, staleAge: age), seq: seq).json()
            }
        }
    }

    // MARK: What the engine asks of the outbox, the upkeep and the commit window

    func brokerSessionStarted(_ session: MQTTSessionID) { outbox.sessionStarted(session) }

    func brokerSessionEnded() { outbox.sessionEnded() }

    /// True when `ticket` was an outbox message's.
    func acknowledged(_ ticket: MQTTPublishTicket) -> Bool { outbox.acknowledged(ticket) }

    func refused(_ ticket: MQTTPublishTicket, reasonCode: Int32, at now: UnitTime) {
        _ = outbox.refused(ticket, reasonCode: reasonCode, at: now)
    }

    /// `[mqtt] max_publish_rate` lets the outbox send again.
    func rateWaitOver() { outbox.rateWaitOver() }

    /// Something may be sent: the pump runs once the batch is handled.
    func want() { outbox.want() }

    /// A batch of inputs was handled: the inputs that may wait for the next one.
    func batchHandled(at now: @autoclosure () -> UnitTime) -> InputDeferral {
        // A PUBACK only frees a slot in flight: while the pump has free slots and nothing to fill
        // them with, it neither wakes the loop nor commits on its own; the next pump (the next
        // fix, the upkeep tick) marks it. Shutdown waits for one.
        var deferred: InputDeferral = outbox.batchHandled(at: now()) ? .acknowledgement : []
        // While fixes wait for the commit window, its timer wakes the loop: the fixes that come
        // meanwhile wait with them, and are handled in one batch.
        if !commitWindow.held.isEmpty { deferred.insert(.fix) }
        return deferred
    }

    /// What was acknowledged is marked before anyone reads the store.
    func settle(at now: @autoclosure () -> UnitTime) { outbox.settle(at: now()) }

    var inFlight: Int { outbox.inFlight }

    /// The outbox rows libmosquitto holds.
    var inFlightRows: Set<Int64> { outbox.inFlightRows }

    /// The outbox's depth; the last one read when the store cannot be read.
    func depth() -> OutboxDepth { upkeep.refreshDepth(outbox.depth) }

    /// The depth as the store says it now, for the health probe.
    func depthNow() throws -> OutboxDepth { try outbox.depth() }

    var diskStatus: ControlStatus.Store? { upkeep.diskStatus }

    /// The commit window's timer fired: the fixes held are committed if it is their time.
    func commitWindowClosed(now: @autoclosure () -> UnitTime) {
        if commitWindow.isDue(at: .now) { commitHeldFixes(now: now()) }
    }

    /// True (and the timer forgotten) if this firing is the current one of `id`.
    func timerFired(_ id: TimerID, generation: UInt64) -> Bool { timers.fired(id, generation: generation) }

    /// Shutdown begins: nothing new is sent; what is held is stored and the pump runs once more.
    func stopSending(now: @autoclosure () -> UnitTime) {
        outbox.sending = false
        commitHeldFixes(now: now())
        outbox.want()
    }

    /// The loop ends: the held fixes are stored and no timer fires any more.
    func finish(now: @autoclosure () -> UnitTime) {
        commitHeldFixes(now: now())
        timers.cancelAll()
        rollbackTimer?.cancel()
    }
}
