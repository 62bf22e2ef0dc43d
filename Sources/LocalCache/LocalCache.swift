#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Synchronization
import TaxiProtocol
import UnitCore

/// One queued outgoing message. It leaves the outbox only when the broker acknowledged it.
public struct OutboxMessage: Sendable, Equatable {
    public var rowID: Int64
    public var messageID: String
    /// Suffix below the unit's topic base, e.g. `pos`.
    public var topic: String
    public var lane: OutboxLane
    public var qos: Int32
    public var payload: [UInt8]

    public init(rowID: Int64, messageID: String, topic: String, lane: OutboxLane, qos: Int32, payload: [UInt8]) {
        self.rowID = rowID
        self.messageID = messageID
        self.topic = topic
        self.lane = lane
        self.qos = qos
        self.payload = payload
    }
}

/// An outbox row as `taxiunitctl outbox` lists it.
public struct OutboxEntry: Sendable, Equatable {
    public var rowID: Int64
    public var messageID: String
    public var topic: String
    public var messageClass: MessageClass
    public var createdAt: UnitTime
}

/// The order the pump serves the outbox in: a lower lane always goes first. Positions have two
/// lanes so that the newest fix overtakes the history (docs/protocol.md).
public enum OutboxLane: Int, Sendable, CaseIterable, Comparable {
    case alarm, reply, event, livePosition, backfill

    /// A position message enqueued whole (a report the fleet asked for) is news: live lane.
    public init(_ messageClass: MessageClass) {
        switch messageClass {
        case .alarm: self = .alarm
        case .reply: self = .reply
        case .event: self = .event
        case .position: self = .livePosition
        }
    }

    public var messageClass: MessageClass {
        switch self {
        case .alarm: .alarm
        case .reply: .reply
        case .event: .event
        case .livePosition, .backfill: .position
        }
    }

    public static func < (lhs: OutboxLane, rhs: OutboxLane) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// How hard a write transaction insists on reaching the disk before it returns.
public enum Durability: Sendable {
    /// WAL with synchronous=NORMAL: survives a crash of the daemon, may lose the last commits on power loss.
    case normal
    /// synchronous=FULL for this transaction: on disk before anyone is told it was sent.
    case full

    /// Alarms and replies are promises to a person; events and positions may lose the last
    /// second on a power cut.
    public init(for messageClass: MessageClass) {
        self = messageClass <= .reply ? .full : .normal
    }
}

/// What the outbox pump asks before it reads anything: answered from memory.
public protocol OutboxHints {
    /// The newest undelivered row of `lane` (0 if none) as far as this process knows.
    func newestRowID(in lane: OutboxLane) -> Int64
    /// True when a queued fix is newer than every fix already sent on the live lane.
    var hasFreshFix: Bool { get }
    /// False once packing found the queue empty, until the next fix is queued.
    var hasQueuedPositions: Bool { get }
}

/// The unit's SQLite file: position history, the outbox, the positions waiting to be sent,
/// per-topic sequence numbers and the state machine's snapshot. Everything the unit promised to
/// send is here before it is sent.
public final class LocalCache: OutboxHints, Sendable {
    let database: DatabasePool
    /// A file the unit could not open and moved aside at start (it failed `PRAGMA quick_check`, or a
    /// newer release wrote it), where it went and why, for the daemon to report.
    public let fileSetAside: SetAsideFile?

    public struct SetAsideFile: Sendable {
        public enum Cause: Sendable { case corrupt, newerRelease }
        public var path: String
        public var cause: Cause
        public var reason: String
    }

    /// Migrations the file has that this release does not know: a newer release wrote it.
    struct NewerStore: Error, CustomStringConvertible {
        var unknownMigrations: [String]
        var description: String { "written by a newer release (migrations \(unknownMigrations.joined(separator: ", ")))" }
    }

    /// What the pump needs to know without querying. Updated after each commit, so another
    /// process writing the file is only noticed by `refreshHints()`.
    private let bookkeeping = Mutex<(hints: Hints, commitsSinceCheckpoint: Int)>((Hints(), 0))

    /// Commits between two checkpoints: one fix a second makes a checkpoint every few minutes,
    /// about as often as SQLite's default of 1000 pages did.
    public static let commitsPerCheckpoint = 250
    public static let walSizeLimit = 4 * 1024 * 1024

    /// SQL: an outbox row the broker has not acknowledged. Acknowledged rows stay until
    /// `purgeDelivered` removes them with their `outbox_acknowledged` row.
    static let undelivered = "id NOT IN (SELECT id FROM outbox_acknowledged)"

    /// The newest undelivered row per lane and the newest queued point, as far as this process knows.
    struct Hints {
        var newestRow = [Int64](repeating: 0, count: OutboxLane.allCases.count)
        var newestQueuedPointID: Int64 = 0
        var newestLivePointID: Int64 = 0
        var queueMayHavePoints = true

        /// What a transaction added, on top of what was there.
        mutating func apply(_ notes: CommitNotes) {
            for (lane, row) in notes.rows { newestRow[lane.rawValue] = max(newestRow[lane.rawValue], row) }
            if let point = notes.queuedPoint {
                newestQueuedPointID = max(newestQueuedPointID, point)
                queueMayHavePoints = true
            }
            if let point = notes.livePoint { newestLivePointID = max(newestLivePointID, point) }
            if notes.queueFoundEmpty {
                newestLivePointID = max(newestLivePointID, newestQueuedPointID)
                queueMayHavePoints = false
            }
        }

        var hasFreshFix: Bool { newestQueuedPointID > newestLivePointID }
    }

    public init(path: String) throws {
        if let slash = path.lastIndex(of: "/"), slash != path.startIndex {
            let directory = String(path[..<slash])
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        }
        // A file that fails its check, is not a database at all, or was written by a newer release
        // (whose writes this one would fail on, or silently misread): keep it for a post-mortem or a
        // downgrade back, start empty, and let the daemon say so loudly. Other errors (permissions,
        // a locked file) are no reason to set a good database aside.
        func moveAside(_ cause: SetAsideFile.Cause, _ error: Error) throws -> SetAsideFile {
            guard FileManager.default.fileExists(atPath: path) else { throw error }
            let aside = path + (cause == .corrupt ? ".corrupt-" : ".newer-") + Self.timestamp()
            for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: path + suffix) {
                try FileManager.default.moveItem(atPath: path + suffix, toPath: aside + suffix)
            }
            return SetAsideFile(path: aside, cause: cause, reason: "\(error)")
        }
        do {
            database = try Self.openChecked(path: path)
            fileSetAside = nil
        } catch let error as DatabaseError where [DatabaseError.corrupt, DatabaseError.notADatabase].contains(error.resultCode) {
            let aside = try moveAside(.corrupt, error)
            database = try Self.openChecked(path: path)
            fileSetAside = aside
        } catch let error as NewerStore {
            let aside = try moveAside(.newerRelease, error)
            database = try Self.openChecked(path: path)
            fileSetAside = aside
        }
        try refreshHints()
    }

    /// Per connection, in KiB (a negative `cache_size`). SQLite's default is 2 MiB for each of the
    /// pool's connections; the daemon's statements touch the tails of a few tables, and the kernel's
    /// page cache holds the file anyway (bench/README.md, "Memory").
    static let cacheSizePragma = -256

    private static func openChecked(path: String) throws -> DatabasePool {
        // No checkpoint inside a commit: a drain would wait for its copying and fsync several
        // times. `checkpointIfDue()`, from the upkeep tick, does it instead; the WAL file is cut
        // back to `walSizeLimit` once it starts over (the upkeep lowers it to the store's budget).
        let pool = try DatabasePool(path: path) { db in
            try db.execute(sql: """
                PRAGMA cache_size = \(cacheSizePragma);
                PRAGMA wal_autocheckpoint = 0;
                PRAGMA journal_size_limit = \(walSizeLimit)
                """)
        }
        let verdict = try pool.read { db in try String.fetchAll(db, sql: "PRAGMA quick_check") }
        guard verdict == ["ok"] else {
            throw DatabaseError(resultCode: DatabaseError.corrupt, message: "quick_check: \(verdict.prefix(3).joined(separator: "; "))")
        }
        let migrator = Self.migrator
        let unknown = try pool.read { db in try migrator.appliedIdentifiers(db).subtracting(migrator.migrations) }
        guard unknown.isEmpty else { throw NewerStore(unknownMigrations: unknown.sorted()) }
        try migrator.migrate(pool)
        // The check read every page through one reader's cache.
        pool.releaseMemory()
        return pool
    }

    /// UTC, to the second: `20261127T120000Z`.
    private static func timestamp() -> String {
        Date().formatted(Date.ISO8601FormatStyle(dateSeparator: .omitted, timeSeparator: .omitted))
    }

    /// Runs `body` in one transaction. `.full` makes this commit fsync'd whatever the pool's default
    /// (synchronous=NORMAL on the writer, `DatabasePool`).
    ///
    /// Every statement here and in `Transaction` is a cached prepared statement: the pump commits
    /// once per fix and per PUBACK batch, and compiling the SQL again each time cost more than
    /// running it.
    ///
    /// A commit the filesystem has no room for (SQLITE_FULL) is tried once more after a checkpoint:
    /// the WAL then starts over inside its own file, which is the room a full disk still leaves.
    @discardableResult
    public func write<T>(_ durability: Durability = .normal, _ body: (Transaction) throws -> T) throws -> T {
        do {
            return try writeOnce(durability, body)
        } catch let error as DatabaseError where error.resultCode == DatabaseError.full {
            guard (try? database.writeWithoutTransaction({ db in try db.checkpoint(.passive) })) != nil else { throw error }
            return try writeOnce(durability, body)
        }
    }

    private func writeOnce<T>(_ durability: Durability, _ body: (Transaction) throws -> T) throws -> T {
        let notes = CommitNotes()
        let result: T = try database.writeWithoutTransaction { db in
            if durability == .full { try db.cachedStatement(sql: "PRAGMA synchronous = FULL").execute() }
            defer { if durability == .full { try? db.cachedStatement(sql: "PRAGMA synchronous = NORMAL").execute() } }
            try db.cachedStatement(sql: "BEGIN IMMEDIATE TRANSACTION").execute()
            do {
                let result = try body(Transaction(db: db, notes: notes, cache: self))
                try db.cachedStatement(sql: "COMMIT TRANSACTION").execute()
                return result
            } catch {
                // SQLite may have rolled back already (disk full, I/O error).
                try? db.rollbackIfInsideTransaction()
                throw error
            }
        }
        note(notes)
        return result
    }

    /// Runs `body` on a snapshot, through the same statements as a write's: for the pump when the
    /// store cannot be written (a full disk), which still sends what is stored. Whatever `body`
    /// tries to write fails.
    public func read<T>(_ body: (Transaction) throws -> T) throws -> T {
        try database.read { db in try body(Transaction(db: db, notes: CommitNotes(), cache: self)) }
    }

    /// A message id as the store gives them, for a message numbered before it is stored.
    public static func newMessageID(at createdAt: UnitTime) -> String { MessageID.timeOrdered(at: createdAt) }

    /// The last sequence number `topic` has given (0 before its first message).
    public func lastSequence(of topic: String) throws -> Int64 {
        try database.read { db in
            try Int64.fetchOne(db, sql: "SELECT last_seq FROM topic_sequence WHERE topic = ?", arguments: [topic]) ?? 0
        }
    }

    /// What a transaction added, for the hints, and what to do once it is committed.
    final class CommitNotes {
        var rows: [OutboxLane: Int64] = [:]
        var queuedPoint: Int64?
        var livePoint: Int64?
        /// Nothing to pack after the last point queued in this transaction: no query until the next fix is queued.
        var queueFoundEmpty = false
        var afterCommit: [() -> Void] = []
    }

    private func note(_ notes: CommitNotes) {
        bookkeeping.withLock {
            $0.hints.apply(notes)
            $0.commitsSinceCheckpoint += 1
        }
        for action in notes.afterCommit { action() }
    }

    /// Copies the WAL into the database file once `commitsPerCheckpoint` commits have gone by, or
    /// once something was committed and the WAL file takes more than `walBytes / 2` (PASSIVE: never
    /// waits for a reader). The next commit then starts the WAL over from its beginning, reusing
    /// the file's room instead of asking the filesystem for more, and cuts the file back to its
    /// limit (`limitWAL`, half the share: a file past it has grown since). Returns whether it ran.
    @discardableResult
    public func checkpointIfDue(walBytes: Int64 = Int64(walSizeLimit)) throws -> Bool {
        let commits = bookkeeping.withLock { $0.commitsSinceCheckpoint }
        guard commits >= Self.commitsPerCheckpoint || (commits > 0 && walFileBytes() > walBytes / 2) else { return false }
        try database.writeWithoutTransaction { db in _ = try db.checkpoint(.passive) }
        bookkeeping.withLock { $0.commitsSinceCheckpoint = 0 }
        return true
    }

    /// The WAL file is cut back to `bytes` whenever it starts over (`journal_size_limit`; only the
    /// writer's connection writes it).
    public func limitWAL(toBytes bytes: Int64) throws {
        try database.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA journal_size_limit = \(bytes)") }
    }

    /// The database file's path: its WAL and shared-memory index are beside it.
    public var path: String { database.path }

    /// What the database file, its WAL and its shared-memory index take on disk.
    public func fileBytes() -> Int64 {
        ["", "-wal", "-shm"].reduce(Int64(0)) { $0.saturatingAdd(Self.size(of: database.path + $1)) }
    }

    /// The WAL file's size: it holds every commit since it last started over.
    public func walFileBytes() -> Int64 { Self.size(of: database.path + "-wal") }

    /// Re-reads the hints from the file (at start, and when a new broker session starts).
    public func refreshHints() throws {
        let hints = try database.read { db in
            var hints = Hints()
            for row in try Row.fetchAll(db, sql: "SELECT lane, MAX(id) AS newest FROM outbox WHERE \(Self.undelivered) GROUP BY lane") {
                if let lane = OutboxLane(rawValue: (try row.decode(forColumn: "lane"))) { hints.newestRow[lane.rawValue] = (try row.decode(forColumn: "newest")) }
            }
            hints.newestQueuedPointID = try Int64.fetchOne(db, sql: "SELECT MAX(id) FROM position_queue") ?? 0
            hints.newestLivePointID = try Int64.fetchOne(
                db, sql: "SELECT MAX(newest_point) FROM outbox WHERE lane = ?", arguments: [OutboxLane.livePosition.rawValue]) ?? 0
            return hints
        }
        bookkeeping.withLock { $0.hints = hints }
    }

    private var hints: Hints { bookkeeping.withLock { $0.hints } }

    public func newestRowID(in lane: OutboxLane) -> Int64 { hints.newestRow[lane.rawValue] }
    public var hasFreshFix: Bool { hints.hasFreshFix }
    public var hasQueuedPositions: Bool { hints.queueMayHavePoints }

    /// As hints, it also counts what it added so far, so a pump packing inside someone else's
    /// transaction sees the fix that was just queued.
    public struct Transaction: OutboxHints {
        let db: Database
        let notes: CommitNotes
        let cache: LocalCache

        private var hints: Hints {
            var hints = cache.hints
            hints.apply(notes)
            return hints
        }

        public func newestRowID(in lane: OutboxLane) -> Int64 { hints.newestRow[lane.rawValue] }
        public var hasFreshFix: Bool { hints.hasFreshFix }
        public var hasQueuedPositions: Bool { hints.queueMayHavePoints }

        /// Runs `action` once this transaction is committed (never if it is rolled back).
        public func afterCommit(_ action: @escaping () -> Void) {
            notes.afterCommit.append(action)
        }

        /// Runs `body` in a savepoint: if it throws, what it wrote is undone and the rest of the
        /// transaction still commits. For work that must not cost someone else's commit.
        public func undoingOnFailure<T>(_ body: () throws -> T) throws -> T {
            try db.cachedStatement(sql: "SAVEPOINT undoable").execute()
            do {
                let result = try body()
                try db.cachedStatement(sql: "RELEASE SAVEPOINT undoable").execute()
                return result
            } catch {
                try db.cachedStatement(sql: "ROLLBACK TO SAVEPOINT undoable").execute()
                try db.cachedStatement(sql: "RELEASE SAVEPOINT undoable").execute()
                throw error
            }
        }

        /// The local history: every valid fix, reported or not. `createdAt` (unit clock) decides
        /// retention, because the receiver's clock may be anything.
        public func insertPosition(_ fix: Fix, createdAt: UnitTime) throws {
            try db.cachedStatement(sql: "INSERT INTO positions (t, lat, lon, spd, hdg, acc, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)")
                .execute(arguments: [fix.time, fix.latitude, fix.longitude, fix.speed, fix.track, fix.accuracy, createdAt])
        }

        /// Queues a fix for `pos`; the pump decides whether it goes live or in a backfill batch.
        public func queuePosition(_ fix: Fix, createdAt: UnitTime) throws {
            try db.cachedStatement(sql: "INSERT INTO position_queue (created_at, t, lat, lon, spd, hdg, acc) VALUES (?, ?, ?, ?, ?, ?, ?)")
                .execute(arguments: [createdAt, fix.time, fix.latitude, fix.longitude, fix.speed, fix.track, fix.accuracy])
            notes.queuedPoint = db.lastInsertedRowID
            notes.queueFoundEmpty = false
        }

        /// Queues a message. `encode` receives the topic's next sequence number and a new message id
        /// (unique forever, so the dispatcher can drop duplicates) and returns the payload.
        @discardableResult
        public func enqueue(
            topic: String, messageClass: MessageClass, qos: Int32 = 1, createdAt: UnitTime,
            encode: (_ seq: Int64, _ messageID: String) throws -> [UInt8]
        ) throws -> Int64 {
            try enqueue(
                topic: topic, lane: OutboxLane(messageClass), qos: qos, createdAt: createdAt,
                pointCount: messageClass == .position ? 1 : 0, newestPoint: nil, encode: encode
            ).rowID
        }

        /// `newestPoint`: the newest `position_queue` id packed into the message, if any.
        public func enqueue(
            topic: String, lane: OutboxLane, qos: Int32 = 1, createdAt: UnitTime, pointCount: Int, newestPoint: Int64?,
            encode: (_ seq: Int64, _ messageID: String) throws -> [UInt8]
        ) throws -> OutboxMessage {
            try enqueue(
                topic: topic, lane: lane, qos: qos, createdAt: createdAt, firstSeq: try reserveSequence(for: topic, count: 1),
                pointCount: pointCount, newestPoint: newestPoint, encode: encode)
        }

        /// `firstSeq`: a sequence number reserved with `reserveSequence`. `messageID`: one given
        /// before (`LocalCache.newMessageID`); nil makes a new one.
        public func enqueue(
            topic: String, lane: OutboxLane, qos: Int32 = 1, createdAt: UnitTime, firstSeq seq: Int64, pointCount: Int, newestPoint: Int64?,
            messageID: String? = nil, encode: (_ seq: Int64, _ messageID: String) throws -> [UInt8]
        ) throws -> OutboxMessage {
            let messageID = messageID ?? MessageID.timeOrdered(at: createdAt)
            let payload = try encode(seq, messageID)
            try db.cachedStatement(sql: """
                INSERT INTO outbox (message_id, topic, class, lane, qos, payload, created_at, points, newest_point)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                """
            ).execute(
                arguments: [messageID, topic, lane.messageClass.rawValue, lane.rawValue, qos, payload, createdAt, pointCount, newestPoint]
            )
            let rowID = db.lastInsertedRowID
            notes.rows[lane] = rowID
            if lane == .livePosition, let newestPoint { notes.livePoint = newestPoint }
            return OutboxMessage(rowID: rowID, messageID: messageID, topic: topic, lane: lane, qos: qos, payload: payload)
        }

        /// Stores a message numbered and encoded before the store took it (it may have been published
        /// from memory meanwhile): its `seq` and `id` stay, and the topic's sequence moves past `seq`.
        public func enqueue(
            topic: String, lane: OutboxLane, qos: Int32 = 1, createdAt: UnitTime, seq: Int64, messageID: String, payload: [UInt8]
        ) throws -> OutboxMessage {
            try advanceSequence(of: topic, to: seq)
            return try enqueue(
                topic: topic, lane: lane, qos: qos, createdAt: createdAt, firstSeq: seq, pointCount: 0, newestPoint: nil, messageID: messageID
            ) { _, _ in payload }
        }

        /// The topic's next sequence number is above `seq` (a message that took it was published
        /// from memory and never stored).
        public func advanceSequence(of topic: String, to seq: Int64) throws {
            try db.cachedStatement(sql: """
                INSERT INTO topic_sequence (topic, last_seq) VALUES (?, ?)
                ON CONFLICT(topic) DO UPDATE SET last_seq = MAX(last_seq, excluded.last_seq)
                """
            ).execute(arguments: [topic, seq])
        }

        /// Reserves `count` consecutive sequence numbers of `topic` in one statement; returns the first.
        public func reserveSequence(for topic: String, count: Int) throws -> Int64 {
            let reserved = try Int64.fetchOne(
                db.cachedStatement(sql: """
                    INSERT INTO topic_sequence (topic, last_seq) VALUES (?, ?)
                    ON CONFLICT(topic) DO UPDATE SET last_seq = last_seq + excluded.last_seq
                    RETURNING last_seq
                    """),
                arguments: [topic, count])
            // An upsert with RETURNING always returns its row; a sequence run out of numbers is a
            // store no release wrote.
            guard let last = reserved, last >= Int64(count) else {
                throw DatabaseError(resultCode: DatabaseError.corrupt, message: "topic_sequence for \(topic) is \(reserved.map(String.init) ?? "missing")")
            }
            return last - Int64(count) + 1
        }

        /// Sorted keys: the same value is stored as the same bytes in every process (the encoder's
        /// default order follows hashing, which is seeded per process).
        public func saveValue<T: Encodable>(_ value: T, forKey key: String) throws {
            let encoder = JSONEncoder()
            encoder.outputFormatting = .sortedKeys
            let encoded = try encoder.encode(value)
            try db.execute(
                sql: "INSERT INTO unit_state (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                arguments: [key, encoded]
            )
        }

        public func removeValue(forKey key: String) throws {
            try db.execute(sql: "DELETE FROM unit_state WHERE key = ?", arguments: [key])
        }
    }

    public func loadValue<T: Decodable>(_ type: T.Type, forKey key: String) throws -> T? {
        try database.read { db in
            guard let data = try Data.fetchOne(db, sql: "SELECT value FROM unit_state WHERE key = ?", arguments: [key]) else {
                return nil
            }
            return try JSONDecoder().decode(type, from: data)
        }
    }

    /// Undelivered messages per class, and the oldest `limit` of each (payloads left out).
    public func outboxOverview(limitPerClass limit: Int) throws -> (depth: [MessageClass: Int], oldest: [OutboxEntry]) {
        try database.read { db in
            var depth: [MessageClass: Int] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT class, COUNT(*) AS n FROM outbox WHERE \(Self.undelivered) GROUP BY class") {
                if let messageClass = MessageClass(rawValue: (try row.decode(forColumn: "class"))) { depth[messageClass] = (try row.decode(forColumn: "n")) }
            }
            let oldest = try Row.fetchAll(
                db,
                sql: """
                    SELECT id, message_id, topic, class, created_at FROM (
                        SELECT *, ROW_NUMBER() OVER (PARTITION BY class ORDER BY id) AS rank
                        FROM outbox WHERE \(Self.undelivered)
                    ) WHERE rank <= ? ORDER BY class, id
                    """,
                arguments: [limit]
            ).map { row in
                OutboxEntry(
                    rowID: (try row.decode(forColumn: "id")), messageID: (try row.decode(forColumn: "message_id")), topic: (try row.decode(forColumn: "topic")),
                    messageClass: MessageClass(rawValue: (try row.decode(forColumn: "class"))) ?? .event, createdAt: (try row.decode(forColumn: "created_at")))
            }
            return (depth, oldest)
        }
    }

    /// The most recently stored fix.
    public func lastPosition() throws -> Fix? {
        try database.read { db in try PositionRow.fetchOne(db, sql: "SELECT * FROM positions ORDER BY id DESC LIMIT 1")?.fix }
    }

    public func positionCount() throws -> Int {
        try database.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM positions") ?? 0 }
    }

    /// The position history, oldest first.
    public func storedFixes() throws -> [Fix] {
        try database.read { db in try PositionRow.fetchAll(db, sql: "SELECT * FROM positions ORDER BY id").map(\.fix) }
    }
}
