import Foundation
import GRDB
import UnitCore

/// Reading the outbox and packing queued fixes into position messages.
extension LocalCache {
    /// Undelivered rows of `lane` with an id above `cursor`, oldest first. The pump keeps the
    /// cursor, so rows it already handed over in this session are never read again.
    public func pendingMessages(in lane: OutboxLane, after cursor: Int64, limit: Int) throws -> [OutboxMessage] {
        try database.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT id, message_id, topic, lane, qos, payload FROM outbox
                    WHERE delivered_at IS NULL AND lane = ? AND id > ?
                    ORDER BY id LIMIT ?
                    """,
                arguments: [lane.rawValue, cursor, limit]
            ).map(Self.message)
        }
    }

    private static func message(_ row: Row) -> OutboxMessage {
        OutboxMessage(
            rowID: row["id"], messageID: row["message_id"], topic: row["topic"],
            lane: OutboxLane(rawValue: row["lane"]) ?? .event, qos: row["qos"], payload: [UInt8](row["payload"] as Data))
    }

    /// Packs the newest queued fix into a live message (`points` with one object, as in
    /// docs/protocol.md), so the dispatcher sees where the taxi is now before any history.
    public func formLivePosition(unit: String, topic: String, createdAt: Int64) throws -> OutboxMessage? {
        try write { transaction in
            guard let (id, point) = try Self.queuedPoints(transaction.db, newest: true, limit: 1).first else {
                transaction.notes.queueFoundEmpty = true
                return nil
            }
            try transaction.db.execute(sql: "DELETE FROM position_queue WHERE id = ?", arguments: [id])
            return try transaction.enqueue(topic: topic, lane: .livePosition, createdAt: createdAt, points: [id]) { seq, messageID in
                try Array(JSONEncoder.wire.encode(PositionMessage(unit: unit, seq: seq, id: messageID, points: [point])))
            }
        }
    }

    /// Packs the oldest queued fixes, up to `limit`, into one backfill message.
    public func formBackfill(unit: String, topic: String, limit: Int, createdAt: Int64) throws -> OutboxMessage? {
        try write { transaction in
            let queued = try Self.queuedPoints(transaction.db, newest: false, limit: limit)
            guard let last = queued.last else {
                transaction.notes.queueFoundEmpty = true
                return nil
            }
            try transaction.db.execute(sql: "DELETE FROM position_queue WHERE id <= ?", arguments: [last.id])
            return try transaction.enqueue(topic: topic, lane: .backfill, createdAt: createdAt, points: queued.map(\.id)) { seq, messageID in
                try Array(JSONEncoder.wire.encode(BackfillMessage(unit: unit, seq: seq, id: messageID, points: queued.map(\.point))))
            }
        }
    }

    private static func queuedPoints(_ db: Database, newest: Bool, limit: Int) throws -> [(id: Int64, point: PositionPoint)] {
        try Row.fetchAll(
            db,
            sql: "SELECT id, t, lat, lon, spd, hdg, acc FROM position_queue ORDER BY id \(newest ? "DESC" : "ASC") LIMIT ?",
            arguments: [limit]
        ).map { row in
            (row["id"], PositionPoint(t: row["t"], lat: row["lat"], lon: row["lon"], spd: row["spd"], hdg: row["hdg"], acc: row["acc"]))
        }
    }

    /// Undelivered live messages from earlier sessions, newest first: the first position a
    /// reconnected unit sends is the newest it has.
    public func pendingLivePositions() throws -> [OutboxMessage] {
        try database.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT id, message_id, topic, lane, qos, payload FROM outbox
                    WHERE delivered_at IS NULL AND lane = ? ORDER BY newest_point DESC
                    """,
                arguments: [OutboxLane.livePosition.rawValue]
            ).map(Self.message)
        }
    }

    /// Acknowledged by the broker: the rows stay until `purgeDelivered` removes them in small batches.
    public func markDelivered(_ rowIDs: [Int64], at time: Int64) throws {
        guard !rowIDs.isEmpty else { return }
        try write { transaction in
            let statement = try transaction.db.cachedStatement(sql: "UPDATE outbox SET delivered_at = ? WHERE id = ?")
            for rowID in rowIDs { try statement.execute(arguments: [time, rowID]) }
        }
    }

    public func outboxDepth() throws -> OutboxDepth {
        try database.read { db in
            var depth = OutboxDepth()
            for row in try Row.fetchAll(
                db, sql: "SELECT class, COUNT(*) AS messages, SUM(points) AS points FROM outbox WHERE delivered_at IS NULL GROUP BY class")
            {
                let count: Int = row["messages"]
                switch MessageClass(rawValue: row["class"]) {
                case .alarm: depth.alarm = count
                case .reply: depth.reply = count
                case .event: depth.event = count
                case .position: depth.position += row["points"] ?? 0
                case nil: break
                }
            }
            depth.position += try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM position_queue")!
            let counters = try Self.counters(db)
            depth.thinned = counters[.thinned] ?? 0
            depth.dropped = counters[.dropped] ?? 0
            return depth
        }
    }
}

extension JSONEncoder {
    /// Compact, stable key order, no escaped slashes: what goes on the wire.
    public static var wire: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }
}
