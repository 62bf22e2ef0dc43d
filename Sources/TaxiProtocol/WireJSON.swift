import StrictJSON

// The position messages, the hot path of the outbox: a unit packs one live message per reported
// fix and a 24 h backlog is thousands of backfill batches, and the generic encoder (a new container
// tree and boxed values per message) cost more than the SQLite work around it. The bytes are
// exactly what `JSONEncoder` with `[.sortedKeys, .withoutEscapingSlashes]` writes for the same
// value (tests compare them); the keys are written in sorted order here.

/// A non-finite number where the protocol requires one (`lat`, `lon`): refused like the Foundation
/// encoder refuses it, never written as `NaN` or `null`.
public struct NonFiniteCoordinate: Error, Equatable {
    public var field: String

    public init(field: String) {
        self.field = field
    }
}

extension JSONWriter {
    /// `{"backfill":true,"id":…,"points":[…],"seq":…,"unit":…}`; `point` writes one element of `points`.
    static func backfillMessage<Points: Collection>(
        id: String, points: Points, seq: Int64, unit: String, point: (Points.Element, inout JSONWriter) -> Void
    ) -> [UInt8] {
        var writer = JSONWriter(capacity: 96 + id.utf8.count + unit.utf8.count + points.count * 24)
        writer.raw(#"{"backfill":true,"id":"#)
        writer.string(id)
        writer.raw(#","points":["#)
        var first = true
        for element in points {
            if !first { writer.byte(",") }
            first = false
            point(element, &writer)
        }
        writer.raw(#"],"seq":"#)
        writer.integer(seq)
        writer.raw(#","unit":"#)
        writer.string(unit)
        writer.byte("}")
        return writer.bytes
    }
}

extension LivePositionMessage {
    /// The wire bytes of a live `pos` message (docs/protocol.md): `{"id":…,"p":[…]}`, with `age`
    /// and `stale` around them for a heartbeat. A coordinate that is not finite is refused, like
    /// the Foundation encoder refuses it.
    public func json() throws(NonFiniteCoordinate) -> [UInt8] {
        guard point.lat.isFinite else { throw NonFiniteCoordinate(field: "lat") }
        guard point.lon.isFinite else { throw NonFiniteCoordinate(field: "lon") }
        var writer = JSONWriter(capacity: 80)
        writer.byte("{")
        if let age = point.age {
            writer.raw(#""age":"#)
            writer.integer(age)
            writer.byte(",")
        }
        writer.raw(#""id":"#)
        writer.string(id)
        writer.raw(#","p":"#)
        writer.backfillRow(row)
        if let stale = point.stale { writer.raw(stale ? #","stale":true"# : #","stale":false"#) }
        writer.byte("}")
        return writer.bytes
    }
}

extension BackfillMessage {
    /// The wire bytes of a backfill `pos` message (docs/protocol.md, "Backfill batches"): what
    /// `BackfillMessage(unit:seq:id:points:)` encodes to, written straight from the points without
    /// the rows in between.
    public static func writeJSON(unit: String, seq: Int64, id: String, points: ArraySlice<PositionPoint>) -> [UInt8] {
        var differences = PositionBatch.Differences()
        return JSONWriter.backfillMessage(id: id, points: points, seq: seq, unit: unit) { point, writer in
            writer.backfillRow(differences.next(point))
        }
    }
}

extension JSONWriter {
    /// `[v,v,…]` with `null` for an unknown value, trailing unknowns left out; without an array per
    /// point: 86,400 points a day of backlog.
    fileprivate mutating func backfillRow(_ row: PositionBatch.Row) {
        byte("[")
        integer(row.t)
        byte(",")
        integer(row.lat)
        byte(",")
        integer(row.lon)
        let count = row.count
        if count > 3 { optionalInteger(row.spd) }
        if count > 4 { optionalInteger(row.hdg) }
        if count > 5 { optionalInteger(row.acc) }
        byte("]")
    }

    private mutating func optionalInteger(_ value: Int64?) {
        byte(",")
        if let value { integer(value) } else { raw("null") }
    }
}
