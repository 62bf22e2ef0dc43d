import TaxiProtocol
import UnitCore

/// Fleet configuration documents per scope and the ids of executed fleet commands.
extension LocalCache {
    public func fleetConfigRecords() throws -> [ConfigScope: ConfigScopeRecord] {
        try database.read { db in
            var records: [ConfigScope: ConfigScopeRecord] = [:]
            for row in try FleetConfigRow.fetchAll(db, sql: "SELECT * FROM fleet_config") {
                if let scope = ConfigScope(rawValue: row.scope) { records[scope] = row.record }
            }
            return records
        }
    }

    /// Ids of executed commands that have not expired yet, with their expiry.
    public func executedCommands(now: UnitTime) throws -> [String: UnitTime] {
        try database.read { db in
            var executed: [String: UnitTime] = [:]
            for row in try ExecutedCommandRow.fetchAll(db, sql: "SELECT * FROM executed_commands WHERE expires_at > ?", arguments: [now]) {
                executed[row.id] = row.expiresAt
            }
            return executed
        }
    }
}

extension LocalCache.Transaction {
    public func saveFleetConfig(_ record: ConfigScopeRecord, for scope: ConfigScope, at time: UnitTime) throws {
        try FleetConfigRow(scope: scope, record: record, updatedAt: time).upsert(db)
    }

    /// Remembers an executed command (and forgets those that expired).
    public func rememberCommand(_ id: String, expiresAt: UnitTime, now: UnitTime) throws {
        try db.cachedStatement(sql: "DELETE FROM executed_commands WHERE expires_at <= ?").execute(arguments: [now])
        try ExecutedCommandRow(id: id, expiresAt: expiresAt).insert(db, onConflict: .replace)
    }

    /// Deletes positions whose fix time is before `cutoff` (ms since the Unix epoch); returns how many.
    public func deletePositions(before cutoff: UnitTime) throws -> Int {
        try db.execute(sql: "DELETE FROM positions WHERE t < ?", arguments: [cutoff])
        return db.changesCount
    }
}
