import TaxiProtocol
import UnitCore

/// The logged-in driver, the lockout and the drivers' preferences (tables `driver_session` and
/// `driver_preferences`). What is read back is checked like any outside input: a value out of
/// range reads as absent rather than failing the start.
extension LocalCache {
    public func driverSession() throws -> DriverSessionRecord {
        try database.read { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT driver, failures, locked_until, logged_in_at FROM driver_session WHERE id = 1") else {
                return DriverSessionRecord()
            }
            let stored: String? = try row.decode(forColumn: "driver")
            let driver = stored.flatMap { SessionInput.isDriverID($0) ? $0 : nil }
            let failures: Int64 = try row.decode(Int64?.self, forColumn: "failures") ?? 0
            // A login time belongs to its driver: without one, it is nobody's.
            let loggedInAt: UnitTime? = driver == nil ? nil : try row.decode(forColumn: "logged_in_at")
            return DriverSessionRecord(
                driver: driver, failures: Int(clamping: min(max(failures, 0), 1000)),
                lockedUntil: try row.decode(forColumn: "locked_until"), loggedInAt: loggedInAt)
        }
    }

    public func saveDriverSession(_ record: DriverSessionRecord) throws {
        try write(.full) { try $0.saveDriverSession(record) }
    }

    public func driverPreferences(_ driver: String) throws -> DriverPreferences {
        try database.read { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT language, alert FROM driver_preferences WHERE driver = ?", arguments: [driver]) else {
                return DriverPreferences()
            }
            let language: String? = try row.decode(forColumn: "language")
            let alert: String? = try row.decode(forColumn: "alert")
            return DriverPreferences(
                language: language.flatMap { SessionInput.isLanguage($0) ? $0 : nil }, alert: alert.flatMap(AlertStyle.init(rawValue:)))
        }
    }

    public func saveDriverPreferences(_ preferences: DriverPreferences, for driver: String) throws {
        try write(.full) { try $0.saveDriverPreferences(preferences, for: driver) }
    }
}

extension LocalCache.Transaction {
    public func saveDriverSession(_ record: DriverSessionRecord) throws {
        try db.execute(
            sql: """
                INSERT INTO driver_session (id, driver, failures, locked_until, logged_in_at) VALUES (1, ?, ?, ?, ?)
                ON CONFLICT(id) DO UPDATE SET driver = excluded.driver, failures = excluded.failures, locked_until = excluded.locked_until,
                    logged_in_at = excluded.logged_in_at
                """,
            arguments: [record.driver, record.failures, record.lockedUntil, record.loggedInAt])
    }

    public func saveDriverPreferences(_ preferences: DriverPreferences, for driver: String) throws {
        try db.execute(
            sql: """
                INSERT INTO driver_preferences (driver, language, alert) VALUES (?, ?, ?)
                ON CONFLICT(driver) DO UPDATE SET language = excluded.language, alert = excluded.alert
                """,
            arguments: [driver, preferences.language, preferences.alert?.rawValue])
    }
}
