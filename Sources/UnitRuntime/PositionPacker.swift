import LocalCache
import TaxiProtocol
import UnitCore

/// How queued fixes become `pos` messages (docs/protocol.md): the newest alone as a live message,
/// so the dispatcher sees where the taxi is now before any history, and the rest in backfill
/// batches. The wire format lives here; the store only hands over points and keeps bytes.
struct PositionPacker {
    let unit: String
    /// Points per backfill message (`[mqtt] batch_max`; the fleet may change it).
    var batchMax: Int

    /// The newest queued fix as a live message: one row and a short id, at most 64 bytes for a
    /// moving fix. The outbox keeps its own UUID for the row; the message's id is made from the fix.
    func live(in transaction: LocalCache.Transaction, at time: UnitTime) throws -> OutboxMessage? {
        guard let newest = try transaction.takeNewestQueuedPoint() else { return nil }
        return try transaction.enqueue(
            topic: UnitTopic.pos.rawValue, lane: .livePosition, createdAt: time, pointCount: 1, newestPoint: newest.id
        ) { seq, _ in
            try LivePositionMessage(point: newest.point, seq: seq).json()
        }
    }

    /// The oldest queued fixes as up to `messages` backfill messages of up to `batchMax` points each,
    /// oldest first, with consecutive sequence numbers reserved in one statement.
    func backfill(in transaction: LocalCache.Transaction, messages: Int, at time: UnitTime) throws -> [OutboxMessage] {
        let limit = max(1, batchMax)
        let queued = try transaction.takeOldestQueuedPoints(limit: limit.saturatingMultiply(max(0, messages)))
        guard !queued.ids.isEmpty else { return [] }
        let topic = UnitTopic.pos.rawValue
        let unit = self.unit
        let starts = stride(from: 0, to: queued.ids.count, by: limit)
        let firstSeq = try transaction.reserveSequence(for: topic, count: starts.underestimatedCount)
        return try starts.enumerated().map { index, start in
            let end = min(start + limit, queued.ids.count)
            return try transaction.enqueue(
                topic: topic, lane: .backfill, createdAt: time, firstSeq: firstSeq + Int64(index), pointCount: end - start,
                newestPoint: queued.ids[end - 1]
            ) { seq, messageID in
                BackfillMessage.writeJSON(unit: unit, seq: seq, id: messageID, points: queued.points[start..<end])
            }
        }
    }
}
