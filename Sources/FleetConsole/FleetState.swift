import Foundation
import StrictJSON
import TaxiProtocol
import UnitCore

/// What one unit last said about itself on its retained topics (`status`, `telemetry`, `pos/last`).
public struct UnitReport: Sendable, Equatable {
    public var unit: String
    /// The retained status; nil when only telemetry or a position was seen.
    public var status: JSONDocument?
    public var telemetry: JSONDocument?
    public var lastPosition: PositionPoint?

    public init(unit: String) {
        self.unit = unit
    }

    /// A status of `online: false` is the last will or a clean shutdown.
    public var online: Bool { status?.bool("online") == true }
    public var software: String? { status?.string("software") }
    public var protocolVersion: Int? { status?.int("protocol") }
    public var configVersions: [String: Int] { status?.counts("config_versions") ?? [:] }
    public var driver: String? { status?.string("driver") }
    public var state: String? { status?.string("state") }
    public var zone: String? { status?.string("zone") }
    /// What waits on the unit: the status's outbox classes, or the telemetry's gauge when newer.
    public var outboxDepth: Int? {
        let classes = status?.counts("outbox") ?? [:]
        let fromStatus: Int? = classes.isEmpty ? nil : ["alarm", "reply", "event", "position"].reduce(0) { $0 + (classes[$1] ?? 0) }
        guard let fromTelemetry = telemetry?["gauges"]?.int("outbox_depth") else { return fromStatus }
        guard let fromStatus, let statusT = status?.int("t"), let telemetryT = telemetry?.int("t"), statusT > telemetryT else {
            return fromTelemetry
        }
        return fromStatus
    }
    /// Everything the unit set aside since its store was created, by kind.
    public var setAside: [String: Int] { status?.counts("aside") ?? [:] }

    /// When the unit's daemon started (unit clock, ms), from an online status.
    public var since: Int64? {
        guard online, let t = status?.int("t"), let uptime = status?.int("uptime_s") else { return nil }
        // Saturating: a unit's status is outside data, and an absurd one must not stop the console.
        return Int64(t).saturatingSubtract(Int64(uptime.saturatingMultiply(1000)))
    }

    /// The newest fix time any of the three topics tells of (unit clock, ms).
    public var lastFixTime: Int64? {
        var times: [Int64] = []
        if let lastPosition { times.append(lastPosition.t) }
        if let status, let t = status.int("t"), let age = status.int("fix_age_ms") { times.append(Int64(t).saturatingSubtract(Int64(age))) }
        if let telemetry, let t = telemetry.int("t"), let age = telemetry["gauges"]?.double("last_fix_age_s"), age >= 0,
           let ageMs = Int64(millisecondsOf: age) {
            times.append(Int64(t).saturatingSubtract(ageMs))
        }
        return times.max()
    }

    /// How old the newest fix is at `now`; nil before any fix was reported.
    public func fixAgeS(now: Int64) -> Double? {
        lastFixTime.map { Double(max(0, now - $0)) / 1000 }
    }
}

/// Every unit of the fleet, as its retained topics tell.
public struct FleetState: Sendable, Equatable {
    public let topics: FleetTopics
    public private(set) var units: [String: UnitReport] = [:]

    public init(topics: FleetTopics) {
        self.topics = topics
    }

    /// Takes one message of the state topics or a live `pos`; returns the unit it was about, or nil
    /// for a message that is none of those or does not decode (it changes nothing).
    @discardableResult
    public mutating func take(topic: String, payload: [UInt8]) -> String? {
        guard let (unit, name) = topics.split(topic), FleetTopics.stateTopics.contains(name) || name == .pos else { return nil }
        var report = units[unit] ?? UnitReport(unit: unit)
        if payload.isEmpty {
            // A retained message cleared by hand: forget it.
            if name == .status {
                report.status = nil
            } else if name == .telemetry {
                report.telemetry = nil
            } else {
                report.lastPosition = nil
            }
        } else if name == .posLast || name == .pos {
            // A live position moves the taxi; a backfill batch (history) and a fix older than the
            // one shown do not.
            guard let live = try? JSONDecoder().decode(LivePositionMessage.self, from: Data(payload)),
                  name == .posLast || live.point.t >= report.lastPosition?.t ?? .min
            else { return nil }
            report.lastPosition = live.point
        } else {
            guard let document = try? JSONDocument.parse(payload), case .object = document else { return nil }
            if name == .status { report.status = document } else { report.telemetry = document }
        }
        units[unit] = report
        return unit
    }

    /// The units that said they are online, and the others (a last will, a shutdown, or no status).
    public var online: [String] { units.values.filter(\.online).map(\.unit).sorted() }
    public var offline: [String] { units.values.filter { !$0.online }.map(\.unit).sorted() }

    /// The highest version of `scope` ("fleet" or "unit") any of `units` says it runs.
    public func highestConfigVersion(_ scope: String, among units: [String]? = nil) -> Int? {
        (units ?? Array(self.units.keys)).compactMap { self.units[$0]?.configVersions[scope] }.max()
    }
}
