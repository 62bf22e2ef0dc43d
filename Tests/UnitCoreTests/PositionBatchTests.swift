import Foundation
import TaxiProtocol
import Testing
import UnitCore

@Suite struct PositionBatchTests {
    /// The example in docs/protocol.md, "Backfill batches".
    @Test func theDocumentedExample() {
        let points = [
            PositionPoint(t: 1_795_000_000_000, lat: 46.4983007, lon: 7.5674005, spd: 8.31, hdg: 10.4, acc: 4.5),
            PositionPoint(t: 1_795_000_001_000, lat: 46.4983712, lon: 7.5674201, spd: 8.52, hdg: 12.0, acc: 4.5),
            PositionPoint(t: 1_795_000_002_000, lat: 46.4984420, lon: 7.5674390),
            PositionPoint(t: 1_795_000_004_000, lat: 46.4985800, lon: 7.5674800, spd: 8.0, acc: 5.0),
        ]
        let rows = PositionBatch.encode(points)
        #expect(rows == [
            [1_795_000_000_000, 464_983_007, 75_674_005, 831, 104, 45],
            [1000, 705, 196, 21, 16, 0],
            [0, 708, 189],
            [1000, 1380, 410, -52, nil, 5],
        ])
        #expect(PositionBatch.decode(rows) == points)
    }

    @Test func randomTracksSurviveTheRoundTripWithinTheUnits() {
        var random = SplitMix(seed: 42)
        for _ in 0..<200 {
            var t: Int64 = 1_700_000_000_000 + Int64.random(in: 0...1_000_000, using: &random)
            var lat = Double.random(in: -89...89, using: &random), lon = Double.random(in: -179...179, using: &random)
            var points: [PositionPoint] = []
            for _ in 0..<Int.random(in: 1...60, using: &random) {
                t += [1000, 1000, 1000, 2000, 999, 5000].randomElement(using: &random)!
                lat += Double.random(in: -0.0003...0.0003, using: &random)
                lon += Double.random(in: -0.0003...0.0003, using: &random)
                func maybe(_ range: ClosedRange<Double>) -> Double? { Bool.random(using: &random) ? Double.random(in: range, using: &random) : nil }
                points.append(PositionPoint(t: t, lat: lat, lon: lon, spd: maybe(0...60), hdg: maybe(0...359.9), acc: maybe(0...500)))
            }
            let decoded = PositionBatch.decode(PositionBatch.encode(points))
            #expect(decoded?.count == points.count)
            for (got, want) in zip(decoded ?? [], points) {
                #expect(got.t == want.t)
                #expect(abs(got.lat - want.lat) <= 0.5e-7 + 1e-12 && abs(got.lon - want.lon) <= 0.5e-7 + 1e-12)
                #expect((got.spd == nil) == (want.spd == nil) && abs((got.spd ?? 0) - (want.spd ?? 0)) <= 0.005 + 1e-9)
                #expect((got.hdg == nil) == (want.hdg == nil) && abs((got.hdg ?? 0) - (want.hdg ?? 0)) <= 0.05 + 1e-9)
                #expect((got.acc == nil) == (want.acc == nil) && abs((got.acc ?? 0) - (want.acc ?? 0)) <= 0.05 + 1e-9)
            }
        }
    }

    @Test func theHandWrittenJSONIsWhatASortedKeysEncoderWrites() throws {
        let points = (0..<7).map { PositionPoint(t: 1_795_000_000_000 + Int64($0) * 1000, lat: -33.9 + Double($0) * 1e-5, lon: 151.2, spd: $0 == 3 ? nil : 4.2) }
        let message = BackfillMessage(unit: "T-1_x", seq: 42, id: "6f1c2a9e-0d3b-4b7e-9a51-2f7c8e1d0a44", points: points)
        let handWritten = BackfillMessage.writeJSON(unit: "T-1_x", seq: 42, id: "6f1c2a9e-0d3b-4b7e-9a51-2f7c8e1d0a44", points: points[...])
        #expect(String(decoding: handWritten, as: UTF8.self) == (try WireJSONTests.foundationJSON(message)))
        #expect(try JSONDecoder().decode(BackfillMessage.self, from: Data(handWritten)) == message)
    }

    /// The pump writes batches straight from the points; the bytes are those the Foundation encoder
    /// writes for the message built from `PositionBatch.encode`'s rows.
    @Test func batchesWrittenStraightFromThePointsAreTheSameBytes() throws {
        var random = SplitMix(seed: 7)
        for _ in 0..<300 {
            var t = Int64.random(in: -1_000_000...1_900_000_000_000, using: &random)
            var lat = Double.random(in: -90...90, using: &random), lon = Double.random(in: -180...180, using: &random)
            var points: [PositionPoint] = []
            for _ in 0..<Int.random(in: 0...60, using: &random) {
                t += [1000, 1000, 0, -1000, 999, 86_400_000].randomElement(using: &random)!
                lat += Double.random(in: -0.01...0.01, using: &random)
                lon += Double.random(in: -0.01...0.01, using: &random)
                func maybe(_ range: ClosedRange<Double>) -> Double? { Bool.random(using: &random) ? Double.random(in: range, using: &random) : nil }
                points.append(PositionPoint(t: t, lat: lat, lon: lon, spd: maybe(-1...300), hdg: maybe(0...359.99), acc: maybe(0...100_000)))
            }
            let seq = Int64.random(in: 0...Int64.max, using: &random)
            func written(_ points: ArraySlice<PositionPoint>) -> String {
                String(decoding: BackfillMessage.writeJSON(unit: "T-7", seq: seq, id: "a/b", points: points), as: UTF8.self)
            }
            let expected = try WireJSONTests.foundationJSON(BackfillMessage(unit: "T-7", seq: seq, id: "a/b", points: points))
            #expect(written(points[...]) == expected)
            let tail = points.indices.dropFirst(points.count / 2)
            #expect(written(points[tail]) == (try WireJSONTests.foundationJSON(BackfillMessage(unit: "T-7", seq: seq, id: "a/b", points: Array(points[tail])))))
        }
    }

    @Test func malformedRowsAreRefused() {
        #expect(PositionBatch.decode([[1, 2]]) == nil)
        #expect(PositionBatch.decode([[1, 2, 3, 4, 5, 6, 7]]) == nil)
        #expect(PositionBatch.decode([[nil, 2, 3]]) == nil)
        #expect(PositionBatch.decode([]) == [])
    }
}

/// Reproducible randomness for the round-trip test.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
