import LocalCache
import TaxiProtocol
@testable import UnitRuntime

/// Packing as the outbox pump does it, for the store's tests (PositionPackerTests test the packer).
extension LocalCache.Transaction {
    func packLive(unit: String = "T1", createdAt: UnitTime) throws -> OutboxMessage? {
        try PositionPacker(unit: unit, batchMax: 1).live(in: self, at: createdAt)
    }

    /// One backfill message of up to `limit` points.
    func packBackfill(unit: String = "T1", limit: Int, createdAt: UnitTime) throws -> [OutboxMessage] {
        try PositionPacker(unit: unit, batchMax: limit).backfill(in: self, messages: 1, at: createdAt)
    }
}
