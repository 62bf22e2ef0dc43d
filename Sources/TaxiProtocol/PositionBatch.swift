/// The backfill lane's compact position encoding (docs/protocol.md, "Backfill batches").
///
/// A day at 1 Hz is 86,400 points; as JSON objects they cost ~90 bytes each on a metered cellular
/// link. Here every point is an array of integers in fixed units, each the difference to the
/// previous point's value in the same column, so a moving taxi's point costs ~20 bytes. Time is
/// differenced twice: fixes come at a steady rate, so its second difference is almost always 0.
public enum PositionBatch {
    /// Column order inside one encoded point.
    public static let columns = ["t", "lat", "lon", "spd", "hdg", "acc"]
    /// What one integer step of each column means: ms, 1e-7 degree, cm/s, 0.1 degree, dm.
    static let scales: [Double] = [1, 1e7, 1e7, 100, 10, 10]

    /// Quantises `points` (oldest first) and delta-encodes every column. Unknown values become `nil`
    /// (JSON `null`); trailing unknowns are left out.
    public static func encode(_ points: [PositionPoint]) -> [[Int64?]] {
        var differences = Differences()
        return points.map { differences.next($0).values }
    }

    /// One encoded point: 3 to 6 values, without an array of its own, so a batch can be written
    /// straight into the wire bytes (`BackfillMessage.writeJSON(unit:seq:id:points:)`).
    struct Row {
        var t: Int64
        var lat: Int64
        var lon: Int64
        var spd: Int64?
        var hdg: Int64?
        var acc: Int64?

        /// Trailing unknowns are left out.
        var count: Int { acc != nil ? 6 : hdg != nil ? 5 : spd != nil ? 4 : 3 }

        var values: [Int64?] { Array([t, lat, lon, spd, hdg, acc].prefix(count)) }
    }

    /// The running state of one batch: each column's last known value and the last time interval.
    struct Differences {
        private var t: Int64?
        private var interval: Int64 = 0
        private var lat: Int64?
        private var lon: Int64?
        private var spd: Int64?
        private var hdg: Int64?
        private var acc: Int64?

        /// The row of `point`, the next point of the batch (oldest first). Total: points that
        /// passed `PositionPoint.sanitised` encode exactly; anything else saturates, never traps.
        mutating func next(_ point: PositionPoint) -> Row {
            let time = point.t
            var row = Row(t: time, lat: 0, lon: 0)
            if let previous = t {
                let interval = time.saturatingSubtract(previous)
                row.t = interval.saturatingSubtract(self.interval)
                self.interval = interval
            }
            t = time
            row.lat = Self.difference(PositionBatch.quantise(point.lat, 1), &lat)
            row.lon = Self.difference(PositionBatch.quantise(point.lon, 2), &lon)
            row.spd = point.spd.map { Self.difference(PositionBatch.quantise($0, 3), &spd) }
            row.hdg = point.hdg.map { Self.difference(PositionBatch.quantise($0, 4), &hdg) }
            row.acc = point.acc.map { Self.difference(PositionBatch.quantise($0, 5), &acc) }
            return row
        }

        /// `value` relative to the column's last known value (absolute if there is none).
        private static func difference(_ value: Int64, _ last: inout Int64?) -> Int64 {
            defer { last = value }
            return last.map { value.saturatingSubtract($0) } ?? value
        }
    }

    /// The inverse of `encode`, for receivers and tests. Fails on rows shorter than 3 values or
    /// with an unknown time or coordinate.
    public static func decode(_ rows: [[Int64?]]) -> [PositionPoint]? {
        var previous = [Int64?](repeating: nil, count: columns.count)
        var previousInterval: Int64 = 0
        var points: [PositionPoint] = []
        for row in rows {
            guard row.count >= 3, row.count <= columns.count else { return nil }
            var absolute = [Int64?](repeating: nil, count: columns.count)
            for (column, value) in row.enumerated() {
                guard let value else { continue }
                var resolved = value
                if let last = previous[column] {
                    let (sum, overflow) = last.addingReportingOverflow(value)
                    guard !overflow else { return nil }
                    resolved = sum
                }
                if column == 0, let previousTime = previous[0] {
                    let (interval, intervalOverflow) = previousInterval.addingReportingOverflow(value)
                    let (time, timeOverflow) = previousTime.addingReportingOverflow(interval)
                    guard !intervalOverflow, !timeOverflow else { return nil }
                    previousInterval = interval
                    resolved = time
                }
                absolute[column] = resolved
                previous[column] = resolved
            }
            guard let t = absolute[0], let lat = absolute[1], let lon = absolute[2] else { return nil }
            points.append(
                PositionPoint(
                    t: t, lat: Double(lat) / scales[1], lon: Double(lon) / scales[2],
                    spd: absolute[3].map { Double($0) / scales[3] }, hdg: absolute[4].map { Double($0) / scales[4] },
                    acc: absolute[5].map { Double($0) / scales[5] }))
        }
        return points
    }

    /// In the column's unit; held at the ends of `Int64` (NaN as 0) rather than trapping.
    fileprivate static func quantise(_ value: Double, _ column: Int) -> Int64 {
        let scaled = value * scales[column]
        return Int64(roundingChecked: scaled) ?? (scaled.isNaN ? 0 : scaled > 0 ? .max : .min)
    }
}

/// A backfill message on `pos`: history the unit could not send live, oldest first.
public typealias BackfillMessage = Envelope<Backfill>

extension BackfillMessage {
    public init(unit: String, seq: Int64, id: String, points: [PositionPoint]) {
        self.init(Backfill(points: PositionBatch.encode(points)), unit: unit, seq: seq, id: id)
    }
}

/// The body of a `BackfillMessage`.
public struct Backfill: Sendable, Equatable, Codable {
    public var backfill = true
    /// `PositionBatch` rows.
    public var points: [[Int64?]]

    public init(points: [[Int64?]]) {
        self.points = points
    }
}
