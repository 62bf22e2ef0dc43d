import Foundation
import Testing
import UnitCore

/// contrib/backfill-vectors.json, shared with the dispatcher teams' Python decoder
/// (contrib/taxiunit_contract.py, checked by ContractTests): the unit's encoder must produce exactly
/// these rows, and its decoder must give the points back within half a unit.
@Suite struct BackfillVectorsTests {
    struct Vector: Decodable {
        var name: String
        var points: [PositionPoint]
        var rows: [[Int64?]]
    }

    static let vectors: [Vector] = {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../contrib/backfill-vectors.json")
        guard let data = FileManager.default.contents(atPath: path.standardized.path) else { return [] }
        return (try? JSONDecoder().decode([Vector].self, from: data)) ?? []
    }()

    @Test func theVectorsFileIsRead() {
        #expect(Self.vectors.count >= 6)
    }

    @Test(arguments: vectors.map(\.name))
    func encodesToTheSharedRowsAndDecodesBack(name: String) throws {
        let vector = try #require(Self.vectors.first { $0.name == name })
        #expect(PositionBatch.encode(vector.points) == vector.rows)
        let decoded = try #require(PositionBatch.decode(vector.rows))
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
