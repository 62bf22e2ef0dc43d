import Foundation
import GRDB
import UnitCore

/// One queued outgoing message. It leaves the outbox only when the broker acknowledged it.
public struct OutboxMessage: Sendable, Equatable {
    public var rowID: Int64
    public var messageID: String
    /// Suffix below the unit's topic base, e.g. `pos`.
    public var topic: String
    public var messageClass: MessageClass
    public var qos: Int32
    public var payload: [UInt8]
}

/// How hard a write transaction insists on reaching the disk before it returns.
public enum Durability: Sendable {
    /// WAL with synchronous=NORMAL: survives a crash of the daemon, may lose the last commits on power loss.
    case normal
    /// synchronous=FULL for this transaction: on disk before anyone is told it was sent.
    case full
}

/// The unit's SQLite file: position history, the outbox, per-topic sequence numbers and the state
/// machine's snapshot. Everything the unit promised to send is here before it is sent.
public final class LocalCache: Sendable {
    let database: DatabasePool

    public init(path: String) throws {
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        }
        var configuration = Configuration()
        configuration.label = "taxiunitd.store"
        database = try DatabasePool(path: path, configuration: configuration)
        try Self.migrator.migrate(database)
    }

    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(sql: """
                CREATE TABLE positions (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    t INTEGER NOT NULL,
                    lat REAL NOT NULL,
                    lon REAL NOT NULL,
                    spd REAL,
                    hdg REAL,
                    acc REAL
                );
                CREATE TABLE outbox (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    message_id TEXT NOT NULL UNIQUE,
                    topic TEXT NOT NULL,
                    class INTEGER NOT NULL,
                    qos INTEGER NOT NULL,
                    payload BLOB NOT NULL,
                    created_at INTEGER NOT NULL,
                    delivered_at INTEGER
                );
                CREATE INDEX outbox_pending ON outbox(class, id) WHERE delivered_at IS NULL;
                CREATE TABLE topic_sequence (
                    topic TEXT PRIMARY KEY,
                    last_seq INTEGER NOT NULL
                );
                CREATE TABLE unit_state (
                    key TEXT PRIMARY KEY,
                    value BLOB NOT NULL
                );
                """)
        }
        migrator.registerMigration("v2-rides", migrate: RideRecord.createTable)
        registerFleetMigration(in: &migrator)
        return migrator
    }

    /// Runs `body` in one transaction. `.full` makes this commit fsync'd whatever the pool's default.
    @discardableResult
    public func write<T>(_ durability: Durability = .normal, _ body: (Transaction) throws -> T) throws -> T {
        try database.writeWithoutTransaction { db in
            if durability == .full { try db.execute(sql: "PRAGMA synchronous = FULL") }
            defer { if durability == .full { try? db.execute(sql: "PRAGMA synchronous = NORMAL") } }
            var result: T?
            try db.inTransaction {
                result = try body(Transaction(db: db))
                return .commit
            }
            return result!
        }
    }

    public struct Transaction {
        let db: Database

        public func insertPosition(_ fix: Fix) throws {
            try db.execute(
                sql: "INSERT INTO positions (t, lat, lon, spd, hdg, acc) VALUES (?, ?, ?, ?, ?, ?)",
                arguments: [fix.time, fix.latitude, fix.longitude, fix.speed, fix.track, fix.accuracy]
            )
        }

        /// Queues a message. `encode` receives the topic's next sequence number and a new message id
        /// (unique forever, so the dispatcher can drop duplicates) and returns the payload.
        @discardableResult
        public func enqueue(
            topic: String, messageClass: MessageClass, qos: Int32 = 1, createdAt: Int64,
            encode: (_ seq: Int64, _ messageID: String) throws -> [UInt8]
        ) throws -> Int64 {
            let seq = try nextSequence(for: topic)
            let messageID = UUID().uuidString.lowercased()
            let payload = try encode(seq, messageID)
            try db.execute(
                sql: "INSERT INTO outbox (message_id, topic, class, qos, payload, created_at) VALUES (?, ?, ?, ?, ?, ?)",
                arguments: [messageID, topic, messageClass.rawValue, qos, Data(payload), createdAt]
            )
            return db.lastInsertedRowID
        }

        func nextSequence(for topic: String) throws -> Int64 {
            try Int64.fetchOne(
                db,
                sql: """
                    INSERT INTO topic_sequence (topic, last_seq) VALUES (?, 1)
                    ON CONFLICT(topic) DO UPDATE SET last_seq = last_seq + 1
                    RETURNING last_seq
                    """,
                arguments: [topic]
            )!
        }

        public func saveValue<T: Encodable>(_ value: T, forKey key: String) throws {
            let encoded = try JSONEncoder().encode(value)
            try db.execute(
                sql: "INSERT INTO unit_state (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                arguments: [key, encoded]
            )
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

    /// Undelivered messages, most important class first, in creation order within a class.
    public func pendingMessages(limit: Int, excluding inFlight: Set<Int64>) throws -> [OutboxMessage] {
        try database.read { db in
            let exclusion = inFlight.isEmpty ? "" : "AND id NOT IN (\(inFlight.map(String.init).joined(separator: ",")))"
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT id, message_id, topic, class, qos, payload FROM outbox
                    WHERE delivered_at IS NULL \(exclusion)
                    ORDER BY class, id LIMIT ?
                    """,
                arguments: [limit]
            )
            return rows.map { row in
                OutboxMessage(
                    rowID: row["id"],
                    messageID: row["message_id"],
                    topic: row["topic"],
                    messageClass: MessageClass(rawValue: row["class"]) ?? .event,
                    qos: row["qos"],
                    payload: [UInt8](row["payload"] as Data)
                )
            }
        }
    }

    public func markDelivered(_ rowID: Int64, at time: Int64) throws {
        try database.write { db in
            try db.execute(sql: "UPDATE outbox SET delivered_at = ? WHERE id = ?", arguments: [time, rowID])
        }
    }

    public func undeliveredCount() throws -> Int {
        try database.read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM outbox WHERE delivered_at IS NULL")!
        }
    }

    /// The most recently stored fix.
    public func lastPosition() throws -> Fix? {
        try database.read { db in
            try Row.fetchOne(db, sql: "SELECT t, lat, lon, spd, hdg, acc FROM positions ORDER BY id DESC LIMIT 1").map { row in
                Fix(time: row["t"], latitude: row["lat"], longitude: row["lon"], speed: row["spd"], track: row["hdg"], accuracy: row["acc"])
            }
        }
    }

    public func positionCount() throws -> Int {
        try database.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM positions")! }
    }

    /// The position history, oldest first.
    public func storedFixes() throws -> [Fix] {
        try database.read { db in
            try Row.fetchAll(db, sql: "SELECT t, lat, lon, spd, hdg, acc FROM positions ORDER BY id").map { row in
                Fix(time: row["t"], latitude: row["lat"], longitude: row["lon"], speed: row["spd"], track: row["hdg"], accuracy: row["acc"])
            }
        }
    }
}
