import GRDB
import UnitCore

/// A finished ride as stored in the `rides` table.
public struct RideRecord: Sendable, Equatable {
    public var job: String
    public var passengers: Int
    public var pickupTime: Int64
    public var dropTime: Int64
    public var pickupPosition: Coordinate?
    public var dropPosition: Coordinate?
    /// Path length through the fixes stored from the pickup fix to the drop fix, metres.
    public var distanceM: Double
}

extension LocalCache.Transaction {
    /// Stores the ride with the distance driven, measured over the stored fixes from the pickup fix
    /// to the drop fix in storage order (fix times may jump; storage order does not).
    @discardableResult
    public func insertRide(_ ride: RideSummary) throws -> RideRecord {
        var distance = 0.0
        if let pickup = ride.pickupFix, let drop = ride.dropFix {
            let rowOf = "SELECT MAX(id) FROM positions WHERE t = ?"
            if let first = try Int64.fetchOne(db, sql: rowOf, arguments: [pickup.time]),
               let last = try Int64.fetchOne(db, sql: rowOf, arguments: [drop.time]) {
                let points = try Row.fetchAll(
                    db, sql: "SELECT lat, lon FROM positions WHERE id BETWEEN ? AND ? ORDER BY id", arguments: [first, last]
                ).map { Coordinate(lat: $0["lat"], lon: $0["lon"]) }
                distance = Coordinate.pathLength(points)
            }
        }
        let record = RideRecord(
            job: ride.job, passengers: ride.passengers, pickupTime: ride.pickupTime, dropTime: ride.dropTime,
            pickupPosition: ride.pickupFix.map(Coordinate.init), dropPosition: ride.dropFix.map(Coordinate.init), distanceM: distance)
        try db.execute(
            sql: """
                INSERT INTO rides (job, passengers, pickup_time, pickup_lat, pickup_lon, drop_time, drop_lat, drop_lon, distance_m)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                record.job, record.passengers, record.pickupTime, record.pickupPosition?.lat, record.pickupPosition?.lon,
                record.dropTime, record.dropPosition?.lat, record.dropPosition?.lon, record.distanceM,
            ]
        )
        return record
    }
}

extension LocalCache {
    /// Every stored ride, oldest first.
    public func rides() throws -> [RideRecord] {
        try database.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM rides ORDER BY id").map { row in
                func coordinate(_ prefix: String) throws -> Coordinate? {
                    guard let lat: Double = try row.decode(forColumn: "\(prefix)_lat"), let lon: Double = try row.decode(forColumn: "\(prefix)_lon") else { return nil }
                    return Coordinate(lat: lat, lon: lon)
                }
                return RideRecord(
                    job: (try row.decode(forColumn: "job")), passengers: (try row.decode(forColumn: "passengers")), pickupTime: (try row.decode(forColumn: "pickup_time")), dropTime: (try row.decode(forColumn: "drop_time")),
                    pickupPosition: try coordinate("pickup"), dropPosition: try coordinate("drop"), distanceM: (try row.decode(forColumn: "distance_m")))
            }
        }
    }
}
