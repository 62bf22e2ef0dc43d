import TaxiProtocol

/// Everything one event makes the unit do, grouped by kind rather than listed, so that the shell
/// performs it in one place and in one fixed order: commit, hand to the broker, status, timers,
/// driver. Each kind is its own exhaustive enum or field: a new case is a compile error in the
/// shell until it is performed.
public struct Step: Sendable, Equatable {
    /// The snapshot to write; the step's last one.
    public var snapshot: UnitSnapshot?
    /// For the dispatcher, in the order produced; stored in the step's transaction.
    public var messages: [OutgoingMessage] = []
    /// Fixes for the local history; `report` ones are also queued on `pos`.
    public var fixes: [RecordedFix] = []
    /// A finished ride for the history.
    public var ride: RideSummary?
    public var timers: [TimerChange] = []
    /// The retained status changed: the new one.
    public var status: UnitStatus?
    /// What the driver is told (terminal line, control answer); said only after the commit.
    public var driver: [DriverNotice] = []
    /// Worth a log line, not worth bothering the driver with.
    public var notes: [String] = []
    /// The driver's stored messages that changed (DriverMessages.swift).
    public var inbox: [InboxChange] = []
    /// The zone broadcast subscription moves (ZoneTracker.swift); nothing to store.
    public var broadcastZones: BroadcastZoneChange?

    public init(
        snapshot: UnitSnapshot? = nil, messages: [OutgoingMessage] = [], fixes: [RecordedFix] = [], ride: RideSummary? = nil,
        timers: [TimerChange] = [], status: UnitStatus? = nil, driver: [DriverNotice] = [], notes: [String] = []
    ) {
        self.snapshot = snapshot
        self.messages = messages
        self.fixes = fixes
        self.ride = ride
        self.timers = timers
        self.status = status
        self.driver = driver
        self.notes = notes
    }

    /// A step that only logs.
    public static func note(_ text: String) -> Step { Step(notes: [text]) }

    /// `other` happened after this: its snapshot and status replace this one's, the lists follow.
    public mutating func append(_ other: Step) {
        snapshot = other.snapshot ?? snapshot
        messages += other.messages
        fixes += other.fixes
        ride = other.ride ?? ride
        timers += other.timers
        status = other.status ?? status
        driver += other.driver
        notes += other.notes
        inbox += other.inbox
        if let later = other.broadcastZones { broadcastZones = broadcastZones.map { $0.then(later) } ?? later }
    }

    public static func + (lhs: Step, rhs: Step) -> Step {
        var sum = lhs
        sum.append(rhs)
        return sum
    }

    public static func += (lhs: inout Step, rhs: Step) {
        lhs.append(rhs)
    }

    /// How the shell must store the step. Derived, so it cannot disagree with the contents.
    public var durability: StepDurability {
        // A message from the dispatcher is the driver's until read: it survives a power cut too.
        if snapshot != nil || ride != nil || !inbox.isEmpty || messages.contains(where: \.isPromise) { return .promised }
        if !messages.isEmpty { return .stored }
        return fixes.isEmpty ? .nothingToStore : .fixesOnly
    }

    public var replies: [JobReply] { messages.compactMap { if case .reply(let reply) = $0 { reply } else { nil } } }
    public var told: [String] { driver.compactMap { if case .told(let text) = $0 { text } else { nil } } }
    public var reminded: Bool { driver.contains { if case .reminder = $0 { true } else { false } } }
    /// The dispatcher's answer to the driver's cancel request, when this step brought one.
    public var cancelAnswer: (request: CancelRequest, confirmed: Bool)? {
        for notice in driver { if case .cancelAnswered(let request, let confirmed, _) = notice { return (request, confirmed) } }
        return nil
    }
    /// The offer this step showed beside the job in hand, when it showed one.
    public var offeredBeside: (job: Job, preBooking: Bool)? {
        for notice in driver { if case .offeredBeside(let job, let preBooking, _) = notice { return (job, preBooking) } }
        return nil
    }
    /// The held job, not the one on the screen, that this step's update changed.
    public var heldJobChanged: String? { driver.lazy.compactMap { if case .heldJobChanged(let job, _) = $0 { job } else { nil } }.first }
    public var suggestsOffDuty: Bool { driver.contains { if case .offDutySuggested = $0 { true } else { false } } }
    /// What the meter was found saying against the state, when it was (`DriverNotice.meterDisagrees`).
    public var meterDisagreement: Bool? { driver.lazy.compactMap { if case .meterDisagrees(let hired, _) = $0 { hired } else { nil } }.first }
    public var shiftWarnings: [ShiftWarning] { driver.compactMap { if case .shiftWarning(let warning, _) = $0 { warning } else { nil } } }
    public var refusals: [DriverRefusal] { driver.compactMap { if case .refused(let refusal) = $0 { refusal } else { nil } } }
}

/// How much of a commit a step needs, weakest first.
public enum StepDurability: Int, Sendable, Comparable {
    case nothingToStore
    /// Only fixes: they may wait for the position commit window.
    case fixesOnly
    /// Committed now, without waiting for the disk (zone events, stale positions).
    case stored
    /// Committed and synced before anyone is told: the snapshot, replies, events, alarms, rides.
    case promised

    public static func < (lhs: StepDurability, rhs: StepDurability) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// A message for the dispatcher, before it has a sequence number and an id.
public enum OutgoingMessage: Sendable, Equatable {
    case reply(JobReply)
    case event(Transition)
    case sos(SOSAlarm)
    /// The taxi entered or left a zone at `at` (unit clock); on `event`.
    case zone(ZoneChange, at: UnitTime)
    /// The ignition went on or off at `at` (unit clock); on `event`.
    case ignition(IgnitionChange, at: UnitTime)
    /// The driver announced the taxi clear soon, at `at` (unit clock); on `event`.
    case soonClear(SoonClear, at: UnitTime)
    /// The driver asks to drop the job, from `state`; on `event`.
    case cancelRequest(CancelRequest, state: StateName)
    /// The last valid fix again, flagged stale, `age` old by the unit clock; on `pos`.
    case stalePosition(Fix, age: Duration)
    /// A finished ride, on `ride`; the shell adds the distance it measured over the stored fixes.
    case ride(RideSummary)
    /// The driver's answer, own message, or `invalid` for a `msg`; on `msg/reply`.
    case messageReply(MessageReply)
    /// The driver opened a message; on `msg/read`.
    case messageRead(MessageRead)
    /// `driver` logged in or out; on `event`, named as the message's driver even after a logout.
    case driverSession(DriverSessionEvent, driver: String)
    /// A dispatcher's `driver/logout` the unit did not obey; on `event`.
    case logoutRefused(LogoutRefusedEvent)
    /// The shift started, ended, a break reset continuous driving, or a limit was reached; on `event`.
    case shift(ShiftReport)

    /// The driver's own word to the dispatcher beside a job reply: the terminal says "Sent".
    public var isAnswer: Bool {
        switch self {
        case .messageReply, .soonClear, .cancelRequest: true
        case .reply, .event, .sos, .zone, .ignition, .stalePosition, .ride, .messageRead, .driverSession, .logoutRefused, .shift: false
        }
    }

    /// Someone acts on it (the dispatcher, the driver told "sent"): synced before anything else.
    var isPromise: Bool {
        switch self {
        case .reply, .event, .sos, .ride, .messageReply, .messageRead, .soonClear, .cancelRequest, .driverSession, .logoutRefused, .shift: true
        case .zone, .ignition, .stalePosition: false
        }
    }
}

public struct RecordedFix: Sendable, Equatable {
    public var fix: Fix
    /// Also queued on `pos`.
    public var report: Bool

    public init(_ fix: Fix, report: Bool) {
        self.fix = fix
        self.report = report
    }
}

public enum TimerChange: Sendable, Equatable {
    case start(TimerID, fireAt: UnitTime)
    case cancel(TimerID)
}

public enum DriverNotice: Sendable, Equatable {
    case told(String)
    /// The driver's input makes no sense now; nothing else happened.
    case refused(DriverRefusal)
    /// An accepted reservation's meeting is near: rings, unlike what the driver is merely told.
    case reminder(String)
    /// The unit suggests going off duty (the ignition went off while available); the driver decides.
    case offDutySuggested(String)
    /// The dispatcher answered the driver's cancel request: `confirmed` (the job is cancelled) or
    /// refused (the job goes on); `text` for the log and the control answer.
    case cancelAnswered(CancelRequest, confirmed: Bool, text: String)
    /// An offer shown beside the job in hand, answered with the same keys as any offer: a
    /// pre-booking, or the next job; `text` for the log and the control answer.
    case offeredBeside(Job, preBooking: Bool, text: String)
    /// A `[shift]` limit is near or reached: rings; `text` for the log and the control answer.
    case shiftWarning(ShiftWarning, text: String)
    /// The taximeter was found hired while the taxi is free, or vacant with passengers on board
    /// (`hired` says which), and nothing was changed: the driver sees to it.
    case meterDisagrees(hired: Bool, text: String)
    /// A job the unit holds beside the one on the screen (a pre-booking, the next job) was changed
    /// by the dispatcher; `text` for the log and the control answer.
    case heldJobChanged(job: String, text: String)
}
