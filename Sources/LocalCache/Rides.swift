import TaxiProtocol
import UnitCore

/// A finished ride as stored in the `rides` table (its columns: Records.swift).
public struct RideRecord: Sendable, Equatable {
    public var job: String
    public var passengers: Int
    public var pickupTime: UnitTime
    public var dropTime: UnitTime
    public var pickupPosition: Coordinate?
    public var dropPosition: Coordinate?
    /// Path length through the fixes stored from the pickup fix to the drop fix, metres.
    public var distanceM: Double
    /// What the passenger was charged, and where the amount came from; nil without a fare.
    public var fare: Fare?
    /// How the passenger paid; nil when the driver did not say.
    public var payment: String?
    /// The job's pickup address; nil when the job gave none.
    public var pickupAddress: String?
}

extension LocalCache.Transaction {
    /// Stores the ride with the distance driven, measured over the stored fixes from the pickup fix
    /// to the drop fix in storage order (fix times may jump; storage order does not).
    @discardableResult
    public func insertRide(_ ride: RideSummary) throws -> RideRecord {
        var distance = 0.0
        if let pickup = ride.pickupFix, let drop = ride.dropFix {
            func rowOf(_ fix: Fix) throws -> Int64? {
                try Int64.fetchOne(db, sql: "SELECT MAX(id) FROM positions WHERE t = ?", arguments: [fix.time])
            }
            if let first = try rowOf(pickup), let last = try rowOf(drop) {
                let points = try PositionRow.fetchAll(
                    db, sql: "SELECT * FROM positions WHERE id BETWEEN ? AND ? ORDER BY id", arguments: [first, last]
                ).map { Coordinate($0.fix) }
                distance = Coordinate.pathLength(points)
            }
        }
        let record = RideRecord(
            job: ride.job, passengers: ride.passengers, pickupTime: ride.pickupTime, dropTime: ride.dropTime,
            pickupPosition: ride.pickupFix.map(Coordinate.init), dropPosition: ride.dropFix.map(Coordinate.init), distanceM: distance,
            fare: ride.fare, payment: ride.payment, pickupAddress: ride.pickupAddress)
        try record.insert(db)
        return record
    }
}

extension LocalCache {
    /// Every stored ride, oldest first.
    public func rides() throws -> [RideRecord] {
        try database.read { db in try RideRecord.fetchAll(db, sql: "SELECT * FROM rides ORDER BY id") }
    }
}

extension LocalCache {
    /// The rides that ended at or after `since` (unit clock), oldest first.
    public func rides(endedSince since: UnitTime) throws -> [RideRecord] {
        try database.read { db in
            try RideRecord.fetchAll(db, sql: "SELECT * FROM rides WHERE drop_time >= ? ORDER BY id", arguments: [since.milliseconds])
        }
    }
}
