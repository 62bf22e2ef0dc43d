/// Every migration of the store, as the literal SQL it ran when it was released.
///
/// Append-only: a released migration never changes, neither its identifier nor its SQL, because
/// units in the field already ran it and a new store must end up with the same schema as an old
/// one migrated (`StoreGoldenTests`). Nothing is interpolated: a Swift enum or constant may change
/// its value in a later release, the effect of a migration that ran may not. To change the schema,
/// append a migration with a new identifier.
extension LocalCache {
    static let migrations: [(identifier: String, sql: String)] = [
        ("v1", """
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
            """),
        ("v2-rides", """
            CREATE TABLE rides (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                job TEXT NOT NULL,
                passengers INTEGER NOT NULL,
                pickup_time INTEGER NOT NULL,
                pickup_lat REAL,
                pickup_lon REAL,
                drop_time INTEGER NOT NULL,
                drop_lat REAL,
                drop_lon REAL,
                distance_m REAL NOT NULL
            );
            """),
        ("fleet-config", """
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
            """),
        // Reported fixes wait in position_queue until the pump packs them into a live or a backfill
        // message; `points` is how many fixes an outbox row carries. Classes as v1 numbered them
        // (alarm 0, reply 1, event 2, position 3); the lanes are alarm 0, reply 1, event 2,
        // live position 3, backfill 4, and every position a v1 store holds is history.
        ("v2-lanes-position-queue-counters", """
            ALTER TABLE positions ADD COLUMN created_at INTEGER;
            ALTER TABLE outbox ADD COLUMN lane INTEGER NOT NULL DEFAULT 0;
            ALTER TABLE outbox ADD COLUMN points INTEGER NOT NULL DEFAULT 0;
            ALTER TABLE outbox ADD COLUMN newest_point INTEGER;
            UPDATE outbox SET lane = 4, points = 1 WHERE class = 3;
            UPDATE outbox SET lane = class WHERE class < 3;
            DROP INDEX outbox_pending;
            CREATE INDEX outbox_pending ON outbox(lane, id) WHERE delivered_at IS NULL;
            CREATE INDEX outbox_delivered ON outbox(delivered_at) WHERE delivered_at IS NOT NULL;
            CREATE TABLE position_queue (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                created_at INTEGER NOT NULL,
                t INTEGER NOT NULL,
                lat REAL NOT NULL,
                lon REAL NOT NULL,
                spd REAL,
                hdg REAL,
                acc REAL,
                thinned INTEGER NOT NULL DEFAULT 0
            );
            CREATE TABLE store_counters (
                name TEXT PRIMARY KEY,
                value INTEGER NOT NULL
            );
            """),
        // A PUBACK appends one small row at the end of its own table instead of rewriting the
        // message's 1.3 kB row and moving it between two partial indexes.
        ("v3-outbox-acknowledged", """
            DROP INDEX outbox_pending;
            DROP INDEX outbox_delivered;
            CREATE TABLE outbox_acknowledged (
                id INTEGER PRIMARY KEY,
                at INTEGER NOT NULL
            );
            INSERT INTO outbox_acknowledged (id, at) SELECT id, delivered_at FROM outbox WHERE delivered_at IS NOT NULL;
            ALTER TABLE outbox DROP COLUMN delivered_at;
            CREATE INDEX outbox_lane ON outbox(lane, id);
            """),
        ("v4-aside", """
            CREATE TABLE aside (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                kind TEXT NOT NULL,
                reason TEXT NOT NULL,
                at INTEGER NOT NULL,
                data BLOB
            );
            """),
        // The topic each fleet document came on (its signature covers it, and it is verified again
        // at every start), and when a broker trial began and how long it may run, so a restart
        // resumes it instead of starting it over.
        ("v5-fleet-topic-trial", """
            ALTER TABLE fleet_config ADD COLUMN topic TEXT;
            ALTER TABLE fleet_config ADD COLUMN last_good_topic TEXT;
            ALTER TABLE fleet_config ADD COLUMN trial_started_at INTEGER;
            ALTER TABLE fleet_config ADD COLUMN trial_window_s REAL;
            """),
        // The dispatcher's messages to the driver, kept until read (and then up to the inbox's
        // capacity): `body` is the message as the state machine keeps it (DriverMessagesStore.swift).
        ("v6-driver-messages", """
            CREATE TABLE driver_messages (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                id TEXT NOT NULL UNIQUE,
                received_at INTEGER NOT NULL,
                read_at INTEGER,
                body TEXT NOT NULL
            );
            """),
        // Who is logged in and the wrong-PIN lockout (one row), and each driver's terminal
        // preferences. Not in the snapshot: the snapshot's format is the state machine's.
        ("v7-driver-session", """
            CREATE TABLE driver_session (
                id INTEGER PRIMARY KEY CHECK (id = 1),
                driver TEXT,
                failures INTEGER NOT NULL DEFAULT 0,
                locked_until INTEGER
            );
            CREATE TABLE driver_preferences (
                driver TEXT PRIMARY KEY,
                language TEXT,
                alert TEXT
            );
            """),
        // A ride's fare (minor units of its currency, exact), where it came from, and the payment.
        ("v8-ride-fare-payment", """
            ALTER TABLE rides ADD COLUMN fare INTEGER;
            ALTER TABLE rides ADD COLUMN currency TEXT;
            ALTER TABLE rides ADD COLUMN fare_source TEXT;
            ALTER TABLE rides ADD COLUMN payment TEXT;
            """),
        // The unit clock of the driver's login, which names the session to the dispatcher.
        ("v9-driver-session-login-time", """
            ALTER TABLE driver_session ADD COLUMN logged_in_at INTEGER;
            """),
        // Jobs that ended without a ride (rejected, timed out, no-show, cancelled), for `taxiunitctl jobs`.
        ("v10-job-history", """
            CREATE TABLE job_history (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                job TEXT NOT NULL,
                t INTEGER NOT NULL,
                outcome TEXT NOT NULL
            );
            """),
        // The pickup address of the ride's job, for the driver's history (personal data: never logged).
        ("v11-ride-pickup-address", """
            ALTER TABLE rides ADD COLUMN pickup_address TEXT;
            """),
    ]

    static var migrator: DatabaseMigrator { DatabaseMigrator(migrations: migrations) }
}

/// Runs the migrations a file has not had, in order, each in its own transaction, and records each
/// in `grdb_migrations`: the table every store in the field has (GRDB's migrator wrote it), in
/// GRDB's shape, so that old and new stores keep one schema.
struct DatabaseMigrator {
    private let steps: [(identifier: String, sql: String)]

    init(migrations: [(identifier: String, sql: String)]) {
        steps = migrations
    }

    /// The identifiers, in the order they run.
    var migrations: [String] { steps.map(\.identifier) }

    /// Every identifier the file records, also those of migrations this release does not know.
    func appliedIdentifiers(_ db: Database) throws -> Set<String> {
        let recorded = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'grdb_migrations'")
        guard recorded == 1 else { return [] }
        return Set(try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations"))
    }

    func migrate(_ pool: DatabasePool) throws {
        try pool.writeWithoutTransaction { db in
            try db.execute(sql: "CREATE TABLE IF NOT EXISTS grdb_migrations (identifier TEXT NOT NULL PRIMARY KEY)")
        }
        let applied = try pool.read { db in try appliedIdentifiers(db) }
        for step in steps where !applied.contains(step.identifier) {
            try pool.write { db in
                try db.execute(sql: step.sql)
                try db.execute(sql: "INSERT INTO grdb_migrations (identifier) VALUES (?)", arguments: [step.identifier])
            }
        }
    }
}
