#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Messages on the wire (docs/protocol.md). Optional fields are omitted when unknown: an unknown
/// value is nil, never NaN.

/// The driver's state, as the dispatcher sees it (`status.state`, `event.from`/`to`).
public enum StateName: String, Sendable, Codable, CaseIterable {
    case offDuty = "off_duty"
    case available
    case paused
    case offered
    case enRoute = "en_route"
    case atPickup = "at_pickup"
    case onBoard = "on_board"
}

/// Why a driver is unavailable while in service.
public enum PauseReason: String, Sendable, Codable, CaseIterable {
    case `break`
    case refuel
    case personal
    case other
}

public struct PositionPoint: Sendable, Equatable, Codable {
    /// Fix time, ms since the Unix epoch.
    public var t: Int64
    public var lat: Double
    public var lon: Double
    public var spd: Double?
    public var hdg: Double?
    public var acc: Double?
    /// Heartbeat only: this is the last valid fix again, no fix has been valid since.
    public var stale: Bool?
    /// Heartbeat only: the fix's age by the unit clock, ms.
    public var age: Int64?

    public init(t: Int64, lat: Double, lon: Double, spd: Double? = nil, hdg: Double? = nil, acc: Double? = nil) {
        self.t = t
        self.lat = lat
        self.lon = lon
        self.spd = spd
        self.hdg = hdg
        self.acc = acc
    }
}

/// A live `pos` message (docs/protocol.md, "pos"): the newest fix, alone, in at most 64 bytes. The
/// point is a backfill row (`PositionBatch`) whose time is counted from the time in the message's
/// short id; the unit and the sequence number are left out (the topic names the unit, `t` orders).
public struct LivePositionMessage: Sendable, Equatable {
    /// `LivePositionID`: the dedup key, unique per unit.
    public var id: String
    /// As sent: a speed, course or error estimate that is not finite is unknown (nil).
    public var point: PositionPoint

    /// The message for `point`; `seq`, the message's number on `pos`, tells apart the ids of
    /// messages made for the same millisecond.
    public init(point: PositionPoint, seq: Int64) {
        var point = point
        point.spd = point.spd.flatMap { $0.isFinite ? $0 : nil }
        point.hdg = point.hdg.flatMap { $0.isFinite ? $0 : nil }
        point.acc = point.acc.flatMap { $0.isFinite ? $0 : nil }
        self.point = point
        id = LivePositionID.make(time: Self.idTime(of: point), seq: seq)
    }

    /// A received message, as decoded.
    public init(id: String, point: PositionPoint) {
        self.id = id
        self.point = point
    }

    /// A fresh fix's own time, so its time column is 0; a heartbeat's (stale) the unit clock it was
    /// sent at, fix time plus age, so that every heartbeat of one fix has its own id.
    static func idTime(of point: PositionPoint) -> Int64 {
        point.stale == true ? point.t.saturatingAdd(max(0, point.age ?? 0)) : point.t
    }

    /// The point's row, its time relative to the id's (0 for a fresh fix).
    var row: PositionBatch.Row {
        var differences = PositionBatch.Differences()
        var row = differences.next(point)
        row.t = point.t.saturatingSubtract(LivePositionID.time(of: id) ?? 0)
        return row
    }
}

/// The id of a live position: 9 lowercase base-36 digits of `time × 16 + seq mod 16`, `time` in
/// ms since the epoch (held within 1970…2171). Read back with `int(id, 36) // 16`.
public enum LivePositionID {
    static let length = 9
    /// 36⁹ / 16 − 1.
    static let maxTime: Int64 = 6_347_497_291_775
    private static let alphabet = Array("0123456789abcdefghijklmnopqrstuvwxyz".utf8)

    public static func make(time: Int64, seq: Int64) -> String {
        var value = min(max(time, 0), maxTime) * 16 + (seq & 15)
        var digits = [UInt8](repeating: UInt8(ascii: "0"), count: length)
        for index in digits.indices.reversed() {
            digits[index] = alphabet[Int(value % 36)]
            value /= 36
        }
        return String(decoding: digits, as: UTF8.self)
    }

    /// The time in an id; nil for anything but 9 lowercase base-36 digits.
    public static func time(of id: String) -> Int64? {
        guard id.utf8.count == length else { return nil }
        var value: Int64 = 0
        for byte in id.utf8 {
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "z"): digit = byte - UInt8(ascii: "a") + 10
            default: return nil
            }
            value = value * 36 + Int64(digit)
        }
        return value / 16
    }
}

/// The Codable form is the reference the hand-written `json()` is held to (WireJSONTests), and how
/// receivers in Swift (dispatchsim, the tests) read a live message.
extension LivePositionMessage: Codable {
    enum CodingKeys: String, CodingKey {
        case age, id, p, stale
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let id = try container.decode(String.self, forKey: .id)
        guard let base = LivePositionID.time(of: id) else {
            throw DecodingError.dataCorruptedError(forKey: .id, in: container, debugDescription: "not a live position id")
        }
        var row = try container.decode([Int64?].self, forKey: .p)
        guard let offset = row.first ?? nil, case (let time, false) = base.addingReportingOverflow(offset) else {
            throw DecodingError.dataCorruptedError(forKey: .p, in: container, debugDescription: "no time")
        }
        row[0] = time
        guard var point = PositionBatch.decode([row])?.first else {
            throw DecodingError.dataCorruptedError(forKey: .p, in: container, debugDescription: "not a position row")
        }
        point.stale = try container.decodeIfPresent(Bool.self, forKey: .stale)
        point.age = try container.decodeIfPresent(Int64.self, forKey: .age)
        self.init(id: id, point: point)
    }

    public func encode(to encoder: any Encoder) throws {
        guard point.lat.isFinite, point.lon.isFinite else {
            throw EncodingError.invalidValue(point, .init(codingPath: encoder.codingPath, debugDescription: "a coordinate is not finite"))
        }
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(point.age, forKey: .age)
        try container.encode(id, forKey: .id)
        try container.encode(row.values, forKey: .p)
        try container.encodeIfPresent(point.stale, forKey: .stale)
    }
}

/// The retained `status` document. The broker's last will replaces it with `{"online":false}`.
public struct StatusMessage: Sendable, Equatable, Codable {
    public var online: Bool
    public var unit: String
    public var state: StateName
    /// Why the driver paused; only while `paused`.
    public var reason: PauseReason?
    /// The open or offered job.
    public var job: String?
    /// The zone the taxi is in; omitted outside every zone.
    public var zone: String?
    /// `on` or `off`; omitted without an ignition input, before it said anything, and off duty while private.
    public var ignition: String?
    public var seatsLeft: Int
    /// Unit clock, ms since the Unix epoch.
    public var t: UnitTime?
    /// What waits on the unit for the broker.
    public var outbox: OutboxDepth?
    /// What the unit set aside because it could not use it (kind → count); omitted when nothing was.
    public var aside: [String: Int]?
    /// The driver logged in; omitted with nobody logged in.
    public var driver: String?
    /// The connection this status was published on (the shell's counter, docs/protocol.md "status"):
    /// a last will with a smaller `conn` is stale.
    public var conn: Int64?

    /// The birth facts (docs/protocol.md, "status"): what this unit speaks and runs, set by the shell.
    /// `SoftwareVersion.wireProtocol`.
    public var wireProtocol: Int?
    /// `SoftwareVersion.software`, what `taxiunitd --version` prints.
    public var software: String?
    /// Version of the fleet's config document in force per scope (`fleet`, `unit`); a scope without one is absent.
    public var configVersions: [String: Int]?
    /// Seconds since the daemon started.
    public var uptimeS: Int64?
    /// Ms since the last valid fix was received; omitted before the first.
    public var fixAgeMs: Int64?
    /// `persistent`, or `volatile` when the store could not be opened and an in-memory one is in use.
    public var store: StoreMode?
    /// The accepted pre-bookings not yet started, by meeting time; omitted when there are none.
    public var upcoming: [UpcomingJob]?
    /// The job stacked to start after the ride on board; omitted without one.
    public var next: String?

    public enum StoreMode: String, Sendable, Codable {
        case persistent, volatile
    }

    enum CodingKeys: String, CodingKey {
        case online, unit, state, reason, job, zone, ignition, t, outbox, aside, driver, conn, software, store, upcoming, next
        case seatsLeft = "seats_left"
        case wireProtocol = "protocol"
        case configVersions = "config_versions"
        case uptimeS = "uptime_s"
        case fixAgeMs = "fix_age_ms"
    }

    public init(
        online: Bool, unit: String, state: StateName, reason: PauseReason? = nil, job: String? = nil, zone: String?, seatsLeft: Int,
        ignition: String? = nil, t: UnitTime?, outbox: OutboxDepth? = nil, aside: [String: Int]? = nil, driver: String? = nil
    ) {
        self.driver = driver
        self.aside = aside?.isEmpty == true ? nil : aside
        self.online = online
        self.unit = unit
        self.state = state
        self.reason = reason
        self.job = job
        self.zone = zone
        self.seatsLeft = seatsLeft
        self.ignition = ignition
        self.t = t
        self.outbox = outbox
    }
}

/// A pre-booking as the status lists it.
public struct UpcomingJob: Sendable, Equatable, Codable {
    public var job: String
    public var meetingTime: UnitTime

    enum CodingKeys: String, CodingKey {
        case job
        case meetingTime = "meeting_time"
    }

    public init(job: String, meetingTime: UnitTime) {
        self.job = job
        self.meetingTime = meetingTime
    }
}

/// On `telemetry` (retained): the unit's counters since it started and its gauges now.
public struct TelemetryMessage: Sendable, Equatable, Codable {
    public var unit: String
    /// Unit clock, ms since the Unix epoch.
    public var t: UnitTime
    /// Seconds since the daemon started: counters start from 0 at every start.
    public var uptimeS: Int64
    public var counters: [String: Int64]
    public var gauges: [String: Double]

    enum CodingKeys: String, CodingKey {
        case unit, t, counters, gauges
        case uptimeS = "uptime_s"
    }

    public init(unit: String, t: UnitTime, uptimeS: Int64, counters: [String: Int64], gauges: [String: Double]) {
        self.unit = unit
        self.t = t
        self.uptimeS = uptimeS
        self.counters = counters
        // JSON has no NaN or infinity: such a gauge is left out rather than failing the message.
        self.gauges = gauges.filter { $0.value.isFinite }
    }
}

/// On `event`: the taxi entered a zone, left one, or both. State transitions share the topic; this
/// has `type` and no `from`/`to`.
public typealias ZoneEventMessage = Envelope<ZoneEvent>

/// The body of a `ZoneEventMessage`.
public struct ZoneEvent: Sendable, Equatable, Codable {
    public var type = "zone"
    /// Unit clock, ms since the Unix epoch.
    public var t: UnitTime
    /// The zone entered; omitted when the taxi left every zone.
    public var zone: String?
    /// The zone left; omitted when the taxi was in none.
    public var zoneLeft: String?

    enum CodingKeys: String, CodingKey {
        case type, t, zone
        case zoneLeft = "zone_left"
    }

    public init(t: UnitTime, zone: String?, zoneLeft: String?) {
        self.t = t
        self.zone = zone
        self.zoneLeft = zoneLeft
    }
}

/// `event` with `"type":"ignition"` (docs/protocol.md, "Ignition").
public typealias IgnitionEventMessage = Envelope<IgnitionEvent>

/// The body of an `IgnitionEventMessage`.
public struct IgnitionEvent: Sendable, Equatable, Codable {
    public var type = "ignition"
    /// Unit clock, ms since the Unix epoch.
    public var t: UnitTime
    /// `on` or `off`.
    public var ignition: String
    /// The driver's state when it changed.
    public var state: StateName

    public init(t: UnitTime, ignition: String, state: StateName) {
        self.t = t
        self.ignition = ignition
        self.state = state
    }
}

/// `event` with `"type":"soon_clear"` (docs/protocol.md, "Soon clear").
public typealias SoonClearEventMessage = Envelope<SoonClearEvent>

/// The body of a `SoonClearEventMessage`.
public struct SoonClearEvent: Sendable, Equatable, Codable {
    public var type = "soon_clear"
    /// Unit clock, ms since the Unix epoch, when the driver said it.
    public var t: UnitTime
    public var job: String
    public var clearInMin: Int

    enum CodingKeys: String, CodingKey {
        case type, t, job
        case clearInMin = "clear_in_min"
    }

    public init(t: UnitTime, job: String, clearInMin: Int) {
        self.t = t
        self.job = job
        self.clearInMin = clearInMin
    }
}

/// Undelivered messages per class (positions count points, not messages) and the positions the
/// bounded store gave up on since the store was created.
public struct OutboxDepth: Sendable, Equatable, Codable {
    public var alarm: Int
    public var reply: Int
    public var event: Int
    public var position: Int
    /// Positions removed by thinning (every Nth kept) when the store reached `[store] max_mb`.
    public var thinned: Int
    /// Positions dropped: store still full after thinning, older than `[store] retention_days`, or not writable.
    public var dropped: Int

    public init(alarm: Int = 0, reply: Int = 0, event: Int = 0, position: Int = 0, thinned: Int = 0, dropped: Int = 0) {
        self.alarm = alarm
        self.reply = reply
        self.event = event
        self.position = position
        self.thinned = thinned
        self.dropped = dropped
    }

    public var total: Int { alarm + reply + event + position }
}

public struct OfflineStatusMessage: Sendable, Equatable, Codable {
    public var online = false
    /// The connection whose last will this is.
    public var conn: Int64?

    public init(conn: Int64? = nil) {
        self.conn = conn
    }
}

extension JSONEncoder {
    /// Compact, stable key order, no escaped slashes: what goes on the wire. One shared encoder
    /// (its options never change after this), not a new one per message.
    public static let wire: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()
}
