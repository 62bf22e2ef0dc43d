import TaxiProtocol
import UnitCore

/// Reading the outbox and taking queued fixes out for the pump, which packs them into messages.
/// These run inside one `write` so the pump marks what the broker acknowledged and fetches what
/// goes next in a single commit. The store keeps rows and bytes; the wire format is the pump's.
extension LocalCache.Transaction {
    /// Undelivered rows of `lane` with an id above `cursor`, oldest first. The pump keeps the
    /// cursor, so rows it already handed over in this session are never read again.
    public func pendingMessages(in lane: OutboxLane, after cursor: Int64, limit: Int) throws -> [OutboxMessage] {
        let rows = try Row.fetchAll(
            db.cachedStatement(sql: """
                SELECT id, message_id, topic, lane, qos, payload FROM outbox
                WHERE lane = ? AND id > ? AND \(LocalCache.undelivered)
                ORDER BY id LIMIT ?
                """),
            arguments: [lane.rawValue, cursor, limit])
        var messages: [OutboxMessage] = []
        for row in rows {
            do {
                messages.append(try LocalCache.message(row))
            } catch {
                // A row no release wrote this way cannot be sent; retrying it would wedge its lane.
                try setAsideOutboxRow(try row.decode(Int64.self, atIndex: 0), reason: "unreadable: \(error)")
            }
        }
        return messages
    }

    /// Takes the newest queued point out of the queue, for a live message. Nil when there is none
    /// (an unusable newest row is deleted; the next call looks again).
    public func takeNewestQueuedPoint() throws -> (id: Int64, point: PositionPoint)? {
        let newest = try queuedPoints(newest: true, limit: 1)
        if let refusedID = newest.lastID, newest.ids.isEmpty {
            try db.cachedStatement(sql: "DELETE FROM position_queue WHERE id = ?").execute(arguments: [refusedID])
        }
        guard let id = newest.ids.first, let point = newest.points.first else {
            notes.queueFoundEmpty = newest.lastID == nil
            return nil
        }
        try db.cachedStatement(sql: "DELETE FROM position_queue WHERE id = ?").execute(arguments: [id])
        return (id, point)
    }

    /// Takes up to `limit` of the oldest queued points out of the queue, oldest first, reading and
    /// deleting them in one go.
    public func takeOldestQueuedPoints(limit: Int) throws -> (ids: [Int64], points: [PositionPoint]) {
        let queued = try queuedPoints(newest: false, limit: limit)
        guard let last = queued.lastID else {
            notes.queueFoundEmpty = true
            return ([], [])
        }
        try db.cachedStatement(sql: "DELETE FROM position_queue WHERE id <= ?").execute(arguments: [last])
        return (queued.ids, queued.points)
    }

    /// Read straight from the statement: no row copied per point of a 500-point read. A row that is
    /// not a usable point (written by hand, or by a release that checked less) is left out and
    /// counted as dropped; `lastID` still covers it, so it is deleted with the rest.
    private func queuedPoints(newest: Bool, limit: Int) throws -> (ids: [Int64], points: [PositionPoint], lastID: Int64?) {
        let statement = try db.cachedStatement(
            sql: "SELECT id, t, lat, lon, spd, hdg, acc FROM position_queue ORDER BY id \(newest ? "DESC" : "ASC") LIMIT ?")
        var ids: [Int64] = []
        var points: [PositionPoint] = []
        var lastID: Int64?
        var refused = 0
        ids.reserveCapacity(limit)
        points.reserveCapacity(limit)
        try statement.forEachRow(arguments: [limit]) { columns in
            let id = try Self.required(columns.int64(at: 0), "id")
            lastID = newest ? (lastID ?? id) : id
            guard let point = try Self.point(columns) else {
                refused += 1
                return
            }
            ids.append(id)
            points.append(point)
        }
        if refused > 0 { try LocalCache.add(refused, to: .dropped, db) }
        return (ids, points, lastID)
    }

    /// Read the fast way, as SQLite converts: text where a number belongs reads as 0 (a time of 0 is
    /// refused; checking each value's storage class in SQL tripled the drain's cost, bench/README.md).
    private static func point(_ columns: StatementColumns) throws -> PositionPoint? {
        PositionPoint(
            t: try required(columns.int64(at: 1), "t"), lat: try required(columns.double(at: 2), "lat"),
            lon: try required(columns.double(at: 3), "lon"), spd: columns.double(at: 4), hdg: columns.double(at: 5), acc: columns.double(at: 6)
        ).sanitised
    }

    /// A NOT NULL column of `position_queue` that read NULL: no release wrote such a row.
    private static func required<T>(_ value: T?, _ column: String) throws -> T {
        guard let value else { throw DatabaseError(resultCode: DatabaseError.mismatch, message: "position_queue.\(column) is NULL") }
        return value
    }

    /// Acknowledged by the broker: the rows stay until `purgeDelivered` removes them in small batches.
    public func markDelivered(_ rowIDs: [Int64], at time: UnitTime) throws {
        let insert = try db.cachedStatement(sql: "INSERT OR IGNORE INTO outbox_acknowledged (id, at) VALUES (?, ?)")
        for rowID in rowIDs { try insert.execute(arguments: [rowID, time]) }
    }
}

extension LocalCache {
    static func message(_ row: Row) throws -> OutboxMessage {
        let qos: Int32 = try row.decode(atIndex: 4)
        guard qos == 0 || qos == 1 else { throw DatabaseError(resultCode: DatabaseError.mismatch, message: "qos \(qos)") }
        return OutboxMessage(
            rowID: try row.decode(atIndex: 0), messageID: try row.decode(atIndex: 1), topic: try row.decode(atIndex: 2),
            lane: OutboxLane(rawValue: try row.decode(atIndex: 3)) ?? .event, qos: qos, payload: try row.decode(atIndex: 5))
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

    /// What still waits for the broker; `acknowledged` rows (marked by the pump's next commit) do not.
    public func outboxDepth(leavingOut acknowledged: [Int64] = []) throws -> OutboxDepth {
        let acknowledged = "[" + acknowledged.map(String.init).joined(separator: ",") + "]"
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
                let count: Int = (try row.decode(forColumn: "messages"))
                switch MessageClass(rawValue: (try row.decode(forColumn: "class"))) {
                case .alarm: depth.alarm = count
                case .reply: depth.reply = count
                case .event: depth.event = count
                case .position: depth.position += (try row.decode(forColumn: "points")) ?? 0
                case nil: break
                }
            }
            depth.position += try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM position_queue") ?? 0
            let counters = try Self.counters(db)
            depth.thinned = counters[.thinned] ?? 0
            depth.dropped = counters[.dropped] ?? 0
            return depth
        }
    }
}
