import GRDB
import UnitCore

/// A finished ride as stored in the `rides` table.
public struct RideRecord: Sendable, Equatable {
    public var summary: RideSummary
    /// Path length through the fixes stored between pickup and drop, metres.
    public var distanceM: Double

    static func createTable(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE rides (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                job TEXT NOT NULL,
                passengers INTEGER NOT NULL,
                pickup_time INTEGER NOT NULL,
                pickup_lat REAL,
                pickup_lon REAL,
                drop_time INTEGER NOT NULL,
                drop_lat REAL,
                drop_lon REAL,
                distance_m REAL NOT NULL
            );
            """)
    }
}

extension LocalCache.Transaction {
    /// Stores the ride with the distance driven, measured over the fixes stored in its time span.
    @discardableResult
    public func insertRide(_ ride: RideSummary) throws -> RideRecord {
        let points = try Row.fetchAll(
            db, sql: "SELECT lat, lon FROM positions WHERE t BETWEEN ? AND ? ORDER BY t, id",
            arguments: [ride.pickupTime, ride.dropTime]
        ).map { Coordinate(lat: $0["lat"], lon: $0["lon"]) }
        let record = RideRecord(summary: ride, distanceM: Coordinate.pathLength(points))
        try db.execute(
            sql: """
                INSERT INTO rides (job, passengers, pickup_time, pickup_lat, pickup_lon, drop_time, drop_lat, drop_lon, distance_m)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                ride.job, ride.passengers, ride.pickupTime, ride.pickupPosition?.lat, ride.pickupPosition?.lon, ride.dropTime,
                ride.dropPosition?.lat, ride.dropPosition?.lon, record.distanceM,
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
                func coordinate(_ prefix: String) -> Coordinate? {
                    guard let lat: Double = row["\(prefix)_lat"], let lon: Double = row["\(prefix)_lon"] else { return nil }
                    return Coordinate(lat: lat, lon: lon)
                }
                return RideRecord(
                    summary: RideSummary(
                        job: row["job"], passengers: row["passengers"], pickupTime: row["pickup_time"],
                        pickupPosition: coordinate("pickup"), dropTime: row["drop_time"], dropPosition: coordinate("drop")),
                    distanceM: row["distance_m"])
            }
        }
    }
}
