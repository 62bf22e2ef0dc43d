import Foundation
import MQTTLink
import TaxiProtocol
import UnitCore

/// A `pos` message as a dispatcher decodes it: live (`LivePositionMessage`, no `seq`) or backfill
/// (`PositionBatch` rows), per docs/protocol.md.
public struct ReceivedPositions: Sendable {
    /// Backfill only: live messages carry none.
    public let seq: Int?
    public let id: String
    public let backfill: Bool
    public let points: [PositionPoint]
    /// Payload bytes as the broker delivered them.
    public let size: Int

    public init?(_ message: MQTTMessage) {
        size = message.payload.count
        if let live = try? JSONDecoder().decode(LivePositionMessage.self, from: Data(message.payload)) {
            seq = nil
            id = live.id
            backfill = false
            points = [live.point]
            return
        }
        guard let json = message.json, let seq = json["seq"] as? Int, let id = json["id"] as? String, json["backfill"] as? Bool == true,
              let rows = json["points"] as? [[Any]] else { return nil }
        self.seq = seq
        self.id = id
        backfill = true
        let integers = rows.map { $0.map { ($0 as? NSNumber).map { $0.int64Value } } }
        guard let points = PositionBatch.decode(integers) else { return nil }
        self.points = points
    }

    /// Every `pos` message on `topic`, in arrival order, redeliveries included.
    public static func all(_ messages: [MQTTMessage], topic: String) -> [ReceivedPositions] {
        messages.filter { $0.topic == topic }.compactMap(ReceivedPositions.init)
    }

    /// Drops redeliveries (same id), keeping first arrivals in order.
    public static func firstArrivals(_ positions: [ReceivedPositions]) -> [ReceivedPositions] {
        var seen = Set<String>()
        return positions.filter { seen.insert($0.id).inserted }
    }
}
