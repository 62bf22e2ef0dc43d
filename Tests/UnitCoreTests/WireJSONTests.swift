import Foundation
import Testing
@testable import UnitCore

/// The hand-written position JSON against the Foundation encoder it replaces: the same bytes for
/// every value, and what a receiver decodes is what was sent.
@Suite struct WireJSONTests {
    static func foundationJSON(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    static func expectSameBytes(_ message: PositionMessage, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let handWritten = try message.json()
        #expect(String(decoding: handWritten, as: UTF8.self) == (try foundationJSON(message)), sourceLocation: sourceLocation)
        #expect(try JSONDecoder().decode(PositionMessage.self, from: Data(handWritten)) == message, sourceLocation: sourceLocation)
    }

    @Test func theDocumentedExample() throws {
        let message = PositionMessage(
            unit: "T042", seq: 1, id: "716abdab-9093-4fdc-857d-e1615135bb86",
            points: [PositionPoint(t: 1_737_642_886_280, lat: 46.4983007, lon: 7.5674005, spd: 0.091, hdg: 10.38, acc: 45.6)])
        #expect(String(decoding: try message.json(), as: UTF8.self) == #"{"id":"716abdab-9093-4fdc-857d-e1615135bb86","points":[{"acc":45.6,"hdg":10.38,"lat":46.4983007,"lon":7.5674005,"spd":0.091,"t":1737642886280}],"seq":1,"unit":"T042"}"#)
        try Self.expectSameBytes(message)
    }

    @Test func absentOptionalsAndTheHeartbeatFields() throws {
        let fix = Fix(time: 1_795_000_000_000, latitude: -33.8688, longitude: 151.2093, speed: nil, track: nil, accuracy: nil)
        try Self.expectSameBytes(PositionMessage(unit: "T1", seq: 7, id: "x", points: [PositionPoint(fix)]))
        let stale = PositionMessage(unit: "T1", seq: 8, id: "y", points: [PositionPoint(fix, staleAgeMs: 31_004)])
        #expect(String(decoding: try stale.json(), as: UTF8.self) == #"{"id":"y","points":[{"age":31004,"lat":-33.8688,"lon":151.2093,"stale":true,"t":1795000000000}],"seq":8,"unit":"T1"}"#)
        try Self.expectSameBytes(stale)
        var notStale = PositionPoint(t: -5, lat: 0, lon: -0.0, spd: 0, hdg: 359.99, acc: 1e-7)
        notStale.stale = false
        notStale.age = -1
        try Self.expectSameBytes(PositionMessage(unit: "", seq: Int64.max, id: "", points: [notStale, notStale]))
        try Self.expectSameBytes(PositionMessage(unit: "T1", seq: Int64.min, id: "z", points: []))
    }

    /// Integral values lose `.0`, tiny and huge ones use exponents, shortest round-trip digits.
    @Test func numbersAreWrittenAsTheFoundationEncoderWritesThem() throws {
        let values: [Double] = [
            7, -7, 0.1 + 0.2, 1e-5, -1e-7, 2.5e-7, 0.0001, 1e15, 1e16, -1e17, 1e21, 1.5e300, 5e-324, .greatestFiniteMagnitude,
            -.greatestFiniteMagnitude, 46.4983007, -122.4194155, 180, -90, 12_345_678.9, 0.5, 2.675, 1.005,
        ]
        for value in values {
            try Self.expectSameBytes(
                PositionMessage(unit: "T1", seq: 1, id: "n", points: [PositionPoint(t: 1, lat: value, lon: -value, spd: value, hdg: value, acc: value)]))
        }
    }

    @Test func randomPointsGiveTheSameBytes() throws {
        var random = SplitMix(seed: 0x5EED_0F_F1C5)
        for round in 0..<2000 {
            let points = (0..<Int.random(in: 1...3, using: &random)).map { _ in
                var point = PositionPoint(
                    t: Int64.random(in: -1_000_000...4_000_000_000_000, using: &random),
                    lat: (Double.random(in: -90...90, using: &random) * 1e7).rounded() / 1e7,
                    lon: Double.random(in: -180...180, using: &random),
                    spd: Bool.random(using: &random) ? nil : (Double.random(in: 0...80, using: &random) * 100).rounded() / 100,
                    hdg: Bool.random(using: &random) ? nil : Double.random(in: 0..<360, using: &random),
                    acc: Bool.random(using: &random) ? nil : Double(Int.random(in: 0...5000, using: &random)) / 10)
                if round % 7 == 0 {
                    point.stale = true
                    point.age = Int64.random(in: 0...86_400_000, using: &random)
                }
                return point
            }
            try Self.expectSameBytes(PositionMessage(unit: "T\(round)", seq: Int64(round), id: UUID().uuidString.lowercased(), points: points))
        }
    }

    /// The protocol never carries NaN: an unknown optional is omitted, as if it were nil; a
    /// coordinate that is not a number is refused, like the Foundation encoder refuses it.
    @Test func nonFiniteOptionalsAreOmittedAndNonFiniteCoordinatesRefused() throws {
        let unknown = PositionMessage(unit: "T1", seq: 1, id: "a", points: [PositionPoint(t: 1, lat: 1, lon: 2, spd: .nan, hdg: .infinity, acc: -.infinity)])
        let asNil = PositionMessage(unit: "T1", seq: 1, id: "a", points: [PositionPoint(t: 1, lat: 1, lon: 2)])
        #expect(try unknown.json() == asNil.json())
        #expect(String(decoding: try unknown.json(), as: UTF8.self) == (try Self.foundationJSON(asNil)))
        #expect(throws: NonFiniteCoordinate(field: "lat")) {
            try PositionMessage(unit: "T1", seq: 1, id: "b", points: [PositionPoint(t: 1, lat: .nan, lon: 2)]).json()
        }
        #expect(throws: NonFiniteCoordinate(field: "lon")) {
            try PositionMessage(unit: "T1", seq: 1, id: "b", points: [PositionPoint(t: 1, lat: 1, lon: .infinity)]).json()
        }
    }

    /// Unit ids come from configuration: every character must survive, escaped as Foundation does.
    @Test func stringsAreEscapedAsTheFoundationEncoderEscapesThem() throws {
        let awkward = "a/b\"c\\d" + String((0..<0x20).map { Character(Unicode.Scalar(UInt8($0))) }) + "\u{7F}é\u{2028}🚕"
        try Self.expectSameBytes(PositionMessage(unit: awkward, seq: 1, id: awkward, points: [PositionPoint(t: 1, lat: 1, lon: 2)]))
        let points = [PositionPoint(t: 1, lat: 1, lon: 2, spd: 3)]
        let backfill = BackfillMessage(unit: awkward, seq: 2, id: awkward, points: points)
        let handWritten = BackfillMessage.writeJSON(unit: awkward, seq: 2, id: awkward, points: points[...])
        #expect(String(decoding: handWritten, as: UTF8.self) == (try Self.foundationJSON(backfill)))
        #expect(try JSONDecoder().decode(BackfillMessage.self, from: Data(handWritten)) == backfill)
    }

    /// Backfill rows carry negative deltas, nulls for unknown values (the random tracks of
    /// PositionBatchTests) and, from a broken receiver's clock, 64-bit extremes.
    @Test func backfillIntegersAreWhatTheFoundationEncoderWrites() throws {
        let values: [Int64] = [
            Int64.min, Int64.max, 0, -1, 10, -10, 5, -123_456_789, 987_654_321, 7, 9, -9, 99, -99, 100, -100,
            Int64.min + 1, Int64.max - 1, 1_000_000_000_000_000_000, -999_999_999_999_999_999,
        ]
        for value in values {
            var writer = WireJSONWriter(capacity: 0)
            writer.integer(value)
            #expect("[" + String(decoding: writer.bytes, as: UTF8.self) + "]" == (try Self.foundationJSON([value])))
        }
    }
}
