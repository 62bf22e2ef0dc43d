#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import TaxiProtocol
import UnitCore

/// What the unit could not use and set aside instead of failing on it at every start: kept in the
/// `aside` table for diagnosis, counted per kind in `status`, never read back by the unit.
public enum AsideKind: String, Sendable, CaseIterable, Codable {
    /// The state machine's snapshot did not decode.
    case snapshot
    /// Stored fleet configuration documents could not be restored.
    case fleetConfig = "fleet_config"
    /// The replay guard of executed commands could not be read.
    case executedCommands = "executed_commands"
    /// An outbox row that cannot be read as a message.
    case outboxRow = "outbox_row"
    /// A kept driver message that cannot be read back (DriverMessagesStore.swift).
    case driverMessage = "driver_message"
    /// An inbound message the unit died handling twice (a poison message).
    case inboundMessage = "inbound_message"
}

extension LocalCache {
    /// How many entries of each kind were set aside since the store was created.
    public func asideCounts() throws -> [AsideKind: Int] {
        try database.read { db in
            var counts: [AsideKind: Int] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT kind, COUNT(*) AS n FROM aside GROUP BY kind") {
                if let kind = AsideKind(rawValue: try row.decode(String.self, forColumn: "kind")) { counts[kind] = try row.decode(forColumn: "n") }
            }
            return counts
        }
    }

    /// Moves the value stored under `key` (the snapshot) aside.
    public func setAsideValue(forKey key: String, kind: AsideKind, reason: String, at time: UnitTime) throws {
        try write(.full) { transaction in
            let db = transaction.db
            guard let value = try Data.fetchOne(db, sql: "SELECT value FROM unit_state WHERE key = ?", arguments: [key]) else { return }
            try AsideRow(kind: kind, reason: reason, at: time, data: value).insert(db)
            try db.execute(sql: "DELETE FROM unit_state WHERE key = ?", arguments: [key])
        }
    }

    /// Moves every stored fleet configuration document aside (as JSON of the rows).
    public func setAsideFleetConfig(reason: String, at time: UnitTime) throws {
        try write(.full) { transaction in
            try transaction.db.execute(
                sql: """
                    INSERT INTO aside (kind, reason, at, data)
                    SELECT ?, ?, ?, json_object('scope', scope, 'version', version, 'document', CAST(document AS TEXT)) FROM fleet_config
                    """,
                arguments: [AsideKind.fleetConfig.rawValue, reason, time])
            try transaction.db.execute(sql: "DELETE FROM fleet_config")
        }
    }

    public func setAsideExecutedCommands(reason: String, at time: UnitTime) throws {
        try write(.full) { transaction in
            try transaction.db.execute(
                sql: "INSERT INTO aside (kind, reason, at, data) SELECT ?, ?, ?, json_group_array(id) FROM executed_commands",
                arguments: [AsideKind.executedCommands.rawValue, reason, time])
            try transaction.db.execute(sql: "DELETE FROM executed_commands")
        }
    }
}

extension LocalCache.Transaction {
    /// Moves one outbox row aside; it is no longer pending.
    func setAsideOutboxRow(_ rowID: Int64, reason: String) throws {
        try db.execute(
            sql: "INSERT INTO aside (kind, reason, at, data) SELECT ?, ?, created_at, payload FROM outbox WHERE id = ?",
            arguments: [AsideKind.outboxRow.rawValue, reason, rowID])
        try db.execute(sql: "DELETE FROM outbox WHERE id = ?", arguments: [rowID])
    }
}
