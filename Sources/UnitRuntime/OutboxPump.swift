import LocalCache
import Logging
import MQTTLink
import UnitCore

/// Moves the SQLite outbox to libmosquitto, at most `maxInFlight` messages at a time, lanes in
/// order: alarm, reply, event, the newest fix (live), then the history (backfill batches).
///
/// Which rows libmosquitto holds is kept by (session, mid); a row is only marked delivered on its
/// PUBACK. When the session ends the map is dropped, and the next session starts every lane from
/// the beginning, so every un-acknowledged row is sent again with its `id`. Within a session a
/// cursor per lane and the store's hints mean an idle pump reads nothing from SQLite. PUBACKs
/// that arrive together are marked in the same commit that fetches what goes next.
final class OutboxPump {
    typealias Publish = (_ topic: String, OutboxMessage) throws(MQTTLinkError) -> MQTTPublishTicket

    private let store: LocalCache
    private let unit: String
    /// The fleet may change these ([mqtt] topic_prefix, max_inflight, batch_max) without a reconnect.
    var topicBase: String
    var maxInFlight: Int
    var batchMax: Int
    private let logger: Logger
    private let publish: Publish

    private var session: MQTTSessionID?
    private var rowsByTicket: [MQTTPublishTicket: Int64] = [:]
    /// The highest row id handed over per lane in this session.
    private var cursors: [OutboxLane: Int64] = [:]
    /// Live messages of earlier sessions that were never acknowledged, newest first.
    private var liveResends: [OutboxMessage] = []
    /// Acknowledged rows not yet marked delivered; marked by the next `pump`.
    private var acknowledgedRows: [Int64] = []

    init(store: LocalCache, unit: String, topicBase: String, maxInFlight: Int, batchMax: Int, logger: Logger, publish: @escaping Publish) {
        self.store = store
        self.unit = unit
        self.topicBase = topicBase
        self.maxInFlight = maxInFlight
        self.batchMax = batchMax
        self.logger = logger
        self.publish = publish
    }

    var inFlight: Int { rowsByTicket.count }

    /// The rows libmosquitto holds now, for `taxiunitctl outbox`.
    var inFlightRows: Set<Int64> { Set(rowsByTicket.values) }

    func sessionStarted(_ session: MQTTSessionID) {
        self.session = session
        rowsByTicket.removeAll()
        cursors.removeAll()
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
    }

    /// True if the PUBACK was for one of our rows; it is marked delivered by the next `pump`.
    func acknowledged(_ ticket: MQTTPublishTicket) -> Bool {
        guard ticket.session == session, let rowID = rowsByTicket.removeValue(forKey: ticket) else { return false }
        acknowledgedRows.append(rowID)
        return true
    }

    /// Marks what was acknowledged and, unless `sending` is off (shutting down), fills the free
    /// in-flight slots, in one commit.
    func pump(at time: Int64, sending: Bool = true) {
        let free = sending ? maxInFlight - rowsByTicket.count : 0
        guard let session, !acknowledgedRows.isEmpty || (free > 0 && mayHaveWork) else { return }
        let next: [OutboxMessage]
        do {
            next = try store.write { transaction in
                try transaction.markDelivered(acknowledgedRows, at: time)
                return try nextMessages(transaction, limit: free, at: time)
            }
            acknowledgedRows.removeAll()
        } catch {
            logger.error("cannot update the outbox; acknowledged messages may be sent again", metadata: ["error": "\(error)"])
            if acknowledgedRows.count > 10 * maxInFlight { acknowledgedRows.removeAll() }
            return
        }
        for message in next {
            do {
                let ticket = try publish(topicBase + message.topic, message)
                rowsByTicket[ticket] = message.rowID
                cursors[message.lane] = max(cursors[message.lane] ?? 0, message.rowID)
            } catch {
                // The connection went away under us; `.disconnected` follows and the next
                // session starts over.
                logger.debug("publish deferred", metadata: ["error": "\(error)", "session": "\(session)"])
                return
            }
        }
    }

    /// From the hints alone: false means nothing is waiting that this session has not handed over.
    private var mayHaveWork: Bool {
        [OutboxLane.alarm, .reply, .event, .livePosition, .backfill].contains { store.newestRowID(in: $0) > cursors[$0] ?? 0 }
            || store.hasFreshFix || !liveResends.isEmpty || store.hasQueuedPositions
    }

    private func nextMessages(_ transaction: LocalCache.Transaction, limit: Int, at time: Int64) throws -> [OutboxMessage] {
        var next: [OutboxMessage] = []
        for lane in [OutboxLane.alarm, .reply, .event] where next.count < limit {
            let cursor = cursors[lane] ?? 0
            guard store.newestRowID(in: lane) > cursor else { continue }
            let rows = try transaction.pendingMessages(in: lane, after: cursor, limit: limit - next.count)
            if rows.isEmpty { cursors[lane] = store.newestRowID(in: lane) }
            next += rows
        }
        let topic = UnitTopic.pos.rawValue
        if next.count < limit, store.hasFreshFix, let live = try transaction.formLivePosition(unit: unit, topic: topic, createdAt: time) {
            next.append(live)
        }
        while next.count < limit, !liveResends.isEmpty {
            next.append(liveResends.removeFirst())
        }
        // Rows made earlier in this session that are not in flight: publish failed, or enqueued
        // whole by someone else (a requested report). Rows packed just now are in `next` already.
        for lane in [OutboxLane.livePosition, .backfill] where next.count < limit {
            let cursor = max(cursors[lane] ?? 0, next.last { $0.lane == lane }?.rowID ?? 0)
            guard store.newestRowID(in: lane) > cursor else { continue }
            let rows = try transaction.pendingMessages(in: lane, after: cursor, limit: limit - next.count)
            if rows.isEmpty { cursors[lane] = store.newestRowID(in: lane) }
            next += rows
        }
        if next.count < limit, store.hasQueuedPositions {
            next += try transaction.formBackfill(unit: unit, topic: topic, limit: batchMax, messages: limit - next.count, createdAt: time)
        }
        return next
    }
}
