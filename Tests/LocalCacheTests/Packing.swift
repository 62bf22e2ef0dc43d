import LocalCache
import UnitCore

/// What the outbox pump's packer does, at the store's level: points out of the queue, one message's
/// row and bytes in. UnitRuntimeTests' PositionPackerTests test the packer itself.
extension LocalCache.Transaction {
    func packLive(unit: String = "T1", createdAt: Int64) throws -> OutboxMessage? {
        guard let newest = try takeNewestQueuedPoint() else { return nil }
        return try enqueue(topic: "pos", lane: .livePosition, createdAt: createdAt, pointCount: 1, newestPoint: newest.id) { seq, id in
            try PositionMessage(unit: unit, seq: seq, id: id, points: [newest.point]).json()
        }
    }

    func packBackfill(unit: String = "T1", limit: Int, createdAt: Int64) throws -> [OutboxMessage] {
        let queued = try takeOldestQueuedPoints(limit: limit)
        guard let newest = queued.ids.last else { return [] }
        return [try enqueue(topic: "pos", lane: .backfill, createdAt: createdAt, pointCount: queued.ids.count, newestPoint: newest) { seq, id in
            BackfillMessage.writeJSON(unit: unit, seq: seq, id: id, points: queued.points[...])
        }]
    }
}
