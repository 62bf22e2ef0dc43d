import Foundation
import GRDB
import UnitCore

/// Reading the outbox and packing queued fixes into position messages. These run inside one
/// `write` so the pump marks what the broker acknowledged and fetches what goes next in a single
/// commit.
extension LocalCache.Transaction {
    /// Undelivered rows of `lane` with an id above `cursor`, oldest first. The pump keeps the
    /// cursor, so rows it already handed over in this session are never read again.
    public func pendingMessages(in lane: OutboxLane, after cursor: Int64, limit: Int) throws -> [OutboxMessage] {
        try Row.fetchAll(
            db.cachedStatement(sql: """
                SELECT id, message_id, topic, lane, qos, payload FROM outbox
                WHERE lane = ? AND id > ? AND \(LocalCache.undelivered)
                ORDER BY id LIMIT ?
                """),
            arguments: [lane.rawValue, cursor, limit]
        ).map(LocalCache.message)
    }

    /// Packs the newest queued fix into a live message (`points` with one object, as in
    /// docs/protocol.md), so the dispatcher sees where the taxi is now before any history.
    public func formLivePosition(unit: String, topic: String, createdAt: Int64) throws -> OutboxMessage? {
        let newest = try queuedPoints(newest: true, limit: 1)
        guard let id = newest.ids.first, let point = newest.points.first else {
            notes.queueFoundEmpty = true
            return nil
        }
        try db.cachedStatement(sql: "DELETE FROM position_queue WHERE id = ?").execute(arguments: [id])
        return try enqueue(topic: topic, lane: .livePosition, createdAt: createdAt, pointCount: 1, newestPoint: id) { seq, messageID in
            try PositionMessage(unit: unit, seq: seq, id: messageID, points: [point]).json()
        }
    }

    /// Packs the oldest queued fixes into up to `messages` backfill messages of up to `limit`
    /// points each, oldest first, reading and deleting them in one go.
    public func formBackfill(unit: String, topic: String, limit: Int, messages: Int = 1, createdAt: Int64) throws -> [OutboxMessage] {
        let queued = try queuedPoints(newest: false, limit: limit * messages)
        guard let last = queued.ids.last else {
            notes.queueFoundEmpty = true
            return []
        }
        try db.cachedStatement(sql: "DELETE FROM position_queue WHERE id <= ?").execute(arguments: [last])
        let starts = stride(from: 0, to: queued.ids.count, by: limit)
        let firstSeq = try reserveSequence(for: topic, count: starts.underestimatedCount)
        return try starts.enumerated().map { index, start in
            let end = min(start + limit, queued.ids.count)
            return try enqueue(
                topic: topic, lane: .backfill, createdAt: createdAt, firstSeq: firstSeq + Int64(index), pointCount: end - start,
                newestPoint: queued.ids[end - 1]
            ) { seq, messageID in
                BackfillMessage.writeJSON(unit: unit, seq: seq, id: messageID, points: queued.points[start..<end])
            }
        }
    }

    /// Read through a cursor: one reused row instead of a copied `Row` per point of a 500-point read.
    private func queuedPoints(newest: Bool, limit: Int) throws -> (ids: [Int64], points: [PositionPoint]) {
        let rows = try Row.fetchCursor(
            db.cachedStatement(
                sql: newest
                    ? "SELECT id, t, lat, lon, spd, hdg, acc FROM position_queue ORDER BY id DESC LIMIT ?"
                    : "SELECT id, t, lat, lon, spd, hdg, acc FROM position_queue ORDER BY id ASC LIMIT ?"),
            arguments: [limit])
        var ids: [Int64] = []
        var points: [PositionPoint] = []
        ids.reserveCapacity(limit)
        points.reserveCapacity(limit)
        while let row = try rows.next() {
            ids.append(row[0])
            points.append(PositionPoint(t: row[1], lat: row[2], lon: row[3], spd: row[4], hdg: row[5], acc: row[6]))
        }
        return (ids, points)
    }

    /// Acknowledged by the broker: the rows stay until `purgeDelivered` removes them in small batches.
    public func markDelivered(_ rowIDs: [Int64], at time: Int64) throws {
        let insert = try db.cachedStatement(sql: "INSERT OR IGNORE INTO outbox_acknowledged (id, at) VALUES (?, ?)")
        for rowID in rowIDs { try insert.execute(arguments: [rowID, time]) }
    }
}

extension LocalCache {
    static func message(_ row: Row) -> OutboxMessage {
        OutboxMessage(
            rowID: row[0], messageID: row[1], topic: row[2], lane: OutboxLane(rawValue: row[3]) ?? .event, qos: row[4],
            payload: [UInt8](row[5] as Data))
    }

    /// Undelivered live messages from earlier sessions, newest first: the first position a
    /// reconnected unit sends is the newest it has.
    public func pendingLivePositions() throws -> [OutboxMessage] {
        try database.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT id, message_id, topic, lane, qos, payload FROM outbox
                    WHERE lane = ? AND \(Self.undelivered) ORDER BY newest_point DESC
                    """,
                arguments: [OutboxLane.livePosition.rawValue]
            ).map(Self.message)
        }
    }

    /// What still waits for the broker: rows in `acknowledgedAwaitingCommit` do not.
    public func outboxDepth() throws -> OutboxDepth {
        let acknowledged = "[" + acknowledgedAwaitingCommit.map(String.init).joined(separator: ",") + "]"
        return try database.read { db in
            var depth = OutboxDepth()
            for row in try Row.fetchAll(
                db,
                sql: """
                    SELECT class, COUNT(*) AS messages, SUM(points) AS points FROM outbox
                    WHERE \(Self.undelivered) AND id NOT IN (SELECT value FROM json_each(?))
                    GROUP BY class
                    """,
                arguments: [acknowledged])
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
    /// Compact, stable key order, no escaped slashes: what goes on the wire. One shared encoder
    /// (its options never change after this), not a new one per message.
    public static let wire: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()
}
