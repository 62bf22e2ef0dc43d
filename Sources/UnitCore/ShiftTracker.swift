import TaxiProtocol

/// `[shift]`: the limits of a driver's working day, each in minutes; 0: off.
public struct ShiftSettings: Sendable, Equatable {
    /// Driving without a break that makes the terminal say a break is due.
    public var maxContinuousDrivingMin: Int
    /// The shift's length (from its start, pauses and off-duty time included).
    public var maxShiftMin: Int
    /// A break at least this long resets continuous driving and is reported; 0: a break of any
    /// length resets it, and none is reported.
    public var breakMin: Int
    /// The terminal warns this long before a limit; 0: only when it is reached.
    public var warnBeforeMin: Int

    /// What every `[shift]` key accepts: up to a day.
    public static let minutes = 0...1_440

    public init(maxContinuousDrivingMin: Int = 0, maxShiftMin: Int = 0, breakMin: Int = 0, warnBeforeMin: Int = 0) {
        self.maxContinuousDrivingMin = maxContinuousDrivingMin
        self.maxShiftMin = maxShiftMin
        self.breakMin = breakMin
        self.warnBeforeMin = warnBeforeMin
    }

    /// The limit's span, nil when it is off.
    func span(of limit: ShiftLimit) -> Duration? {
        let minutes = switch limit {
        case .continuousDriving: maxContinuousDrivingMin
        case .shiftLength: maxShiftMin
        }
        return minutes > 0 ? .seconds(minutes.saturatingMultiply(60)) : nil
    }
}

/// What a shift limit measures.
public enum ShiftLimit: String, Sendable, Equatable, CaseIterable, Codable {
    case continuousDriving = "continuous_driving"
    case shiftLength = "shift_length"
}

/// A warning the driver gets once: `reached` false is the one `warn_before_min` ahead.
public struct ShiftWarning: Sendable, Hashable {
    public var limit: ShiftLimit
    public var reached: Bool
    /// Whole minutes to the limit when it was given; 0 once reached.
    public var minutesLeft: Int

    public init(limit: ShiftLimit, reached: Bool, minutesLeft: Int = 0) {
        self.limit = limit
        self.reached = reached
        self.minutesLeft = minutesLeft
    }
}

/// The open shift: what the tracker keeps, and the snapshot with it.
public struct Shift: Sendable, Equatable {
    public var startedAt: UnitTime
    public var startOdometerKm: Int?
    /// On-duty time up to `onDutySince` (or all of it while off duty).
    public var onDutyBefore: Duration
    /// Unit clock when the driver last went on duty; nil while off duty.
    public var onDutySince: UnitTime?
    public var driving: Duration
    /// Driving since the last break.
    public var continuousDriving: Duration
    /// Unit clock of the last fix counted.
    public var lastFixAt: UnitTime?
    /// Unit clock since when the driver rests (paused for a break, or off duty); nil while working.
    public var restingSince: UnitTime?
    /// The warnings given since the shift started (continuous driving's: since the last break).
    public var warned: [ShiftWarning]

    public init(
        startedAt: UnitTime, startOdometerKm: Int? = nil, onDutyBefore: Duration = .zero, onDutySince: UnitTime? = nil, driving: Duration = .zero,
        continuousDriving: Duration = .zero, lastFixAt: UnitTime? = nil, restingSince: UnitTime? = nil, warned: [ShiftWarning] = []
    ) {
        self.startedAt = startedAt
        self.startOdometerKm = startOdometerKm
        self.onDutyBefore = onDutyBefore
        self.onDutySince = onDutySince
        self.driving = driving
        self.continuousDriving = continuousDriving
        self.lastFixAt = lastFixAt
        self.restingSince = restingSince
        self.warned = warned
    }

    /// The most a counter holds: what the snapshot's milliseconds can say, whatever the clock did.
    static let longestSpan: Duration = .milliseconds(Int64.max)

    public func onDuty(at now: UnitTime) -> Duration {
        onDutyBefore + (onDutySince.map { max(.zero, now - $0) } ?? .zero)
    }

    public func counters(at now: UnitTime) -> ShiftCounters {
        ShiftCounters(length: max(.zero, now - startedAt), onDuty: onDuty(at: now), driving: driving, continuousDriving: continuousDriving)
    }
}

public struct ShiftCounters: Sendable, Equatable {
    public var length: Duration
    public var onDuty: Duration
    public var driving: Duration
    public var continuousDriving: Duration

    public init(length: Duration, onDuty: Duration, driving: Duration, continuousDriving: Duration) {
        self.length = length
        self.onDuty = onDuty
        self.driving = driving
        self.continuousDriving = continuousDriving
    }
}

/// What a `shift` event says (docs/protocol.md, "Shift").
public struct ShiftReport: Sendable, Equatable {
    public enum What: String, Sendable, Equatable {
        case start, end
        /// A break long enough to reset continuous driving ended.
        case `break`
        case limit
    }

    public var what: What
    public var at: UnitTime
    public var counters: ShiftCounters
    /// The odometer the driver typed at the start or the end.
    public var odometerKm: Int?
    /// With `limit`: which one was reached.
    public var limit: ShiftLimit?
    /// With `break`: how long it was.
    public var breakLength: Duration?

    public init(what: What, at: UnitTime, counters: ShiftCounters, odometerKm: Int? = nil, limit: ShiftLimit? = nil, breakLength: Duration? = nil) {
        self.what = what
        self.at = at
        self.counters = counters
        self.odometerKm = odometerKm
        self.limit = limit
        self.breakLength = breakLength
    }
}

/// `shift start [km]`, `shift end [km]`.
public enum ShiftInput: Sendable, Equatable, Codable {
    case start(odometerKm: Int?)
    case end(odometerKm: Int?)

    /// What an odometer reading may be, in whole kilometres.
    public static let odometerKm = 0...9_999_999
}

/// The driver's working day: when the shift started, on-duty and driving time, breaks, and the
/// warnings before and at the `[shift]` limits. Pure: the state machine feeds it its fixes (with
/// the unit clock) and state changes, and carries the shift in the snapshot.
///
/// A shift starts when the driver goes on duty without one open, or with `shift start`; it ends
/// only with `shift end`, so an off-duty lunch is part of the day (and a break). Driving is the
/// time between consecutive fixes whose speed is at least `drivingSpeed`, each gap counted at most
/// `longestGap`, so a GPS that was lost does not count the hours it was silent.
public struct ShiftTracker: Sendable, Equatable {
    public private(set) var shift: Shift?
    public var settings: ShiftSettings

    /// Slower than this (m/s, about 7 km/h) the taxi is standing or creeping in a queue.
    public static let drivingSpeed = 2.0
    /// The most one gap between fixes counts (gpsd reports about once a second).
    public static let longestGap: Duration = .seconds(10)

    public init(shift: Shift? = nil, settings: ShiftSettings = ShiftSettings()) {
        self.shift = shift
        self.settings = settings
    }

    /// What one event meant for the shift: events for the dispatcher and warnings for the driver.
    public struct Outcome: Sendable, Equatable {
        public var reports: [ShiftReport] = []
        public var warnings: [ShiftWarning] = []
        /// The shift changed: the snapshot must be written.
        public var changed = false

        public init(reports: [ShiftReport] = [], warnings: [ShiftWarning] = [], changed: Bool = false) {
            self.reports = reports
            self.warnings = warnings
            self.changed = changed
        }

        static func + (lhs: Outcome, rhs: Outcome) -> Outcome {
            Outcome(reports: lhs.reports + rhs.reports, warnings: lhs.warnings + rhs.warnings, changed: lhs.changed || rhs.changed)
        }
    }

    public enum Refusal: Error, Sendable, Equatable {
        case alreadyStarted
        case noShift
    }

    /// `shift start`: opens a shift; `onDuty` whether the driver is on duty now.
    public mutating func start(at now: UnitTime, odometerKm: Int?, onDuty: Bool) -> Result<Outcome, Refusal> {
        guard shift == nil else { return .failure(.alreadyStarted) }
        return .success(open(at: now, odometerKm: odometerKm, onDuty: onDuty))
    }

    /// `shift end`: closes the shift with its final counters.
    public mutating func end(at now: UnitTime, odometerKm: Int?) -> Result<Outcome, Refusal> {
        guard let open = shift else { return .failure(.noShift) }
        shift = nil
        return .success(Outcome(reports: [ShiftReport(what: .end, at: now, counters: open.counters(at: now), odometerKm: odometerKm)], changed: true))
    }

    /// The driver's state changed to `state` (`pauseReason` when paused).
    public mutating func stateChanged(to state: StateName, pauseReason: PauseReason?, at now: UnitTime) -> Outcome {
        let onDuty = state != .offDuty
        guard var open = shift else {
            return onDuty ? open(at: now, odometerKm: nil, onDuty: true) : Outcome()
        }
        var outcome = Outcome(changed: true)
        if onDuty, open.onDutySince == nil { open.onDutySince = now }
        if !onDuty, let since = open.onDutySince {
            open.onDutyBefore = min(open.onDutyBefore + max(.zero, now - since), Shift.longestSpan)
            open.onDutySince = nil
        }
        let resting = !onDuty || (state == .paused && pauseReason == .break)
        if resting, open.restingSince == nil { open.restingSince = now }
        if !resting, let since = open.restingSince {
            open.restingSince = nil
            let length = max(.zero, now - since)
            if length >= .seconds(settings.breakMin.saturatingMultiply(60)) {
                open.continuousDriving = .zero
                open.warned.removeAll { $0.limit == .continuousDriving }
                // Without a fleet's minimum every stop would be a break for the dispatcher.
                if settings.breakMin > 0 {
                    outcome.reports.append(ShiftReport(what: .break, at: now, counters: open.counters(at: now), breakLength: length))
                }
            }
        }
        shift = open
        return outcome + checkLimits(at: now)
    }

    /// A valid fix at `now` (unit clock), `speed` in m/s when the receiver gave one.
    public mutating func fix(speed: Double?, at now: UnitTime) -> Outcome {
        guard var open = shift else { return Outcome() }
        let minutesBefore = open.driving.wholeSeconds / 60
        if let last = open.lastFixAt, now > last, let speed, speed >= Self.drivingSpeed {
            let counted = min(now - last, Self.longestGap)
            open.driving = min(open.driving + counted, Shift.longestSpan)
            open.continuousDriving = min(open.continuousDriving + counted, Shift.longestSpan)
        }
        open.lastFixAt = now
        shift = open
        var outcome = checkLimits(at: now)
        // Stored once per minute of driving, not with every fix: a restart loses at most that.
        if open.driving.wholeSeconds / 60 != minutesBefore { outcome.changed = true }
        return outcome
    }

    /// The settings changed (a fleet document): limits newly reached are said at the next fix.
    public mutating func use(_ next: ShiftSettings) {
        settings = next
    }

    private mutating func open(at now: UnitTime, odometerKm: Int?, onDuty: Bool) -> Outcome {
        let opened = Shift(startedAt: now, startOdometerKm: odometerKm, onDutySince: onDuty ? now : nil, restingSince: onDuty ? nil : now)
        shift = opened
        return Outcome(reports: [ShiftReport(what: .start, at: now, counters: opened.counters(at: now), odometerKm: odometerKm)], changed: true)
    }

    /// Each warning once: ahead of a limit by `warn_before_min`, and when it is reached.
    private mutating func checkLimits(at now: UnitTime) -> Outcome {
        guard var open = shift else { return Outcome() }
        var outcome = Outcome()
        let counters = open.counters(at: now)
        for limit in ShiftLimit.allCases {
            guard let span = settings.span(of: limit) else { continue }
            let used = switch limit {
            case .continuousDriving: counters.continuousDriving
            case .shiftLength: counters.length
            }
            let given = open.warned.filter { $0.limit == limit }
            if used >= span {
                guard !given.contains(where: \.reached) else { continue }
                let warning = ShiftWarning(limit: limit, reached: true)
                open.warned.append(warning)
                outcome.warnings.append(warning)
                outcome.reports.append(ShiftReport(what: .limit, at: now, counters: counters, limit: limit))
            } else if settings.warnBeforeMin > 0, used >= span - .seconds(settings.warnBeforeMin.saturatingMultiply(60)), given.isEmpty {
                let left = Int(clamping: ((span - used).wholeSeconds + 59) / 60)
                let warning = ShiftWarning(limit: limit, reached: false, minutesLeft: left)
                open.warned.append(warning)
                outcome.warnings.append(warning)
            }
        }
        outcome.changed = !outcome.warnings.isEmpty
        shift = open
        return outcome
    }
}
