import FleetControl
import TaxiProtocol
import UnitConfig
import UnitCore

/// Everything one input makes the unit do: the job machine's `Step`, and what the driver session,
/// the fleet configuration machine and the command gate decided for the same input. The shell
/// performs it in one place (`StepPerformer`), in one transaction, in one fixed order.
public struct UnitStep: Sendable, Equatable {
    /// The job machine's part: snapshot, messages, fixes, ride, timers, status, what the driver is told.
    public var job: Step
    /// Who is logged in and the PIN failures counted, when that changed: stored.
    public var session: DriverSessionRecord?
    /// A driver's preferences that changed: stored.
    public var preferences: PreferenceChange?
    /// What happened to the driver's session, for the log and the terminal.
    public var sessionEvent: SessionEvent?
    /// Fleet documents to store, each with the scope it is for.
    public var fleetRecords: [FleetRecord] = []
    /// `config/ack`s to queue, in the order decided.
    public var acks: [ConfigAck] = []
    /// The configuration in force from this step on; the shell adopts it before anything is sent.
    public var configuration: ConfigurationInForce?
    public var rollbackTimer: RollbackTimerChange?
    public var command: CommandOutcome?
    /// Nothing to do, worth a debug line (a retained copy of the document in force).
    public var debugNotes: [String] = []
    /// The driver logged in after the step: named in every message it makes.
    public var driver: String?

    public init(job: Step = Step(), driver: String? = nil) {
        self.job = job
        self.driver = driver
    }

    /// How the shell must store the step. Derived, so it cannot disagree with the contents: a
    /// stored document, an executed command or a login is acted on as soon as it is answered.
    public var durability: StepDurability {
        let executed = if case .execute = command { true } else { false }
        if !fleetRecords.isEmpty || executed || session != nil || preferences != nil { return .promised }
        let refusedCommand = if case .refuse = command { true } else { false }
        if !acks.isEmpty || refusedCommand { return max(job.durability, .stored) }
        return job.durability
    }

    public struct PreferenceChange: Sendable, Equatable {
        public var driver: String
        public var preferences: DriverPreferences
    }

    public struct FleetRecord: Sendable, Equatable {
        public var scope: ConfigScope
        public var record: ConfigScopeRecord
    }

    public struct ConfigurationInForce: Sendable, Equatable {
        public var configuration: UnitConfiguration
        /// `[mqtt]` changed: connect again with it.
        public var reconnect: Bool
    }
}

public enum SessionEvent: Sendable, Equatable {
    case loggedIn(String)
    case loggedOut(String)
    /// `alertChosen`: the driver chose the alert style, which nothing shows until the next alert.
    case preferences(driver: String, DriverPreferences, alertChosen: Bool)
    /// The terminal asks for the id and PIN (or the PIN of a badge's driver).
    case loginPrompted
    /// The dispatcher says `driver` logged in on `unit`; `loggedOut`: the driver was logged out
    /// here, otherwise (on duty) the driver logs out once off duty.
    case loggedInElsewhere(driver: String, unit: String, loggedOut: Bool)
    case refused(DriverRefusal)
}

public enum RollbackTimerChange: Sendable, Equatable {
    case start(after: Duration)
    case cancel
}

/// What the command gate decided for one message on `cmd`.
public enum CommandOutcome: Sendable, Equatable {
    /// A replay of a command already executed: nothing, not even a reply.
    case ignore(id: String)
    case refuse(CommandRefusal)
    /// Remember the id until it expires, do `execution`, reply; all in the step's transaction.
    case execute(FleetCommand, CommandExecution)
}

public enum CommandExecution: Sendable, Equatable {
    /// Queue this position on `pos` and name it in the reply.
    case report(PositionPoint)
    /// `report` without a fix yet: the reply says `failed`.
    case noFixToReport
    /// The reply carries the status as the shell reads it.
    case status
    /// Delete positions and rides older than `before` (unit clock, ms) and what still waits to be sent of them.
    case purge(before: UnitTime)
    /// Drop the broker connection once the reply is stored; it goes out on the next connection.
    case reconnect
}
