/// Settings for everything between a gpsd report and a `pos` message.
public struct PositionSettings: Sendable, Equatable {
    public var maxHorizontalErrorM: Double
    public var reporting: ReportingPolicy
    public var zones: [Zone]
    public var zoneHysteresisM: Double

    public init(
        maxHorizontalErrorM: Double = 50, reporting: ReportingPolicy = ReportingPolicy(), zones: [Zone] = [], zoneHysteresisM: Double = 30
    ) {
        self.maxHorizontalErrorM = maxHorizontalErrorM
        self.reporting = reporting
        self.zones = zones
        self.zoneHysteresisM = zoneHysteresisM
    }
}

/// What happens to gpsd reports: validity, the unit clock, the reporting policy, the stale-position
/// heartbeat and zones. The state machine owns one and tells it the unit's state by its wire name.
public struct PositionPipeline: Sendable {
    public private(set) var clock = UnitClock()
    public private(set) var zones: ZoneTracker
    public let settings: PositionSettings
    private var validator: FixValidator
    private var lastReported: Fix?
    private var lastValid: (fix: Fix, monotonicS: Double)?
    private var heartbeatScheduled = false

    public init(settings: PositionSettings = PositionSettings()) {
        self.settings = settings
        validator = FixValidator(maxHorizontalErrorM: settings.maxHorizontalErrorM)
        zones = ZoneTracker(zones: settings.zones, hysteresisM: settings.zoneHysteresisM)
    }

    public var lastValidFix: Fix? { lastValid?.fix }

    /// A TPV report from gpsd, read at `sample`.
    public mutating func handle(_ report: GPSSample, at sample: ClockSample, state: String) -> [UnitAction] {
        guard case .success(let fix) = validator.validate(report, clock: clock.reading(at: sample)) else { return [] }
        clock.fixAccepted(fixTimeS: report.time, at: sample)
        lastValid = (fix, sample.monotonicS)
        let report = settings.reporting.shouldReport(fix, lastReported: lastReported, state: state)
        if report { lastReported = fix }
        var actions: [UnitAction] = [.recordFix(fix, report: report)]
        if !heartbeatScheduled {
            heartbeatScheduled = true
            actions.append(.startTimer(.heartbeat, afterS: settings.reporting.heartbeatIntervalS(for: state)))
        }
        if let change = zones.update(latitude: fix.latitude, longitude: fix.longitude) {
            actions.append(.zoneChanged(change, at: clock.reading(at: sample).milliseconds))
        }
        return actions
    }

    /// The unit's state changed: its first fix is reported, and the heartbeat follows the new interval
    /// (the timer fires at once and works out the rest from the clock it brings).
    public mutating func stateChanged() -> [UnitAction] {
        lastReported = nil
        return heartbeatScheduled ? [.startTimer(.heartbeat, afterS: 0)] : []
    }

    /// The heartbeat timer fired: if no fix has been valid for the interval, the last one goes out marked stale.
    public mutating func heartbeatDue(at sample: ClockSample, state: String) -> [UnitAction] {
        guard let lastValid else { return [] }
        let intervalS = settings.reporting.heartbeatIntervalS(for: state)
        let silentS = sample.monotonicS - lastValid.monotonicS
        guard silentS >= intervalS else { return [.startTimer(.heartbeat, afterS: intervalS - silentS)] }
        let ageMs = clock.reading(at: sample).milliseconds - lastValid.fix.time
        return [.reportStale(lastValid.fix, ageMs: ageMs), .startTimer(.heartbeat, afterS: intervalS)]
    }
}
