import Foundation
import LocalCache
import TaxiProtocol
import UnitCore

/// Fixes queued in a store, and the points read back out of a `pos` payload: for the store's tests
/// and the outbox packer's.
public enum QueuedPositions {
    /// When the track starts: a day before the first test that uses it, from the clock.
    public static let start = TestClock.aDayAgo()

    /// The `index`th fix of a steady 1 Hz track.
    public static func fix(_ index: Int) -> Fix {
        Fix(time: start + .seconds(index), latitude: 46.5 + Double(index) * 1e-5, longitude: 7.5, speed: 5, track: 90, accuracy: 3)
    }

    public static func queue(_ store: LocalCache, _ range: Range<Int>, createdAt: UnitTime = 1000) throws {
        try store.write { transaction in
            for index in range { try transaction.queuePosition(fix(index), createdAt: createdAt) }
        }
    }

    /// The points of a live or a backfill message.
    public static func points(of message: OutboxMessage) throws -> [PositionPoint] {
        guard let json = try JSONSerialization.jsonObject(with: Data(message.payload)) as? [String: Any] else { throw HarnessError("not a JSON object") }
        if json["backfill"] as? Bool == true {
            guard let rows = json["points"] as? [[Any]], let points = PositionBatch.decode(rows.map { $0.map { ($0 as? NSNumber)?.int64Value } }) else {
                throw HarnessError("not backfill points")
            }
            return points
        }
        return [try JSONDecoder().decode(LivePositionMessage.self, from: Data(message.payload)).point]
    }
}
