import TaxiProtocol
import UnitCore

/// Keeping the store small and free of old personal data: purging, retention and the size bound.
extension LocalCache {
    enum Counter: String {
        case thinned = "positions_thinned"
        case dropped = "positions_dropped"
    }

    static func counters(_ db: Database) throws -> [Counter: Int] {
        var counters: [Counter: Int] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT name, value FROM store_counters") {
            if let counter = Counter(rawValue: try row.decode(forColumn: "name")) { counters[counter] = try row.decode(forColumn: "value") }
        }
        return counters
    }

    static func add(_ amount: Int, to counter: Counter, _ db: Database) throws {
        guard amount > 0 else { return }
        try db.execute(
            sql: "INSERT INTO store_counters (name, value) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET value = value + excluded.value",
            arguments: [counter.rawValue, amount])
    }

    /// Positions lost while the store could not be written (disk full, read-only): counted once
    /// it can be written again.
    public func countDroppedPositions(_ amount: Int) throws {
        try write { try Self.add(amount, to: .dropped, $0.db) }
    }

    /// Removes up to `limit` delivered rows, oldest first. Small batches keep the writer free for
    /// the pump.
    @discardableResult
    public func purgeDelivered(limit: Int) throws -> Int {
        try write { transaction in
            let oldest = "SELECT id FROM outbox_acknowledged ORDER BY id LIMIT ?"
            try transaction.db.execute(sql: "DELETE FROM outbox WHERE id IN (\(oldest))", arguments: [limit])
            let purged = transaction.db.changesCount
            try transaction.db.execute(sql: "DELETE FROM outbox_acknowledged WHERE id IN (\(oldest))", arguments: [limit])
            return purged
        }
    }

    /// Privacy (`[store] retention_days`): positions, rides and jobs without a ride older than `cutoff` (unit clock)
    /// leave the history, and undelivered positions are dropped and counted. Alarms, replies and
    /// events are never dropped. Returns the undelivered positions dropped.
    @discardableResult
    public func dropPositions(createdBefore cutoff: UnitTime) throws -> Int {
        try write { transaction in
            try transaction.db.execute(sql: "DELETE FROM positions WHERE created_at < ?", arguments: [cutoff])
            try transaction.deleteRides(droppedBefore: cutoff)
            try transaction.deleteJobOutcomes(before: cutoff)
            return try transaction.dropQueuedPositions(createdBefore: cutoff)
        }
    }

    /// Bytes in pages that hold data (the file never shrinks; free pages are reused first).
    public func usedBytes() throws -> Int64 {
        try database.read { db in
            let pageSize = try Int64.fetchOne(db, sql: "PRAGMA page_size")!
            let pages = try Int64.fetchOne(db, sql: "PRAGMA page_count")!
            let free = try Int64.fetchOne(db, sql: "PRAGMA freelist_count")!
            return (pages - free) * pageSize
        }
    }

    public struct BoundOutcome: Sendable, Equatable {
        public var thinned = 0
        public var dropped = 0
        public var historyRemoved = 0
        /// Still above the bound with no position left to remove: only alarms, replies, events.
        public var stillAbove = false
    }

    /// Brings the store under `maxBytes`: first the local history (nobody waits for it), then the
    /// queued positions are thinned oldest-first keeping every `keepEvery`th, and when every
    /// queued position is already thinned the oldest are dropped. Other classes are never touched.
    /// Each round is a small commit, and the WAL is checkpointed between rounds once past half of
    /// `walBytes`: on a nearly full disk the WAL has no room to grow for a big one.
    public func enforceBound(maxBytes: Int64, walBytes: Int64 = Int64(walSizeLimit), keepEvery: Int = 4) throws -> BoundOutcome {
        var outcome = BoundOutcome()
        while try usedBytes() > maxBytes {
            try checkpointIfDue(walBytes: walBytes)
            if try removeOldestHistory(&outcome) { continue }
            if try thinOldestQueued(keepEvery: keepEvery, &outcome) { continue }
            if try dropOldestQueued(&outcome) { continue }
            outcome.stillAbove = true
            break
        }
        return outcome
    }

    /// Chunks are large enough to free whole pages, so `usedBytes` goes down.
    private static let removalChunk = 2000

    private func removeOldestHistory(_ outcome: inout BoundOutcome) throws -> Bool {
        let removed = try write { transaction in
            try transaction.db.execute(
                sql: "DELETE FROM positions WHERE id IN (SELECT id FROM positions ORDER BY id LIMIT ?)", arguments: [Self.removalChunk])
            return transaction.db.changesCount
        }
        outcome.historyRemoved += removed
        return removed > 0
    }

    /// Thins the oldest half of the not-yet-thinned queue, at most `removalChunk` rows. The kept rows are written back with
    /// their ids, so they pack into fresh pages and the pages of the removed ones become free.
    private func thinOldestQueued(keepEvery: Int, _ outcome: inout BoundOutcome) throws -> Bool {
        let removed = try write { transaction in
            let db = transaction.db
            let candidates = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM position_queue WHERE thinned = 0") ?? 0
            guard candidates >= keepEvery else { return 0 }
            let rows = try Row.fetchAll(
                db,
                sql: "SELECT id, created_at, t, lat, lon, spd, hdg, acc FROM position_queue WHERE thinned = 0 ORDER BY id LIMIT ?",
                arguments: [max(keepEvery, min(candidates / 2, Self.removalChunk))])
            let kept = rows.enumerated().filter { $0.offset % keepEvery == 0 }.map(\.element)
            try db.execute(
                sql: "DELETE FROM position_queue WHERE thinned = 0 AND id <= ?", arguments: [try rows.last?.decode(Int64.self, forColumn: "id") ?? 0])
            let insert = try db.cachedStatement(
                sql: "INSERT INTO position_queue (id, created_at, t, lat, lon, spd, hdg, acc, thinned) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 1)")
            for row in kept {
                try insert.execute(arguments: [
                    row["id"], row["created_at"], row["t"], row["lat"], row["lon"], row["spd"], row["hdg"], row["acc"],
                ])
            }
            let removed = rows.count - kept.count
            try Self.add(removed, to: .thinned, db)
            return removed
        }
        outcome.thinned += removed
        return removed > 0
    }

    private func dropOldestQueued(_ outcome: inout BoundOutcome) throws -> Bool {
        let dropped = try write { transaction in
            try transaction.db.execute(
                sql: "DELETE FROM position_queue WHERE id IN (SELECT id FROM position_queue ORDER BY id LIMIT ?)",
                arguments: [Self.removalChunk])
            let dropped = transaction.db.changesCount
            try Self.add(dropped, to: .dropped, transaction.db)
            return dropped
        }
        outcome.dropped += dropped
        return dropped > 0
    }
}

extension LocalCache.Transaction {
    /// Undelivered positions (still queued, or packed in the outbox and not acknowledged) created
    /// before `cutoff`: dropped and counted as dropped. Returns how many points.
    @discardableResult
    public func dropQueuedPositions(createdBefore cutoff: UnitTime) throws -> Int {
        try db.execute(sql: "DELETE FROM position_queue WHERE created_at < ?", arguments: [cutoff])
        var dropped = db.changesCount
        let undelivered = "class = ? AND created_at < ? AND \(LocalCache.undelivered)"
        dropped += try Int.fetchOne(
            db, sql: "SELECT COALESCE(SUM(points), 0) FROM outbox WHERE \(undelivered)", arguments: [MessageClass.position.rawValue, cutoff]) ?? 0
        try db.execute(sql: "DELETE FROM outbox WHERE \(undelivered)", arguments: [MessageClass.position.rawValue, cutoff])
        try LocalCache.add(dropped, to: .dropped, db)
        return dropped
    }

    /// Rides that ended before `cutoff` (unit clock, ms). Returns how many.
    @discardableResult
    public func deleteRides(droppedBefore cutoff: UnitTime) throws -> Int {
        try db.execute(sql: "DELETE FROM rides WHERE drop_time < ?", arguments: [cutoff])
        return db.changesCount
    }
}
