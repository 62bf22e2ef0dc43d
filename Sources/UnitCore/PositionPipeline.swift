import TaxiProtocol

/// Settings for everything between a gpsd report and a `pos` message.
public struct PositionSettings: Sendable, Equatable {
    public var maxHorizontalErrorM: Double
    public var reporting: ReportingPolicy
    public var zones: [Zone]
    public var zoneHysteresisM: Double
    /// `[privacy] off_duty_positions`: false keeps an off-duty taxi's fixes to itself (see `isPrivate`).
    public var offDutyPositions: Bool

    public init(
        maxHorizontalErrorM: Double = 50, reporting: ReportingPolicy = ReportingPolicy(), zones: [Zone] = [], zoneHysteresisM: Double = 30,
        offDutyPositions: Bool = true
    ) {
        self.offDutyPositions = offDutyPositions
        self.maxHorizontalErrorM = maxHorizontalErrorM
        self.reporting = reporting
        self.zones = zones
        self.zoneHysteresisM = zoneHysteresisM
    }
}

/// What happens to gpsd reports: validity, the unit clock, the reporting policy, the stale-position
/// heartbeat and zones. The state machine owns one and tells it the unit's state by its wire name
/// (`panic` while an alarm is open).
public struct PositionPipeline: Sendable {
    public private(set) var clock = UnitClock()
    public private(set) var zones: ZoneTracker
    public private(set) var settings: PositionSettings
    private var validator: FixValidator
    private var lastReported: Fix?
    /// The last valid fix and the unit clock when it arrived.
    private var lastValid: (fix: Fix, arrivedAt: UnitTime)?
    private var heartbeatScheduled = false
    /// The ignition is off: positions follow the `ignition_off` rule (except in panic).
    public var ignitionOff = false
    /// Reports refused because the receiver said something impossible (`FixValidator.Rejection.isOutOfRange`), since start.
    public private(set) var fixesOutOfRange = 0

    public init(settings: PositionSettings = PositionSettings()) {
        self.settings = settings
        validator = FixValidator(maxHorizontalErrorM: settings.maxHorizontalErrorM)
        zones = ZoneTracker(zones: settings.zones, hysteresisM: settings.zoneHysteresisM)
    }

    /// A TPV report from gpsd, read when the clocks said `sample`. Returns the fix if it was valid.
    public mutating func handle(_ report: GPSSample, at sample: ClockSample, state: String) -> (fix: Fix, step: Step)? {
        let fix: Fix
        switch validator.validate(report, clock: clock.reading(at: sample)) {
        case .success(let valid):
            fix = valid
        case .failure(let rejection):
            if rejection.isOutOfRange { fixesOutOfRange = fixesOutOfRange.saturatingAdd(1) }
            return nil
        }
        clock.fixAccepted(fixTime: fix.time, at: sample)
        let now = clock.reading(at: sample).time
        // Off duty and private: the fix sets the clock and is the state machine's last fix (an SOS
        // still carries it), but it is neither reported, stored, matched to zones nor repeated by
        // the heartbeat later.
        if isPrivate(state) { return (fix, Step()) }
        lastValid = (fix, now)
        let report = settings.reporting.shouldReport(fix, lastReported: lastReported, state: ruleName(state))
        if report { lastReported = fix }
        var step = Step(fixes: [RecordedFix(fix, report: report)])
        if !heartbeatScheduled {
            heartbeatScheduled = true
            step.timers.append(.start(.heartbeat, fireAt: now + heartbeatInterval(state)))
        }
        if let change = zones.update(latitude: fix.latitude, longitude: fix.longitude) {
            step.messages.append(.zone(change, at: now))
            step.broadcastZones = change.broadcastZones
        }
        return (fix, step)
    }

    /// The fleet changed the settings: from the next fix on, validity, reporting, privacy and zones
    /// follow them. The clock and the fixes seen are kept; the zone the taxi is in is kept unless the
    /// zones themselves changed (then the next fix says where it is); the heartbeat is re-armed on
    /// the new interval.
    public mutating func reconfigure(_ next: PositionSettings, state: String) -> Step {
        var step = Step()
        if next.zones != settings.zones || next.zoneHysteresisM != settings.zoneHysteresisM {
            let listened = zones.broadcastZone
            zones = ZoneTracker(zones: next.zones, hysteresisM: next.zoneHysteresisM, current: zones.current)
            // A removed zone's topic carries nothing for the taxi, yet its messages would count
            // against the inbound limit until the next fix: left at once (and joined again at once
            // if the zone comes back while the taxi is still reported in it).
            if listened != zones.broadcastZone { step.broadcastZones = BroadcastZoneChange(leave: listened, join: zones.broadcastZone) }
        }
        settings = next
        validator = FixValidator(maxHorizontalErrorM: next.maxHorizontalErrorM)
        return step + stateChanged(to: state, reportNextFix: false)
    }

    /// The state changed (or panic began or ended): the heartbeat follows the new interval (at once,
    /// if the last fix is older than that already) and, unless told otherwise, the next fix is reported.
    public mutating func stateChanged(to state: String, reportNextFix: Bool = true) -> Step {
        if reportNextFix { lastReported = nil }
        guard heartbeatScheduled, let lastValid else { return Step() }
        return Step(timers: [.start(.heartbeat, fireAt: lastValid.arrivedAt + heartbeatInterval(state))])
    }

    /// The heartbeat timer fired at unit clock `now`: if no fix has been valid for the interval, the
    /// last one goes out marked stale.
    public mutating func heartbeatDue(now: UnitTime, state: String) -> Step {
        guard let lastValid else { return Step() }
        let interval = heartbeatInterval(state)
        if isPrivate(state) { return Step(timers: [.start(.heartbeat, fireAt: now + interval)]) }
        guard now - lastValid.arrivedAt >= interval else {
            return Step(timers: [.start(.heartbeat, fireAt: lastValid.arrivedAt + interval)])
        }
        return Step(
            messages: [.stalePosition(lastValid.fix, age: max(.zero, now - lastValid.fix.time))],
            timers: [.start(.heartbeat, fireAt: now + interval)])
    }

    /// No position leaves the unit in this state (`[privacy] off_duty_positions = false` while off duty).
    public func isPrivate(_ state: String) -> Bool {
        !settings.offDutyPositions && state == StateName.offDuty.rawValue
    }

    private func heartbeatInterval(_ state: String) -> Duration {
        settings.reporting.heartbeatInterval(for: ruleName(state))
    }

    /// The reporting rule a state follows: a parked taxi's while the ignition is off, but never
    /// in panic.
    private func ruleName(_ state: String) -> String {
        ignitionOff && state != ReportingPolicy.panic ? ReportingPolicy.ignitionOff : state
    }
}
