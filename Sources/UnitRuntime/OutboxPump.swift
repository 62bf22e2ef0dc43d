import LocalCache
import Logging
import MQTTLink
import TaxiProtocol
import UnitCore

/// Moves the SQLite outbox to libmosquitto, at most `maxInFlight` messages at a time, lanes in
/// order: alarm, reply, event, the newest fix (live), then the history (backfill batches).
///
/// The one owner of the outbox's state: which rows are in flight, which PUBACKs still wait for a
/// commit (the depth it reports leaves them out), when it is worth pumping, and how queued fixes
/// are packed into `pos` messages. `LocalCache` only stores rows and bytes.
///
/// Which rows libmosquitto holds is kept by (session, mid); a row is only marked delivered on its
/// PUBACK. When the session ends the map is dropped, and the next session starts every lane from
/// the beginning, so every un-acknowledged row is sent again with its `id`. Within a session a
/// cursor per lane and the store's hints mean an idle pump reads nothing from SQLite. PUBACKs
/// that arrive together are marked in the same commit that fetches what goes next.
///
/// In steady state a fix costs one commit: the engine's transaction that stores it also marks the
/// last PUBACKs and packs the live message (`pack(in:at:)`). A PUBACK with nothing to send after
/// it is not committed on its own; it waits for that next commit (the next fix, a second later),
/// at most `ackDelay` (the maintenance tick flushes it). Until then `status` leaves the row out
/// (the store is told it is acknowledged); a kill in between only means that message is sent again
/// with its `id`, which receivers drop.
///
/// While it drains a backlog the pump keeps up to two windows of backfill messages packed ahead
/// (committed, not handed over). The commit that marks a PUBACK hands the next message over from
/// that reserve, and refills it only when a window of it is gone, so the batches are read, encoded
/// and inserted a window or more at a time instead of one or two per PUBACK. The PUBACK is marked
/// before the next message goes out, so a kill never sends again more than what was in flight.
/// Rows packed ahead are ordinary undelivered rows: a new session sends them from the store.
///
/// When the store cannot be written (a full disk), the pump keeps going: PUBACKs wait in memory
/// until a commit marks them, what is stored is read and handed over without a write (nothing new
/// is packed), and the messages the store refused (`held`, numbered while held) go to the broker
/// from memory, after the stored alarms, replies and events (which are older) and before the
/// positions. The broker's PUBACK for one means it is stored only as its topic's sequence number;
/// one stored while in flight becomes an ordinary row in flight.
///
/// A PUBACK that refuses the message (MQTT 5 reason code 0x80 or more: an ACL that denies the
/// topic, a quota) marks nothing: the message is kept and sent again after a backoff that doubles
/// from `retryMin` to `retryMax` while refusals go on, so a broker that keeps refusing costs a
/// publish a minute, not a loop. It is logged (one line a minute at most) and counted.
final class OutboxPump {
    typealias Publish = (_ topic: String, OutboxMessage) throws(MQTTLinkError) -> MQTTPublishTicket

    /// How long an acknowledged row may stay unmarked when nothing else needs a commit.
    static let ackDelay: Duration = .seconds(2)
    /// The backoff after a refused publish. The engine pumps at least every upkeep tick (2 s).
    static let retryMin: Duration = .seconds(1)
    static let retryMax: Duration = .seconds(60)
    /// At most one line about refused publishes per this long.
    static let refusalLogEvery: Duration = .seconds(60)

    private let store: LocalCache
    private var packer: PositionPacker
    /// The fleet may change these ([mqtt] topic_prefix, max_inflight, batch_max) without a reconnect.
    var topicBase: String
    var maxInFlight: Int
    var batchMax: Int {
        get { packer.batchMax }
        set { packer.batchMax = newValue }
    }
    private let logger: Logger
    private let publish: Publish
    /// `[mqtt] max_publish_rate`: how many may go now. When none may, `wake` asks for a pump once
    /// the next may (`rateWaitOver`).
    private let allowance: () -> PublishAllowance
    private let wake: (Duration) -> Void
    private var wakeAsked = false

    private var session: MQTTSessionID?
    private var rowsByTicket: [MQTTPublishTicket: OutboxMessage] = [:]
    /// The messages the store refused, oldest first (StoreUpkeep keeps them).
    var held: () -> [UnstoredMessage] = { [] }
    /// Held messages handed over in this session, by ticket: their ids.
    private var heldByTicket: [MQTTPublishTicket: String] = [:]
    /// Held messages the broker acknowledged: stored as their sequence number only.
    private(set) var deliveredFromMemory: Set<String> = []
    /// Rows stored while their message was in flight from memory: not handed over again.
    private var storedInFlight: Set<Int64> = []
    /// The highest row id handed over per lane in this session.
    private var cursors: [OutboxLane: Int64] = [:]
    /// Live messages of earlier sessions that were never acknowledged, newest first.
    private var liveResends: [OutboxMessage] = []
    /// Acknowledged rows not yet marked delivered; marked by the next commit. `depth()` leaves
    /// them out.
    private var acknowledgedRows: [Int64] = []
    /// When a `pump` first left `acknowledgedRows` unmarked.
    private var acknowledgedWaitingSince: UnitTime?
    /// Packed in the engine's commit, handed to libmosquitto by the next `pump`.
    private var packed: [OutboxMessage] = []
    /// Backfill messages committed ahead of the window, oldest first; ids above `cursors[.backfill]`.
    private var packedAhead: [OutboxMessage] = []
    /// Refused by the broker in this session, oldest first: handed over again from `retryAt`.
    private var refusedMessages: [OutboxMessage] = []
    private var retryAt: UnitTime?
    /// Refusals since a message sent again was accepted: the backoff's exponent.
    private var refusalsInARow = 0
    /// Rows sent again after a refusal; the first of them accepted resets the backoff.
    private var retriedRows: Set<Int64> = []
    /// The refusal log's own limit: when it last wrote, and what it swallowed since.
    private var refusalLoggedAt: UnitTime?
    private var refusalsNotLogged = 0
    /// Off while shutting down: PUBACKs are still marked, nothing new is handed over.
    var sending = true
    /// Set by `want()`; the engine pumps once after each batch of inputs, so the PUBACKs that came
    /// together share one commit.
    private var wanted = false
    /// True while there are free slots in flight and nothing to fill them with: a PUBACK then
    /// neither wakes the engine loop nor commits on its own.
    private var acknowledgementsMayWait = false

    init(
        store: LocalCache, unit: String, topicBase: String, maxInFlight: Int, batchMax: Int, logger: Logger,
        allowance: @escaping () -> PublishAllowance = { .unlimited }, wake: @escaping (Duration) -> Void = { _ in },
        publish: @escaping Publish
    ) {
        self.allowance = allowance
        self.wake = wake
        self.store = store
        packer = PositionPacker(unit: unit, batchMax: batchMax)
        self.topicBase = topicBase
        self.maxInFlight = maxInFlight
        self.logger = logger
        self.publish = publish
    }

    var inFlight: Int { rowsByTicket.count + heldByTicket.count }

    /// The rows libmosquitto holds now, for `taxiunitctl outbox`.
    var inFlightRows: Set<Int64> { Set(rowsByTicket.values.map(\.rowID)) }

    func sessionStarted(_ session: MQTTSessionID) {
        self.session = session
        rowsByTicket.removeAll()
        heldByTicket.removeAll()
        storedInFlight.removeAll()
        cursors.removeAll()
        packedAhead.removeAll()
        forgetRefused()
        do {
            // Another process (a tool, an older daemon) may have written the file meanwhile.
            try store.refreshHints()
            liveResends = try store.pendingLivePositions()
            // Those are served newest first from the list; the cursor is for live rows made later.
            cursors[.livePosition] = store.newestRowID(in: .livePosition)
        } catch {
            logger.error("cannot read the outbox", metadata: ["error": "\(error)"])
        }
    }

    func sessionEnded() {
        session = nil
        rowsByTicket.removeAll()
        heldByTicket.removeAll()
        storedInFlight.removeAll()
        // Stored already; the next session sends them from the store.
        packed.removeAll()
        packedAhead.removeAll()
        forgetRefused()
    }

    /// A new session sends every undelivered row from the store, refused ones included.
    private func forgetRefused() {
        refusedMessages.removeAll()
        retriedRows.removeAll()
        retryAt = nil
    }

    /// A PUBACK: the row is marked delivered by the next commit, which it asks for only while
    /// there is work waiting for the slot it frees. True when the ticket was an outbox row's (for
    /// the telemetry's count).
    @discardableResult
    func acknowledged(_ ticket: MQTTPublishTicket) -> Bool {
        guard ticket.session == session else { return false }
        if let id = heldByTicket.removeValue(forKey: ticket) {
            deliveredFromMemory.insert(id)
            wanted = true
            return true
        }
        guard let rowID = rowsByTicket.removeValue(forKey: ticket)?.rowID else { return false }
        storedInFlight.remove(rowID)
        acknowledgedRows.append(rowID)
        if retriedRows.remove(rowID) != nil { refusalsInARow = 0 }
        if !acknowledgementsMayWait { wanted = true }
        return true
    }

    /// A PUBACK that refuses the message: the row stays undelivered and is sent again after the
    /// backoff. True when the ticket was an outbox row's (for the telemetry's count).
    @discardableResult
    func refused(_ ticket: MQTTPublishTicket, reasonCode: Int32, at time: UnitTime) -> Bool {
        // A held message refused is handed over again by a later pump, once it is stored with the rest.
        if ticket.session == session, heldByTicket.removeValue(forKey: ticket) != nil { return true }
        guard ticket.session == session, let message = rowsByTicket.removeValue(forKey: ticket) else { return false }
        storedInFlight.remove(message.rowID)
        refusedMessages.append(message)
        let delay = min(Self.retryMax, Self.retryMin * (1 << min(refusalsInARow, 6)))
        refusalsInARow = min(refusalsInARow + 1, 64)
        retryAt = max(retryAt ?? time, time + delay)
        if let loggedAt = refusalLoggedAt, time >= loggedAt, time - loggedAt < Self.refusalLogEvery {
            refusalsNotLogged += 1
        } else {
            logger.warning(
                "the broker refused a message; it stays in the outbox and is sent again",
                metadata: [
                    "topic": "\(message.topic)", "id": "\(message.messageID)", "reason_code": "0x\(String(reasonCode, radix: 16))",
                    "retry_in_ms": "\(delay.wholeMilliseconds)", "refused_since_last_line": "\(refusalsNotLogged)",
                ])
            refusalLoggedAt = time
            refusalsNotLogged = 0
        }
        wanted = true
        return true
    }

    /// Held messages were stored (`rows`, by the commit that just ended): one in flight from memory
    /// is now that row in flight, and the ones delivered from memory are done with.
    func heldStored(_ rows: [OutboxMessage]) {
        deliveredFromMemory.removeAll()
        let rowsByID = Dictionary(rows.map { ($0.messageID, $0) }, uniquingKeysWith: { first, _ in first })
        for (ticket, id) in heldByTicket {
            guard let row = rowsByID[id] else { continue }
            heldByTicket[ticket] = nil
            rowsByTicket[ticket] = row
            storedInFlight.insert(row.rowID)
        }
    }

    /// The wait for the rate limit asked for is over.
    func rateWaitOver() {
        wakeAsked = false
        wanted = true
    }

    /// Asks for a pump after the current batch of inputs.
    func want() {
        wanted = true
    }

    /// The end of a batch of inputs: pumps if asked to. Returns whether PUBACKs may wait for a
    /// later input (the engine's inbox then does not wake for them). `time` is read only for a pump.
    func batchHandled(at time: @autoclosure () -> UnitTime) -> Bool {
        pumpIfWanted(at: time)
        acknowledgementsMayWait = sending && inFlight < maxInFlight && heldByTicket.isEmpty
        return acknowledgementsMayWait
    }

    /// Before anything reads the store for someone (a control answer): what was acknowledged is
    /// marked first.
    func settle(at time: @autoclosure () -> UnitTime) {
        if !acknowledgedRows.isEmpty { wanted = true }
        pumpIfWanted(at: time)
    }

    private func pumpIfWanted(at time: () -> UnitTime) {
        guard wanted else { return }
        pump(at: time())
    }

    /// What still waits for the broker; PUBACKs not yet committed count as delivered.
    func depth() throws -> OutboxDepth {
        try store.outboxDepth(leavingOut: acknowledgedRows)
    }

    /// Inside another commit (the engine's, which stores every fix): marks what was acknowledged
    /// and packs what goes next in that same commit. Returns whether it packed anything, for
    /// `pump` to hand over once the commit is done. A failure here is undone and logged, never
    /// the engine's: its fix or reply is stored regardless, and `pump` tries again.
    func pack(in transaction: LocalCache.Transaction, at time: UnitTime) -> Bool {
        // Something packed and not handed over yet would be packed again: let `pump` do it.
        guard session != nil, packed.isEmpty else { return false }
        let free = sendableNow(transaction, at: time)
        guard free > 0 || !acknowledgedRows.isEmpty else { return false }
        let marked = acknowledgedRows.count
        let taken: Taken
        do {
            taken = try transaction.undoingOnFailure { try markAndTakeNext(transaction, limit: free, at: time) }
        } catch {
            logger.error("cannot pack the outbox with this commit; the next pump tries again", metadata: ["error": "\(error)"])
            return false
        }
        transaction.afterCommit { [self] in
            committed(marked: marked, taken)
            packed += taken.next
        }
        return !taken.next.isEmpty
    }

    /// Hands over what was packed, then marks what was acknowledged and, unless `sending` is off
    /// (shutting down), fills the free in-flight slots, in one commit.
    func pump(at time: UnitTime) {
        wanted = false
        guard let session else { return }
        let alreadyPacked = packed
        packed.removeAll()
        if sending, !hand(alreadyPacked, session: session) { return }
        // Held messages are newer than every stored alarm, reply and event: they go after those,
        // and before the positions.
        let storedGoFirst = [OutboxLane.alarm, .reply, .event].contains { store.newestRowID(in: $0) > cursors[$0] ?? 0 }
        if sending, !storedGoFirst, !handHeld(session: session) { return }
        let free = sending ? sendableNow(store, at: time) : 0
        guard free > 0 || mustMarkAcknowledged(at: time, stopping: !sending) else { return }
        var taken: Taken
        do {
            let marked = acknowledgedRows.count
            taken = try store.write { transaction in try markAndTakeNext(transaction, limit: free, at: time) }
            committed(marked: marked, taken)
        } catch {
            // A full disk: the marks wait in memory for a commit that succeeds, and what is stored
            // still goes out, read without a write.
            logger.error("cannot update the outbox; sending what is stored, PUBACKs kept in memory", metadata: ["error": "\(error)"])
            guard free > 0 else { return }
            do {
                taken = try store.read { transaction in try nextMessages(transaction, limit: free, at: time, packing: false) }
                committed(marked: 0, taken)
            } catch {
                logger.error("cannot read the outbox", metadata: ["error": "\(error)"])
                return
            }
        }
        if hand(taken.next, session: session), sending, storedGoFirst { handHeld(session: session) }
    }

    /// Hands over the held messages that are numbered, not in flight and not delivered, within the
    /// free slots. False if the connection went away under us.
    @discardableResult
    private func handHeld(session: MQTTSessionID) -> Bool {
        var slots = maxInFlight - inFlight
        guard slots > 0 else { return true }
        let handed = Set(heldByTicket.values)
        for message in held() where slots > 0 {
            guard let prepared = message.prepared, !handed.contains(prepared.id), !deliveredFromMemory.contains(prepared.id) else { continue }
            let outgoing = OutboxMessage(rowID: 0, messageID: prepared.id, topic: message.topic, lane: message.lane, qos: 1, payload: prepared.payload)
            do {
                heldByTicket[try publish(topicBase + message.topic, outgoing)] = prepared.id
                slots -= 1
            } catch {
                logger.debug("publish deferred", metadata: ["error": "\(error)", "session": "\(session)"])
                return false
            }
        }
        return true
    }

    /// What a commit took for the pump; applied to its state once committed.
    private struct Taken {
        /// To hand over now.
        var next: [OutboxMessage] = []
        /// How many of `refusedMessages`, `liveResends` and `packedAhead` are in `next`.
        var retried = 0
        var resends = 0
        var ahead = 0
        /// Packed for later, after what is left of `packedAhead`.
        var packedAhead: [OutboxMessage] = []
    }

    /// Marks what was acknowledged and reads (or packs) what goes next, in the caller's transaction.
    private func markAndTakeNext(_ transaction: LocalCache.Transaction, limit: Int, at time: UnitTime) throws -> Taken {
        try transaction.markDelivered(acknowledgedRows, at: time)
        return try nextMessages(transaction, limit: limit, at: time, packing: true)
    }

    /// A PUBACK alone is worth a commit only when shutting down, when many wait, or when no other
    /// commit came along for `ackDelay`.
    private func mustMarkAcknowledged(at time: UnitTime, stopping: Bool) -> Bool {
        guard !acknowledgedRows.isEmpty else { return false }
        let since = acknowledgedWaitingSince ?? time
        acknowledgedWaitingSince = since
        return stopping || acknowledgedRows.count >= maxInFlight || time - since >= Self.ackDelay
    }

    private func committed(marked: Int, _ taken: Taken) {
        if marked > 0 { acknowledgedRows.removeSubrange(..<marked) }
        if acknowledgedRows.isEmpty { acknowledgedWaitingSince = nil }
        if taken.retried > 0 {
            retriedRows.formUnion(refusedMessages.prefix(taken.retried).map(\.rowID))
            refusedMessages.removeSubrange(..<taken.retried)
            if refusedMessages.isEmpty { retryAt = nil }
        }
        if taken.resends > 0 { liveResends.removeSubrange(..<taken.resends) }
        if taken.ahead > 0 { packedAhead.removeSubrange(..<taken.ahead) }
        packedAhead += taken.packedAhead
    }

    /// False if the connection went away under us; `.disconnected` follows and the next session
    /// starts over.
    @discardableResult
    private func hand(_ messages: [OutboxMessage], session: MQTTSessionID) -> Bool {
        for message in messages {
            do {
                let ticket = try publish(topicBase + message.topic, message)
                rowsByTicket[ticket] = message
                cursors[message.lane] = max(cursors[message.lane] ?? 0, message.rowID)
            } catch {
                logger.debug("publish deferred", metadata: ["error": "\(error)", "session": "\(session)"])
                return false
            }
        }
        return true
    }

    /// How many to hand over now: the free slots in flight when there is work, within the rate limit.
    private func sendableNow(_ hints: some OutboxHints, at time: UnitTime) -> Int {
        let slots = max(0, maxInFlight - inFlight)
        guard slots > 0, mayHaveWork(hints, at: time) else { return 0 }
        switch allowance() {
        case .unlimited:
            return slots
        case .limited(let count, let wait):
            // Held back by the limit: a PUBACK may not come to pump again, the wake-up will.
            if count < slots, !wakeAsked {
                wakeAsked = true
                wake(wait)
            }
            return min(slots, count)
        }
    }

    /// From the hints alone: false means nothing is waiting that this session has not handed over.
    private func mayHaveWork(_ hints: some OutboxHints, at time: UnitTime) -> Bool {
        retryDue(at: time) || [OutboxLane.alarm, .reply, .event, .livePosition].contains { hints.newestRowID(in: $0) > cursors[$0] ?? 0 }
            || hints.newestRowID(in: .backfill) > backfillCursor || !packedAhead.isEmpty
            || hints.hasFreshFix || !liveResends.isEmpty || hints.hasQueuedPositions
    }

    private func retryDue(at time: UnitTime) -> Bool {
        guard let retryAt, !refusedMessages.isEmpty else { return false }
        return time >= retryAt
    }

    /// The newest backfill row handed over or packed ahead in this session.
    private var backfillCursor: Int64 {
        max(cursors[.backfill] ?? 0, packedAhead.last?.rowID ?? 0)
    }

    /// What goes next, in lane order; what it takes from `liveResends` and `packedAhead` is removed
    /// once committed. Without `packing` (a read, the store not writable) no queued fix is packed.
    private func nextMessages(_ transaction: LocalCache.Transaction, limit: Int, at time: UnitTime, packing: Bool) throws -> Taken {
        var taken = Taken()
        // Refused ones first: they are the oldest, and their backoff is over.
        var next = retryDue(at: time) ? Array(refusedMessages.prefix(limit)) : []
        taken.retried = next.count
        for lane in [OutboxLane.alarm, .reply, .event] where next.count < limit {
            let cursor = cursors[lane] ?? 0
            guard transaction.newestRowID(in: lane) > cursor else { continue }
            next += try pending(transaction, in: lane, after: cursor, limit: limit - next.count)
        }
        // Live rows made earlier in this session that are not in flight: publish failed, or
        // enqueued whole by someone else (a requested report, perhaps in this very transaction).
        // Before the fix packed now: handing that newer row first would move the lane's cursor
        // past them.
        if next.count < limit, transaction.newestRowID(in: .livePosition) > cursors[.livePosition] ?? 0 {
            next += try pending(transaction, in: .livePosition, after: cursors[.livePosition] ?? 0, limit: limit - next.count)
        }
        if packing, next.count < limit, transaction.hasFreshFix, let live = try packer.live(in: transaction, at: time) {
            next.append(live)
        }
        let resends = liveResends.prefix(limit - next.count)
        next += resends
        taken.resends = resends.count
        let ahead = packedAhead.prefix(limit - next.count)
        next += ahead
        taken.ahead = ahead.count
        // Backfill rows made earlier in this session that are not in flight (publish failed).
        let backfillAfter = max(cursors[.backfill] ?? 0, backfillCursor, next.last { $0.lane == .backfill }?.rowID ?? 0)
        if next.count < limit, transaction.newestRowID(in: .backfill) > backfillAfter {
            next += try pending(transaction, in: .backfill, after: backfillAfter, limit: limit - next.count)
        }
        // Two windows ahead, refilled once one is gone: packing reads and inserts a window or more
        // at a time. Only while sending, and never while the newest fix waits for the live lane or
        // older backfill rows wait unsent (a new session's resends): the lanes stay in order.
        let aheadLeft = packedAhead.count - ahead.count
        let sentUpTo = max(backfillCursor, next.last { $0.lane == .backfill }?.rowID ?? 0)
        let mayPackAhead = limit > 0 && !transaction.hasFreshFix && transaction.newestRowID(in: .backfill) <= sentUpTo
        let packAhead = mayPackAhead && aheadLeft <= maxInFlight ? 2 * maxInFlight - aheadLeft : 0
        let wanted = limit - next.count
        if packing, wanted + packAhead > 0, transaction.hasQueuedPositions {
            let packedNow = try packer.backfill(in: transaction, messages: wanted + packAhead, at: time)
            next += packedNow.prefix(wanted)
            taken.packedAhead = Array(packedNow.dropFirst(wanted))
        }
        taken.next = next
        return taken
    }

    /// Undelivered rows of `lane` after `cursor`, less those acknowledged and not yet marked (a new
    /// session on a full disk would send them again) and those in flight already. The cursor moves
    /// past what is left out, or to the lane's newest row when there is nothing.
    private func pending(_ transaction: LocalCache.Transaction, in lane: OutboxLane, after cursor: Int64, limit: Int) throws -> [OutboxMessage] {
        let rows = try transaction.pendingMessages(in: lane, after: cursor, limit: limit)
        guard let last = rows.last else {
            cursors[lane] = transaction.newestRowID(in: lane)
            return []
        }
        guard !acknowledgedRows.isEmpty || !storedInFlight.isEmpty else { return rows }
        let acknowledged = Set(acknowledgedRows)
        let left = rows.filter { !acknowledged.contains($0.rowID) && !storedInFlight.contains($0.rowID) }
        if left.isEmpty { cursors[lane] = max(cursors[lane] ?? 0, last.rowID) }
        return left
    }
}
