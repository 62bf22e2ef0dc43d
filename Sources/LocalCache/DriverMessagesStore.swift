#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import TaxiProtocol
import UnitCore

/// The driver's inbox (table `driver_messages`, migration `v6-driver-messages`): written in the
/// step's transaction from `Step.inbox`, read back once at start.
extension LocalCache.Transaction {
    public func apply(_ change: InboxChange) throws {
        switch change {
        case .save(let message):
            let body = String(decoding: try JSONEncoder().encode(message), as: UTF8.self)
            // An update keeps the row's `seq`, so the arrival order stays.
            try db.execute(
                sql: """
                    INSERT INTO driver_messages (id, received_at, read_at, body) VALUES (?, ?, ?, ?)
                    ON CONFLICT(id) DO UPDATE SET read_at = excluded.read_at, body = excluded.body
                    """,
                arguments: [message.id, message.receivedAt, message.readAt, body])
        case .remove(let id):
            try db.execute(sql: "DELETE FROM driver_messages WHERE id = ?", arguments: [id])
        }
    }
}

extension LocalCache {
    /// Writes the whole inbox again, in order: after a step's changes could not be stored, the
    /// state machine's inbox is what the driver sees and what must survive a restart.
    public func replaceDriverMessages(_ messages: [InboxMessage]) throws {
        try write(.full) { transaction in
            try transaction.db.execute(sql: "DELETE FROM driver_messages")
            for message in messages { try transaction.apply(.save(message)) }
        }
    }

    /// The kept messages in arrival order, at most `limit` (the newest; older ones are deleted, as
    /// the inbox would have dropped them). A row that does not read back as a valid message is set
    /// aside (kind `driver_message`), so it cannot fail every start. The table holds at most the
    /// largest capacity (200) rows, as the inbox bounds it.
    public func driverMessages(limit: Int, at time: UnitTime) throws -> [InboxMessage] {
        try write(.full) { transaction in
            let db = transaction.db
            var kept: [(seq: Int64, message: InboxMessage)] = []
            for row in try Row.fetchAll(db, sql: "SELECT seq, body FROM driver_messages ORDER BY seq") {
                let seq: Int64 = try row.decode(forColumn: "seq")
                let body = try? row.decode(String?.self, forColumn: "body")
                if let body = body ?? nil, let message = try? JSONDecoder().decode(InboxMessage.self, from: Data(body.utf8)),
                   DriverMessages.isRestorable(message) {
                    kept.append((seq, message))
                } else {
                    try db.execute(
                        sql: "INSERT INTO aside (kind, reason, at, data) SELECT ?, ?, ?, body FROM driver_messages WHERE seq = ?",
                        arguments: [AsideKind.driverMessage.rawValue, "stored driver message cannot be read", time, seq])
                    try db.execute(sql: "DELETE FROM driver_messages WHERE seq = ?", arguments: [seq])
                }
            }
            let excess = kept.count - max(0, limit)
            if excess > 0 {
                for old in kept.prefix(excess) { try db.execute(sql: "DELETE FROM driver_messages WHERE seq = ?", arguments: [old.seq]) }
                kept.removeFirst(excess)
            }
            return kept.map(\.message)
        }
    }
}
