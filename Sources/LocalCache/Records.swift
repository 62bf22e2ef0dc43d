#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import TaxiProtocol
import UnitCore

// The rows of the store's tables as records (SQLiteValues.swift), each naming its columns once. A row that does not
// fit its record (a NULL in a required column, a value of the wrong kind) throws when it is read,
// and the caller sets it aside; it never traps. The outbox and the position queue are read by the
// pump's own statements (Outbox.swift), tuned for the drain.

/// A row of `positions`, the local history: every valid fix, reported or not. Written by
/// `insertPosition`'s prepared statement, once per fix.
struct PositionRow: FetchableRecord {
    enum Columns {
        static let t = Column("t")
        static let lat = Column("lat")
        static let lon = Column("lon")
        static let spd = Column("spd")
        static let hdg = Column("hdg")
        static let acc = Column("acc")
    }

    var fix: Fix

    init(row: Row) throws {
        fix = Fix(
            time: try row.decode(forColumn: Columns.t), latitude: try row.decode(forColumn: Columns.lat),
            longitude: try row.decode(forColumn: Columns.lon), speed: try row.decode(forColumn: Columns.spd),
            track: try row.decode(forColumn: Columns.hdg), accuracy: try row.decode(forColumn: Columns.acc))
    }
}

extension RideRecord: FetchableRecord, PersistableRecord {
    static let databaseTableName = "rides"

    enum Columns {
        static let job = Column("job")
        static let passengers = Column("passengers")
        static let pickupTime = Column("pickup_time")
        static let pickupLat = Column("pickup_lat")
        static let pickupLon = Column("pickup_lon")
        static let dropTime = Column("drop_time")
        static let dropLat = Column("drop_lat")
        static let dropLon = Column("drop_lon")
        static let distanceM = Column("distance_m")
        static let fare = Column("fare")
        static let currency = Column("currency")
        static let fareSource = Column("fare_source")
        static let payment = Column("payment")
        static let pickupAddress = Column("pickup_address")
    }

    init(row: Row) throws {
        func coordinate(_ lat: Column, _ lon: Column) throws -> Coordinate? {
            guard let lat: Double = try row.decode(forColumn: lat), let lon: Double = try row.decode(forColumn: lon) else { return nil }
            return Coordinate(lat: lat, lon: lon)
        }
        self.init(
            job: try row.decode(forColumn: Columns.job), passengers: try row.decode(forColumn: Columns.passengers),
            pickupTime: try row.decode(forColumn: Columns.pickupTime), dropTime: try row.decode(forColumn: Columns.dropTime),
            pickupPosition: try coordinate(Columns.pickupLat, Columns.pickupLon), dropPosition: try coordinate(Columns.dropLat, Columns.dropLon),
            distanceM: try row.decode(forColumn: Columns.distanceM), fare: try Self.fare(row), payment: try row.decode(forColumn: Columns.payment),
            pickupAddress: try row.decode(forColumn: Columns.pickupAddress))
    }

    /// The fare columns: all three or none, within `FareLimits`; anything else does not fit.
    private static func fare(_ row: Row) throws -> Fare? {
        let amount: Int64? = try row.decode(forColumn: Columns.fare)
        let currency: String? = try row.decode(forColumn: Columns.currency)
        let source: String? = try row.decode(forColumn: Columns.fareSource)
        if amount == nil, currency == nil, source == nil { return nil }
        guard let amount, let currency, let source, let fareSource = FareSource(rawValue: source),
              FareLimits.check(fare: amount, currency: currency) == nil else {
            throw DatabaseError(resultCode: DatabaseError.mismatch, message: "rides.fare, currency and fare_source do not make a fare")
        }
        return Fare(amount: amount, currency: currency, source: fareSource)
    }

    func encode(to container: inout PersistenceContainer) throws {
        container[Columns.job] = job
        container[Columns.passengers] = passengers
        container[Columns.pickupTime] = pickupTime
        container[Columns.pickupLat] = pickupPosition?.lat
        container[Columns.pickupLon] = pickupPosition?.lon
        container[Columns.dropTime] = dropTime
        container[Columns.dropLat] = dropPosition?.lat
        container[Columns.dropLon] = dropPosition?.lon
        container[Columns.distanceM] = distanceM
        container[Columns.fare] = fare?.amount
        container[Columns.currency] = fare?.currency
        container[Columns.fareSource] = fare?.source.rawValue
        container[Columns.payment] = payment
        container[Columns.pickupAddress] = pickupAddress
    }
}

/// A row of `fleet_config`: the documents of one scope.
struct FleetConfigRow: FetchableRecord, PersistableRecord {
    static let databaseTableName = "fleet_config"

    enum Columns {
        static let scope = Column("scope")
        static let seenVersion = Column("seen_version")
        static let version = Column("version")
        static let document = Column("document")
        static let onProbation = Column("on_probation")
        static let lastGoodVersion = Column("last_good_version")
        static let lastGoodDocument = Column("last_good_document")
        static let topic = Column("topic")
        static let lastGoodTopic = Column("last_good_topic")
        static let trialStartedAt = Column("trial_started_at")
        static let trialWindowS = Column("trial_window_s")
        static let updatedAt = Column("updated_at")
    }

    /// A scope this release does not know (a newer one wrote it) stays in the table, unused.
    var scope: String
    var record: ConfigScopeRecord
    var updatedAt: UnitTime

    init(scope: ConfigScope, record: ConfigScopeRecord, updatedAt: UnitTime) {
        self.scope = scope.rawValue
        self.record = record
        self.updatedAt = updatedAt
    }

    init(row: Row) throws {
        func document(_ version: Column, _ payload: Column, _ topic: Column) throws -> AppliedConfigDocument? {
            guard let version: Int = try row.decode(forColumn: version), let payload: Data = try row.decode(forColumn: payload) else { return nil }
            return AppliedConfigDocument(version: version, payload: Array(payload), topic: try row.decode(forColumn: topic))
        }
        scope = try row.decode(forColumn: Columns.scope)
        record = ConfigScopeRecord(
            seenVersion: try row.decode(forColumn: Columns.seenVersion), applied: try document(Columns.version, Columns.document, Columns.topic),
            probation: try row.decode(Bool.self, forColumn: Columns.onProbation)
                ? .init(
                    lastGood: try document(Columns.lastGoodVersion, Columns.lastGoodDocument, Columns.lastGoodTopic),
                    startedAt: try row.decode(forColumn: Columns.trialStartedAt), windowS: try row.decode(forColumn: Columns.trialWindowS))
                : nil)
        updatedAt = try row.decode(forColumn: Columns.updatedAt)
    }

    func encode(to container: inout PersistenceContainer) throws {
        container[Columns.scope] = scope
        container[Columns.seenVersion] = record.seenVersion
        container[Columns.version] = record.applied?.version
        container[Columns.document] = record.applied.map { Data($0.payload) }
        container[Columns.onProbation] = record.probation != nil
        container[Columns.lastGoodVersion] = record.probation?.lastGood?.version
        container[Columns.lastGoodDocument] = record.probation?.lastGood.map { Data($0.payload) }
        container[Columns.topic] = record.applied?.topic
        container[Columns.lastGoodTopic] = record.probation?.lastGood?.topic
        container[Columns.trialStartedAt] = record.probation?.startedAt
        container[Columns.trialWindowS] = record.probation?.windowS
        container[Columns.updatedAt] = updatedAt
    }
}

/// A row of `executed_commands`: a fleet command that must not run again before it expires.
struct ExecutedCommandRow: FetchableRecord, PersistableRecord {
    static let databaseTableName = "executed_commands"

    enum Columns {
        static let id = Column("id")
        static let expiresAt = Column("expires_at")
    }

    var id: String
    var expiresAt: UnitTime

    init(id: String, expiresAt: UnitTime) {
        self.id = id
        self.expiresAt = expiresAt
    }

    init(row: Row) throws {
        id = try row.decode(forColumn: Columns.id)
        expiresAt = try row.decode(forColumn: Columns.expiresAt)
    }

    func encode(to container: inout PersistenceContainer) throws {
        container[Columns.id] = id
        container[Columns.expiresAt] = expiresAt
    }
}

/// A row of `aside`: something the unit could not use, kept for diagnosis.
struct AsideRow: FetchableRecord, PersistableRecord {
    static let databaseTableName = "aside"

    enum Columns {
        static let kind = Column("kind")
        static let reason = Column("reason")
        static let at = Column("at")
        static let data = Column("data")
    }

    /// An `AsideKind`'s raw value; a newer release may have written another.
    var kind: String
    var reason: String
    var at: UnitTime
    var data: Data?

    init(kind: AsideKind, reason: String, at: UnitTime, data: Data?) {
        self.kind = kind.rawValue
        self.reason = reason
        self.at = at
        self.data = data
    }

    init(row: Row) throws {
        kind = try row.decode(forColumn: Columns.kind)
        reason = try row.decode(forColumn: Columns.reason)
        at = try row.decode(forColumn: Columns.at)
        data = try row.decode(forColumn: Columns.data)
    }

    func encode(to container: inout PersistenceContainer) throws {
        container[Columns.kind] = kind
        container[Columns.reason] = reason
        container[Columns.at] = at
        container[Columns.data] = data
    }
}
