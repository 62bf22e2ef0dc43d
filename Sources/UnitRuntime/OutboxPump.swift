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
/// cursor per lane and the store's hints mean an idle pump reads nothing from SQLite.
final class OutboxPump {
    typealias Publish = (OutboxMessage) throws(MQTTLinkError) -> MQTTPublishTicket

    private let store: LocalCache
    private let unit: String
    private let maxInFlight: Int
    private let batchMax: Int
    private let logger: Logger
    private let publish: Publish

    private var session: MQTTSessionID?
    private var rowsByTicket: [MQTTPublishTicket: Int64] = [:]
    /// The highest row id handed over per lane in this session.
    private var cursors: [OutboxLane: Int64] = [:]
    /// Live messages of earlier sessions that were never acknowledged, newest first.
    private var liveResends: [OutboxMessage] = []

    init(store: LocalCache, unit: String, maxInFlight: Int, batchMax: Int, logger: Logger, publish: @escaping Publish) {
        self.store = store
        self.unit = unit
        self.maxInFlight = maxInFlight
        self.batchMax = batchMax
        self.logger = logger
        self.publish = publish
    }

    var inFlight: Int { rowsByTicket.count }

    func sessionStarted(_ session: MQTTSessionID) {
        self.session = session
        rowsByTicket.removeAll()
        cursors.removeAll()
        do {
            // Another process (a tool, an older daemon) may have written the file meanwhile.
            try store.refreshHints()
            liveResends = try store.pendingLivePositions()
        } catch {
            logger.error("cannot read the outbox", metadata: ["error": "\(error)"])
        }
    }

    func sessionEnded() {
        session = nil
        rowsByTicket.removeAll()
    }

    /// True if the PUBACK was for one of our rows (then it is marked delivered).
    func acknowledged(_ ticket: MQTTPublishTicket, at time: Int64) -> Bool {
        guard ticket.session == session, let rowID = rowsByTicket.removeValue(forKey: ticket) else { return false }
        do {
            try store.markDelivered([rowID], at: time)
        } catch {
            logger.error("cannot mark a message delivered; it will be sent again", metadata: ["error": "\(error)"])
        }
        return true
    }

    /// Fills the free in-flight slots.
    func pump(at time: Int64) {
        guard let session else { return }
        while rowsByTicket.count < maxInFlight {
            let batch: [OutboxMessage]
            do {
                batch = try nextMessages(limit: maxInFlight - rowsByTicket.count, at: time)
            } catch {
                logger.error("cannot read the outbox", metadata: ["error": "\(error)"])
                return
            }
            guard !batch.isEmpty else { return }
            for message in batch {
                do {
                    let ticket = try publish(message)
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
    }

    private func nextMessages(limit: Int, at time: Int64) throws -> [OutboxMessage] {
        for lane in [OutboxLane.alarm, .reply, .event] {
            let cursor = cursors[lane] ?? 0
            guard store.newestRowID(in: lane) > cursor else { continue }
            let rows = try store.pendingMessages(in: lane, after: cursor, limit: limit)
            if !rows.isEmpty { return rows }
            cursors[lane] = store.newestRowID(in: lane)
        }
        let topic = UnitTopic.pos.rawValue
        if store.hasFreshFix, let live = try store.formLivePosition(unit: unit, topic: topic, createdAt: time) {
            return [live]
        }
        if !liveResends.isEmpty {
            return [liveResends.removeFirst()]
        }
        let cursor = cursors[.backfill] ?? 0
        if store.newestRowID(in: .backfill) > cursor {
            let rows = try store.pendingMessages(in: .backfill, after: cursor, limit: limit)
            if !rows.isEmpty { return rows }
            cursors[.backfill] = store.newestRowID(in: .backfill)
        }
        if store.hasQueuedPositions, let batch = try store.formBackfill(unit: unit, topic: topic, limit: batchMax, createdAt: time) {
            return [batch]
        }
        return []
    }
}
