#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import TaxiProtocol

/// When a fix becomes a `pos` message in one state. Any condition that holds is enough.
public struct ReportingRule: Sendable, Equatable {
    /// Report once this much fix time has passed since the last report; also the heartbeat period.
    public var intervalS: Double
    /// Report once the taxi has moved this far from the last reported position; nil: never by distance.
    public var distanceM: Double?
    /// Report when the course changed this much since the last report; nil: never by heading.
    public var headingDeg: Double?
    /// Heading changes count only above this speed: a standing receiver's course is noise.
    public var minSpeedMps: Double
    /// Report every valid fix (panic).
    public var everyFix: Bool

    public init(intervalS: Double, distanceM: Double? = nil, headingDeg: Double? = nil, minSpeedMps: Double = 2, everyFix: Bool = false) {
        self.intervalS = intervalS
        self.distanceM = distanceM
        self.headingDeg = headingDeg
        self.minSpeedMps = minSpeedMps
        self.everyFix = everyFix
    }
}

/// Which fixes become `pos` messages, per unit state (by the state's wire name). Pure: the caller
/// keeps the last reported fix.
public struct ReportingPolicy: Sendable, Equatable {
    public var rules: [String: ReportingRule]

    /// The rule of an open SOS alarm, and of a taxi whose ignition is off (none of them a driver's state).
    public static let panic = "panic"
    public static let ignitionOff = "ignition_off"

    /// The heartbeat never fires more often than this, even with `interval_s = 0`.
    public static let shortestHeartbeatS: Double = 1

    public static let defaultRules: [String: ReportingRule] = {
        let offDuty = ReportingRule(intervalS: 300, distanceM: 500)
        let waiting = ReportingRule(intervalS: 30, distanceM: 100, headingDeg: 30)
        let onJob = ReportingRule(intervalS: 5, distanceM: 30, headingDeg: 20)
        return [
            "off_duty": offDuty,
            // A break: the dispatcher plans nothing around the taxi.
            "paused": offDuty,
            "available": waiting,
            "offered": waiting,
            "en_route": onJob,
            "at_pickup": onJob,
            "on_board": onJob,
            // While an SOS alarm is unacknowledged: every fix, and the last one every second without one.
            panic: ReportingRule(intervalS: 1, everyFix: true),
            // Parked with the engine off, in any state but panic: it barely moves.
            ignitionOff: ReportingRule(intervalS: 600, distanceM: 200),
        ]
    }()

    /// The state names a configuration may set rules for.
    public static var stateNames: [String] { defaultRules.keys.sorted() }

    public init(rules: [String: ReportingRule] = ReportingPolicy.defaultRules) {
        self.rules = rules
    }

    /// An unknown state reports like an active job: too many positions beat a silent taxi.
    public func rule(for state: String) -> ReportingRule {
        rules[state] ?? rules["en_route"] ?? Self.defaultRules["en_route"]!
    }

    public func heartbeatInterval(for state: String) -> Duration {
        .checkedSeconds(max(rule(for: state).intervalS, Self.shortestHeartbeatS))
    }

    public func shouldReport(_ fix: Fix, lastReported: Fix?, state: String) -> Bool {
        guard let last = lastReported else { return true }
        let rule = rule(for: state)
        if rule.everyFix { return true }
        // A fix older than the last reported one means the receiver's clock jumped: report rather than go silent.
        if fix.time < last.time || fix.time - last.time >= .checkedSeconds(rule.intervalS) { return true }
        if let distanceM = rule.distanceM, Geodesy.distanceM(from: last, to: fix) >= distanceM { return true }
        if let headingDeg = rule.headingDeg, let speed = fix.speed, speed > rule.minSpeedMps,
           let track = fix.track, let lastTrack = last.track,
           Geodesy.angleBetween(track, lastTrack) >= headingDeg {
            return true
        }
        return false
    }
}

extension Geodesy {
    /// Great-circle (haversine) distance.
    static func distanceM(from a: Fix, to b: Fix) -> Double {
        distanceM(latitude: a.latitude, longitude: a.longitude, toLatitude: b.latitude, longitude: b.longitude)
    }
}
