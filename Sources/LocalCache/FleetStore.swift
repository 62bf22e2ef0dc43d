import Foundation
import GRDB
import UnitCore

/// Fleet configuration documents per scope and the ids of executed fleet commands.
extension LocalCache {
    static func registerFleetMigration(in migrator: inout DatabaseMigrator) {
        migrator.registerMigration("fleet-config") { db in
            try db.execute(sql: """
                CREATE TABLE fleet_config (
                    scope TEXT PRIMARY KEY,
                    seen_version INTEGER NOT NULL,
                    version INTEGER,
                    document BLOB,
                    on_probation INTEGER NOT NULL DEFAULT 0,
                    last_good_version INTEGER,
                    last_good_document BLOB,
                    updated_at INTEGER NOT NULL
                );
                CREATE TABLE executed_commands (
                    id TEXT PRIMARY KEY,
                    expires_at INTEGER NOT NULL
                );
                """)
        }
    }

    /// The topic each document came on (its signature covers it, and it is verified at every start)
    /// and when a broker trial began and how long it may run (a restart resumes it).
    static func registerFleetTrialMigration(in migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v5-fleet-topic-trial") { db in
            try db.execute(sql: """
                ALTER TABLE fleet_config ADD COLUMN topic TEXT;
                ALTER TABLE fleet_config ADD COLUMN last_good_topic TEXT;
                ALTER TABLE fleet_config ADD COLUMN trial_started_at INTEGER;
                ALTER TABLE fleet_config ADD COLUMN trial_window_s REAL;
                """)
        }
    }

    public func fleetConfigRecords() throws -> [ConfigScope: ConfigScopeRecord] {
        try database.read { db in
            var records: [ConfigScope: ConfigScopeRecord] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT * FROM fleet_config") {
                guard let scope = ConfigScope(rawValue: (try row.decode(forColumn: "scope"))) else { continue }
                records[scope] = ConfigScopeRecord(
                    seenVersion: (try row.decode(forColumn: "seen_version")),
                    applied: Self.document(
                        version: (try row.decode(forColumn: "version")), payload: (try row.decode(forColumn: "document")),
                        topic: (try row.decode(forColumn: "topic"))),
                    probation: (try row.decode(Bool.self, forColumn: "on_probation"))
                        ? .init(
                            lastGood: Self.document(
                                version: (try row.decode(forColumn: "last_good_version")), payload: (try row.decode(forColumn: "last_good_document")),
                                topic: (try row.decode(forColumn: "last_good_topic"))),
                            startedAt: (try row.decode(forColumn: "trial_started_at")),
                            windowS: (try row.decode(forColumn: "trial_window_s")))
                        : nil
                )
            }
            return records
        }
    }

    private static func document(version: Int?, payload: Data?, topic: String?) -> AppliedConfigDocument? {
        guard let version, let payload else { return nil }
        return AppliedConfigDocument(version: version, payload: Array(payload), topic: topic)
    }

    /// Ids of executed commands that have not expired yet, with their expiry.
    public func executedCommands(now: Int64) throws -> [String: Int64] {
        try database.read { db in
            var executed: [String: Int64] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT id, expires_at FROM executed_commands WHERE expires_at > ?", arguments: [now]) {
                executed[(try row.decode(forColumn: "id"))] = (try row.decode(forColumn: "expires_at"))
            }
            return executed
        }
    }
}

extension LocalCache.Transaction {
    public func saveFleetConfig(_ record: ConfigScopeRecord, for scope: ConfigScope, at time: Int64) throws {
        try db.execute(
            sql: """
                INSERT INTO fleet_config
                    (scope, seen_version, version, document, topic, on_probation, last_good_version, last_good_document,
                     last_good_topic, trial_started_at, trial_window_s, updated_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT(scope) DO UPDATE SET
                    seen_version = excluded.seen_version, version = excluded.version, document = excluded.document,
                    topic = excluded.topic, on_probation = excluded.on_probation, last_good_version = excluded.last_good_version,
                    last_good_document = excluded.last_good_document, last_good_topic = excluded.last_good_topic,
                    trial_started_at = excluded.trial_started_at, trial_window_s = excluded.trial_window_s,
                    updated_at = excluded.updated_at
                """,
            arguments: [
                scope.rawValue, record.seenVersion, record.applied?.version, record.applied.map { Data($0.payload) }, record.applied?.topic,
                record.probation != nil, record.probation?.lastGood?.version, record.probation?.lastGood.map { Data($0.payload) },
                record.probation?.lastGood?.topic, record.probation?.startedAt, record.probation?.windowS,
                time,
            ]
        )
    }

    /// Remembers an executed command (and forgets those that expired).
    public func rememberCommand(_ id: String, expiresAt: Int64, now: Int64) throws {
        try db.execute(sql: "DELETE FROM executed_commands WHERE expires_at <= ?", arguments: [now])
        try db.execute(sql: "INSERT OR REPLACE INTO executed_commands (id, expires_at) VALUES (?, ?)", arguments: [id, expiresAt])
    }

    /// Deletes positions whose fix time is before `cutoff` (ms since the Unix epoch); returns how many.
    public func deletePositions(before cutoff: Int64) throws -> Int {
        try db.execute(sql: "DELETE FROM positions WHERE t < ?", arguments: [cutoff])
        return db.changesCount
    }
}
