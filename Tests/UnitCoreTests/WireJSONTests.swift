import Foundation
import StrictJSON
@testable import TaxiProtocol
import Testing
@testable import UnitCore

/// The hand-written position JSON against the Foundation encoder it replaces: the same bytes for
/// every value, and what a receiver decodes is what was sent (within the columns' units).
@Suite struct WireJSONTests {
    static func foundationJSON(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    /// The hand-written live message against its Codable form: the same bytes, and decoding them
    /// gives the point back within half a unit of each column, which encodes to the same bytes again.
    static func expectSameBytes(_ message: LivePositionMessage, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let handWritten = try message.json()
        #expect(String(decoding: handWritten, as: UTF8.self) == (try foundationJSON(message)), sourceLocation: sourceLocation)
        let decoded = try JSONDecoder().decode(LivePositionMessage.self, from: Data(handWritten))
        #expect(decoded.id == message.id && decoded.point.t == message.point.t, sourceLocation: sourceLocation)
        #expect(abs(decoded.point.lat - message.point.lat) <= 0.5e-7 + 1e-9 && abs(decoded.point.lon - message.point.lon) <= 0.5e-7 + 1e-9, sourceLocation: sourceLocation)
        #expect((decoded.point.spd == nil) == (message.point.spd == nil) && decoded.point.stale == message.point.stale && decoded.point.age == message.point.age, sourceLocation: sourceLocation)
        #expect(try decoded.json() == handWritten, sourceLocation: sourceLocation)
    }

    /// docs/protocol.md's example: 165 bytes as protocol 1's object, 55 now.
    @Test func theDocumentedExample() throws {
        let message = LivePositionMessage(
            point: PositionPoint(t: 1_737_642_886_280, lat: 46.4983007, lon: 7.5674005, spd: 0.091, hdg: 10.38, acc: 45.6), seq: 1)
        #expect(String(decoding: try message.json(), as: UTF8.self) == #"{"id":"9us6zcw3l","p":[0,464983007,75674005,9,104,456]}"#)
        try Self.expectSameBytes(message)
    }

    /// The id: the fix time × 16 + seq mod 16 in base 36, read back by `int(id, 36) // 16`.
    @Test func theShortIDCarriesTheFixTime() throws {
        let id = LivePositionID.make(time: 1_737_642_886_280, seq: 17)
        #expect(id.count == 9 && LivePositionID.time(of: id) == 1_737_642_886_280)
        let value = try #require(Int64(id, radix: 36))
        #expect(value / 16 == 1_737_642_886_280 && value % 16 == 1)
        #expect(LivePositionID.make(time: 1_737_642_886_280, seq: 18) != id)
        #expect(LivePositionID.make(time: -5, seq: 0) == "000000000")
        #expect(LivePositionID.make(time: .max, seq: .min) == "zzzzzzzzk", "held at 2171, seq's low bits of Int64.min are 0")
        for bad in ["", "00000000", "0000000000", "ZZZZZZZZZ", "0000-0000", "éééé"] { #expect(LivePositionID.time(of: bad) == nil) }
    }

    /// The most a moving fix costs anywhere on earth below 100 m/s and 100 m error: 64 bytes.
    @Test func aMovingFixCostsAtMost64Bytes() throws {
        for (lat, lon) in [(-89.9999999, -179.9999999), (-17.5328547, -149.5670984), (40.7579787, -73.9855426), (89.9999999, 179.9999999)] {
            let point = PositionPoint(t: 4_102_444_799_999, lat: lat, lon: lon, spd: 99.99, hdg: 359.9, acc: 99.9)
            let bytes = try LivePositionMessage(point: point, seq: 15).json()
            #expect(bytes.count <= 64, "\(String(decoding: bytes, as: UTF8.self))")
        }
    }

    /// What a dispatcher reads from the network: a bad id, a short row, an overflowing time offset
    /// are refused, never trapped on.
    @Test func hostileLivePayloadsAreRefused() {
        for payload in [
            #"{"id":"zzzzzzzzz","p":[9223372036854775807,1,2]}"#,
            #"{"id":"9us6zcw3l","p":[0,1]}"#, #"{"id":"9us6zcw3l","p":[null,1,2]}"#, #"{"id":"9us6zcw3l","p":[0,null,2]}"#,
            #"{"id":"9us6zcw3l","p":[0,1,2,3,4,5,6]}"#, #"{"id":"9US6ZCW3L","p":[0,1,2]}"#, #"{"id":"9us6zcw3l"}"#, #"{"p":[0,1,2]}"#,
        ] {
            #expect(throws: (any Error).self, "\(payload)") { try JSONDecoder().decode(LivePositionMessage.self, from: Data(payload.utf8)) }
        }
    }

    @Test func absentOptionalsAndTheHeartbeatFields() throws {
        let fix = Fix(time: 1_795_000_000_000, latitude: -33.8688, longitude: 151.2093, speed: nil, track: nil, accuracy: nil)
        try Self.expectSameBytes(LivePositionMessage(point: PositionPoint(fix), seq: 7))
        let stale = LivePositionMessage(point: PositionPoint(fix, staleAge: .milliseconds(31_004)), seq: 8)
        #expect(String(decoding: try stale.json(), as: UTF8.self) == #"{"age":31004,"id":"\#(LivePositionID.make(time: 1_795_000_031_004, seq: 8))","p":[-31004,-338688000,1512093000],"stale":true}"#)
        try Self.expectSameBytes(stale)
        var notStale = PositionPoint(t: -5, lat: 0, lon: -0.0, spd: 0, hdg: 359.99, acc: 1e-7)
        notStale.stale = false
        notStale.age = -1
        try Self.expectSameBytes(LivePositionMessage(point: notStale, seq: .max))
    }

    @Test func randomPointsGiveTheSameBytes() throws {
        var random = SplitMix(seed: 0x5EED_0F_F1C5)
        for round in 0..<2000 {
            var point = PositionPoint(
                t: Int64.random(in: -1_000_000...4_000_000_000_000, using: &random),
                lat: Double.random(in: -90...90, using: &random),
                lon: Double.random(in: -180...180, using: &random),
                spd: Bool.random(using: &random) ? nil : Double.random(in: 0...150, using: &random),
                hdg: Bool.random(using: &random) ? nil : Double.random(in: 0..<360, using: &random),
                acc: Bool.random(using: &random) ? nil : Double(Int.random(in: 0...5000, using: &random)) / 10)
            if round % 7 == 0 {
                point.stale = true
                point.age = Int64.random(in: 0...86_400_000, using: &random)
            }
            try Self.expectSameBytes(LivePositionMessage(point: point, seq: Int64(round)))
        }
    }

    /// The protocol never carries NaN: an unknown optional is omitted, as if it were nil; a
    /// coordinate that is not a number is refused, like the Foundation encoder refuses it.
    @Test func nonFiniteOptionalsAreOmittedAndNonFiniteCoordinatesRefused() throws {
        let unknown = LivePositionMessage(point: PositionPoint(t: 1, lat: 1, lon: 2, spd: .nan, hdg: .infinity, acc: -.infinity), seq: 1)
        let asNil = LivePositionMessage(point: PositionPoint(t: 1, lat: 1, lon: 2), seq: 1)
        #expect(try unknown.json() == asNil.json())
        #expect(String(decoding: try unknown.json(), as: UTF8.self) == (try Self.foundationJSON(asNil)))
        #expect(throws: NonFiniteCoordinate(field: "lat")) {
            try LivePositionMessage(point: PositionPoint(t: 1, lat: .nan, lon: 2), seq: 1).json()
        }
        #expect(throws: NonFiniteCoordinate(field: "lon")) {
            try LivePositionMessage(point: PositionPoint(t: 1, lat: 1, lon: .infinity), seq: 1).json()
        }
        #expect(throws: (any Error).self) { try Self.foundationJSON(LivePositionMessage(point: PositionPoint(t: 1, lat: .nan, lon: 2), seq: 1)) }
    }

    /// Unit ids come from configuration: every character must survive, escaped as Foundation does.
    @Test func stringsAreEscapedAsTheFoundationEncoderEscapesThem() throws {
        let awkward = "a/b\"c\\d" + String((0..<0x20).map { Character(Unicode.Scalar(UInt8($0))) }) + "\u{7F}é\u{2028}🚕"
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
            var writer = JSONWriter(capacity: 0)
            writer.integer(value)
            #expect("[" + String(decoding: writer.bytes, as: UTF8.self) + "]" == (try Self.foundationJSON([value])))
        }
    }
}
