/// The driver's availability state.
public enum DutyState: String, Sendable, Codable, CaseIterable {
    case offDuty = "off_duty"
    case available
}

/// What the driver can ask for (buttons, serial terminal and `taxiunitctl press` share this).
public enum DriverCommand: String, Sendable, Codable, CaseIterable {
    case duty
}

public struct UnitSettings: Sendable, Equatable {
    public var positions: PositionSettings

    public init(positions: PositionSettings = PositionSettings()) {
        self.positions = positions
    }
}

/// What survives a restart.
public struct UnitSnapshot: Sendable, Equatable, Codable {
    public var state: DutyState

    public init(state: DutyState = .offDuty) {
        self.state = state
    }
}

/// Timers are the shell's: it starts them on `.startTimer` and reports `.timerFired`.
public enum UnitTimer: String, Sendable, Hashable, CaseIterable {
    /// Sends the last valid fix, marked stale, when no fix has been valid for the reporting interval.
    case heartbeat
}

public enum UnitEvent: Sendable, Equatable {
    /// A gpsd report and the clocks when it arrived.
    case gps(GPSSample, at: ClockSample)
    case driver(DriverCommand)
    case timerFired(UnitTimer, at: ClockSample)
}

public enum UnitAction: Sendable, Equatable {
    /// Keep the fix in the local history; when `report` is set, also queue it on `pos`.
    case recordFix(Fix, report: Bool)
    /// The retained status document changed.
    case statusChanged(DutyState)
    /// Write the snapshot before anything that depends on it leaves the unit.
    case persist(UnitSnapshot)
    /// Tell the driver something (terminal line, log).
    case tellDriver(String)
    /// Queue the last valid fix on `pos` again, flagged stale, `ageMs` old by the unit clock.
    case reportStale(Fix, ageMs: Int64)
    /// Queue a zone event stamped `at` (unit clock, ms).
    case zoneChanged(ZoneChange, at: Int64)
    /// (Re)start `timer`: one that is running already is replaced.
    case startTimer(UnitTimer, afterS: Double)
}

/// The unit's state machine: every decision, no effects. The shell feeds events and performs the actions.
public struct UnitStateMachine: Sendable {
    public private(set) var snapshot: UnitSnapshot
    public private(set) var positions: PositionPipeline

    public init(restoring snapshot: UnitSnapshot = UnitSnapshot(), settings: UnitSettings = UnitSettings()) {
        self.snapshot = snapshot
        positions = PositionPipeline(settings: settings.positions)
    }

    public var state: DutyState { snapshot.state }

    public mutating func handle(_ event: UnitEvent) -> [UnitAction] {
        switch event {
        case .gps(let report, let sample):
            var actions = positions.handle(report, at: sample, state: state.rawValue)
            if actions.contains(where: \.isZoneChange) { actions.append(.statusChanged(state)) }
            return actions
        case .driver(.duty):
            snapshot.state = snapshot.state == .offDuty ? .available : .offDuty
            return [.persist(snapshot), .statusChanged(snapshot.state), .tellDriver(snapshot.state.rawValue)]
                + positions.stateChanged()
        case .timerFired(.heartbeat, let sample):
            return positions.heartbeatDue(at: sample, state: state.rawValue)
        }
    }
}

extension UnitAction {
    var isZoneChange: Bool {
        if case .zoneChanged = self { true } else { false }
    }
}
