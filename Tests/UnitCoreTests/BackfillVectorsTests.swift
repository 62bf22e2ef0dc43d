import Foundation
import TaxiProtocol
import Testing
import UnitCore

/// contrib/backfill-vectors.json, shared with the dispatcher teams' Python decoder
/// (contrib/taxiunit_contract.py, checked by ContractTests): the unit's encoder must produce exactly
/// these rows (and these live payloads), and its decoder must give the points back within half a unit.
@Suite struct BackfillVectorsTests {
    /// A backfill batch (`rows`) or a live message (`live`: its seq and the exact payload).
    struct Vector: Decodable {
        struct Live: Decodable {
            var seq: Int64
            var payload: String
        }

        var name: String
        var points: [PositionPoint]
        var rows: [[Int64?]]?
        var live: Live?
    }

    static let vectors: [Vector] = {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../contrib/backfill-vectors.json")
        guard let data = FileManager.default.contents(atPath: path.standardized.path) else { return [] }
        return (try? JSONDecoder().decode([Vector].self, from: data)) ?? []
    }()

    @Test func theVectorsFileIsRead() {
        #expect(Self.vectors.filter { $0.rows != nil }.count >= 6 && Self.vectors.filter { $0.live != nil }.count >= 3)
    }

    @Test(arguments: vectors.map(\.name))
    func encodesToTheSharedRowsAndDecodesBack(name: String) throws {
        let vector = try #require(Self.vectors.first { $0.name == name })
        let decoded: [PositionPoint]
        if let live = vector.live {
            let point = try #require(vector.points.first)
            #expect(String(decoding: try LivePositionMessage(point: point, seq: live.seq).json(), as: UTF8.self) == live.payload)
            let message = try JSONDecoder().decode(LivePositionMessage.self, from: Data(live.payload.utf8))
            #expect(message.point.stale == point.stale && message.point.age == point.age)
            decoded = [message.point]
        } else {
            let rows = try #require(vector.rows)
            #expect(PositionBatch.encode(vector.points) == rows)
            decoded = try #require(PositionBatch.decode(rows))
        }
        #expect(decoded.count == vector.points.count)
        for (got, want) in zip(decoded, vector.points) {
            #expect(got.t == want.t)
            #expect(abs(got.lat - want.lat) <= 0.5e-7 + 1e-12 && abs(got.lon - want.lon) <= 0.5e-7 + 1e-12, "\(got) \(want)")
            #expect((got.spd == nil) == (want.spd == nil) && abs((got.spd ?? 0) - (want.spd ?? 0)) <= 0.005 + 1e-12)
            #expect((got.hdg == nil) == (want.hdg == nil) && abs((got.hdg ?? 0) - (want.hdg ?? 0)) <= 0.05 + 1e-12)
            #expect((got.acc == nil) == (want.acc == nil) && abs((got.acc ?? 0) - (want.acc ?? 0)) <= 0.05 + 1e-12)
        }
    }
}
