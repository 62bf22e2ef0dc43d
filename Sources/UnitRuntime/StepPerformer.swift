#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import LocalCache
import Logging
import UnitCore

/// The one place where a `Step` of the state machine becomes effects, always in this order:
///
/// 1. **commit**: everything durable in ONE transaction (snapshot, replies, events, alarms, ride,
///    fixes, and the outbox's PUBACK marks and next messages), synced when it holds a promise;
/// 2. **hand to the broker**: what the commit queued goes out at once, so a driver's reply waits
///    for nothing else (not even the status);
/// 3. **status**, 4. **timers**, 5. **the driver** is told, last: "sent" is only said of what is
///    stored.
///
/// Every kind of effect is a field or an exhaustive switch over a `UnitCore` enum: a new case does
/// not compile until it is performed here.
final class StepPerformer {
    private let store: LocalCache
    let outbox: OutboxPump
    let timers: EngineTimers
    /// Fixes waiting for the next commit (`[store] position_commit_ms`).
    var commitWindow: PositionCommitWindow
    /// Purging, retention, the size bound, and the messages the store refused.
    var upkeep: StoreUpkeep
    private let logger: Logger
    private let unit: String
    /// The driver logged in (`DriverSession`): named in every reply, event and alarm made meanwhile.
    var driver: String?
    /// A step's inbox changes were not stored: the whole inbox is written again at the next upkeep.
    var inboxUnstored = false
    /// Starts the timer that commits the held fixes when the window closes.
    private let closeCommitWindow: (Duration) -> Void

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
    }

    init(
        store: LocalCache, outbox: OutboxPump, timers: EngineTimers, commitWindow: PositionCommitWindow, upkeep: StoreUpkeep, unit: String,
        logger: Logger, closeCommitWindow: @escaping (Duration) -> Void
    ) {
        self.store = store
        self.outbox = outbox
        self.timers = timers
        self.commitWindow = commitWindow
        self.upkeep = upkeep
        self.unit = unit
        self.logger = logger
        self.closeCommitWindow = closeCommitWindow
        outbox.held = { [unowned self] in self.upkeep.unstored }
    }

    /// Performs `step` at unit clock `now`; `publishStatus` sends the retained status.
    func perform(_ step: Step, now: Int64, publishStatus: () -> Void) -> Performed {
        var performed = Performed()
        let messages = step.messages.map { unstored($0, now: now) }
        do {
            let commit = try self.commit(step, messages, now: now)
            if commit.wrote { upkeep.written() }
            if commit.queued { outbox.pump(at: now) }
            // Only an alarm stored after every older one has an id an acknowledgement can name.
            if !upkeep.holdsUnstoredAlarm { performed.storedAlarmID = commit.alarmID }
            if let alarm = commit.alarmID { logger.notice("SOS alarm stored; it goes to the dispatcher before anything else", metadata: ["id": "\(alarm)"]) }
        } catch {
            // The state machine has moved on and keeps working: what it promised waits in memory,
            // goes to the broker from there, and is stored by the next commit that succeeds; fixes
            // are given up and counted.
            logger.error("cannot store the step; keeping its messages in memory and retrying", metadata: ["step": "\(step)", "error": "\(error)"])
            upkeep.writeFailed(error)
            upkeep.keepUnstored(messages)
            upkeep.positionsLost(step.fixes.count(where: \.report))
            if !step.inbox.isEmpty { inboxUnstored = true }
            if !messages.isEmpty || !step.inbox.isEmpty {
                // One text, and a true one: nothing of this step is stored, so nothing is "sent" yet.
                performed.told.append(
                    "NOT STORED: the unit cannot write its store (\(error)); kept in memory, it goes out when the broker is reachable")
                performed.unstored = true
                outbox.pump(at: now)
            }
        }
        for message in step.messages {
            switch message {
            case .zone(let change, _):
                logger.info("zone changed", metadata: ["from": "\(change.from ?? "-")", "to": "\(change.to ?? "-")"])
            case .messageReply(let reply) where reply.invalid != nil:
                logger.notice("msg refused", metadata: ["msg": "\(reply.msg ?? "-")", "reason": "\(reply.invalid ?? "")"])
            case .reply, .event, .sos, .stalePosition, .ride, .messageReply, .messageRead:
                break
            }
        }
        if step.status != nil { publishStatus() }
        for timer in step.timers {
            switch timer {
            case .start(let id, let fireAt): timers.start(id, fireAt: fireAt, now: now)
            case .cancel(let id): timers.cancel(id)
            }
        }
        for notice in step.driver {
            switch notice {
            case .told(let text), .reminder(let text):
                // Nothing of this step is stored: what the state machine says of it (a "sent") is not true yet.
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
        for note in step.notes { logger.notice("\(note)") }
        return performed
    }

    /// Commits the fixes held by the commit window, alone (the window closed, gpsd went away,
    /// shutdown).
    func commitHeldFixes(now: @autoclosure () -> Int64) {
        guard !commitWindow.held.isEmpty else { return }
        do {
            if try commit(Step(), [], now: now()).queued { outbox.want() }
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

    /// The upkeep tick: room first (a WAL that starts over), then what waits in memory, then the
    /// chores. True when the retained status is stale.
    func maintain(now: Int64, retentionClockTrusted: Bool) -> Bool {
        upkeep.makeRoom()
        storeHeldMessages()
        return upkeep.run(now: now, retentionClockTrusted: retentionClockTrusted, depth: outbox.depth)
    }

    /// A step that only records fixes may leave them to the commit window; everything else commits
    /// at once, with the held fixes.
    private func commit(_ step: Step, _ messages: [UnstoredMessage], now: Int64) throws -> Commit {
        let durability = step.durability
        guard durability > .nothingToStore || !commitWindow.held.isEmpty else { return Commit() }
        let instant = ContinuousClock.now
        if durability == .fixesOnly, commitWindow.holds(at: instant) {
            let arrived = step.fixes.map { PositionCommitWindow.HeldFix(fix: $0.fix, report: $0.report, createdAt: now) }
            if let closesAt = commitWindow.hold(arrived) { closeCommitWindow(closesAt - .now) }
            return Commit()
        }
        let held = commitWindow.takeForCommit(at: instant)
        do {
            let promised = durability == .promised || upkeep.holdsPromise
            return try write(step, messages, held: held, durability: promised ? .full : .normal, now: now)
        } catch {
            upkeep.positionsLost(held.count(where: \.report))
            throw error
        }
    }

    /// One transaction: the messages held in memory (they are older), the step's messages, the
    /// held fixes (they came first), the step's fixes, snapshot and ride, and the outbox's marks and
    /// next messages.
    private func write(
        _ step: Step, _ messages: [UnstoredMessage], held: [PositionCommitWindow.HeldFix], durability: Durability, now: Int64
    ) throws -> Commit {
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
            // The same commit marks what the broker acknowledged and packs what goes next.
            if outbox.pack(in: transaction, at: now) { commit.queued = true }
            return commit
        }
        if !heldRows.isEmpty || !upkeep.unstored.isEmpty { heldWereStored(heldRows) }
        return commit
    }

    /// `ride`, on the event lane (QoS 1 like every unit message but the telemetry).
    private func rideMessage(_ ride: RideSummary, distanceM: Double?, now: Int64) -> UnstoredMessage {
        let unit = self.unit, driver = self.driver
        return UnstoredMessage(topic: RideMessage.topic, messageClass: .event, createdAt: now) { seq, id in
            try Array(JSONEncoder.wire.encode(RideMessage(ride, distanceM: distanceM, unit: unit, seq: seq, id: id, driver: driver)))
        }
    }

    /// `body` with the unit, sequence number, id and driver every unit message carries beside it.
    private func enveloped(_ body: some Encodable & Sendable, topic: String, messageClass: MessageClass, now: Int64) -> UnstoredMessage {
        let unit = self.unit, driver = self.driver
        return UnstoredMessage(topic: topic, messageClass: messageClass, createdAt: now) { seq, id in
            try Array(JSONEncoder.wire.encode(Envelope(body, unit: unit, seq: seq, id: id, driver: driver)))
        }
    }

    /// A message for the dispatcher with its topic and class; numbered and given an id when stored.
    private func unstored(_ message: OutgoingMessage, now: Int64) -> UnstoredMessage {
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
        case .ride(let ride):
            // Kept in memory only when the commit failed; the retry has no ride row to measure on.
            return rideMessage(ride, distanceM: nil, now: now)
        case .messageReply(let reply):
            return enveloped(reply, topic: MessageTopic.reply.rawValue, messageClass: .reply, now: now)
        case .messageRead(let read):
            return enveloped(read, topic: MessageTopic.read.rawValue, messageClass: .reply, now: now)
        case .stalePosition(let fix, let ageMs):
            return UnstoredMessage(topic: UnitTopic.pos.rawValue, messageClass: .position, createdAt: now) { seq, _ in
                try LivePositionMessage(point: PositionPoint(fix, staleAgeMs: ageMs), seq: seq).json()
            }
        }
    }
}
