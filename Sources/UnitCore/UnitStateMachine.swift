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
    /// Shortest time between two reported positions, seconds.
    public var reportingIntervalS: Double

    public init(reportingIntervalS: Double = 5) {
        self.reportingIntervalS = reportingIntervalS
    }
}

/// What survives a restart.
public struct UnitSnapshot: Sendable, Equatable, Codable {
    public var state: DutyState

    public init(state: DutyState = .offDuty) {
        self.state = state
    }
}

public enum UnitEvent: Sendable, Equatable {
    case gps(GPSSample)
    case driver(DriverCommand)
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
}

/// The unit's state machine: every decision, no effects. The shell feeds events and performs the actions.
public struct UnitStateMachine: Sendable {
    public private(set) var snapshot: UnitSnapshot
    public var settings: UnitSettings
    private var validator = FixValidator()
    private var lastReportedFixTime: Int64?

    public init(restoring snapshot: UnitSnapshot = UnitSnapshot(), settings: UnitSettings = UnitSettings()) {
        self.snapshot = snapshot
        self.settings = settings
    }

    public var state: DutyState { snapshot.state }

    public mutating func handle(_ event: UnitEvent) -> [UnitAction] {
        switch event {
        case .gps(let sample):
            return handleGPS(sample)
        case .driver(.duty):
            snapshot.state = snapshot.state == .offDuty ? .available : .offDuty
            return [.persist(snapshot), .statusChanged(snapshot.state), .tellDriver(snapshot.state.rawValue)]
        }
    }

    private mutating func handleGPS(_ sample: GPSSample) -> [UnitAction] {
        guard case .success(let fix) = validator.validate(sample) else { return [] }
        let intervalMs = Int64(settings.reportingIntervalS * 1000)
        // A fix older than the last reported one means the receiver's clock jumped: report it rather than go silent.
        let due = lastReportedFixTime.map { fix.time - $0 >= intervalMs || fix.time < $0 } ?? true
        if due {
            lastReportedFixTime = fix.time
        }
        return [.recordFix(fix, report: due)]
    }
}
