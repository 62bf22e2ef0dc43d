import TaxiProtocol

/// A job the unit has taken on (or is being offered).
public struct Job: Sendable, Equatable {
    public var id: String
    public var pickup: Place
    /// Passengers expected, all pickups together; on board once `on_board`.
    public var passengers: Int
    public var meetingTime: UnitTime?
    public var shared: Bool
    public var note: String?
    /// Further pickups added by `job/update` (shared rides), in the order they were added.
    public var addedPickups: [Place]
    public var dropoff: Place?
    public var passenger: Passenger?
    /// The fare the ride will carry unless the driver types one: quoted by the offer, or reported
    /// by the meter (which replaces a quoted one).
    public var fare: Fare?

    public init(
        id: String, pickup: Place, passengers: Int = 1, meetingTime: UnitTime? = nil, shared: Bool = false, note: String? = nil,
        addedPickups: [Place] = [], dropoff: Place? = nil, passenger: Passenger? = nil, fare: Fare? = nil
    ) {
        self.id = id
        self.pickup = pickup
        self.passengers = passengers
        self.meetingTime = meetingTime
        self.shared = shared
        self.note = note
        self.addedPickups = addedPickups
        self.dropoff = dropoff
        self.passenger = passenger
        self.fare = fare
    }

    public init(_ offer: JobOffer) {
        self.init(
            id: offer.job, pickup: offer.pickup, passengers: offer.passengers ?? 1, meetingTime: offer.meetingTime.map(UnitTime.init(milliseconds:)),
            shared: offer.shared ?? false, note: offer.note, dropoff: offer.dropoff, passenger: offer.passenger, fare: offer.quotedFare)
    }
}

public struct PendingOffer: Sendable, Equatable {
    public var job: Job
    /// Unit clock at receipt.
    public var receivedAt: UnitTime
    /// Unit clock when silence becomes `timeout`. Persisted so a restart keeps the promise.
    public var deadline: UnitTime

    public init(job: Job, receivedAt: UnitTime, deadline: UnitTime) {
        self.job = job
        self.receivedAt = receivedAt
        self.deadline = deadline
    }
}

public struct RideStart: Sendable, Equatable {
    public var time: UnitTime
    public var fix: Fix?
    /// When the taxi arrived at the pickup, for the waiting time; nil in a ride restored from a
    /// format 1 snapshot, which did not keep it.
    public var arrivedAt: UnitTime?

    public init(time: UnitTime, fix: Fix?, arrivedAt: UnitTime? = nil) {
        self.time = time
        self.fix = fix
        self.arrivedAt = arrivedAt
    }
}

/// A reservation's reminder: due `at` (unit clock) while the taxi is on the way to `job`'s pickup.
public struct Reminder: Sendable, Equatable {
    public var job: String
    public var at: UnitTime

    public init(job: String, at: UnitTime) {
        self.job = job
        self.at = at
    }
}

/// An accepted reservation kept aside until its window opens (`[job] reservation_lead_min` before
/// its meeting time): until then the driver takes other jobs.
public struct Reservation: Sendable, Equatable {
    public var job: Job
    public var meetingTime: UnitTime

    public init(job: Job, meetingTime: UnitTime) {
        self.job = job
        self.meetingTime = meetingTime
    }
}

/// The driver/job state. Job data lives inside the states that have a job, so "at most one job"
/// holds by construction.
public enum DriverState: Sendable, Equatable {
    case offDuty
    case available
    case paused(PauseReason)
    case offered(PendingOffer)
    case enRoute(Job)
    case atPickup(Job, arrivedAt: UnitTime)
    case onBoard(Job, since: RideStart)

    public var name: StateName {
        switch self {
        case .offDuty: .offDuty
        case .available: .available
        case .paused: .paused
        case .offered: .offered
        case .enRoute: .enRoute
        case .atPickup: .atPickup
        case .onBoard: .onBoard
        }
    }

    public var job: Job? {
        switch self {
        case .offDuty, .available, .paused: nil
        case .offered(let offer): offer.job
        case .enRoute(let job), .atPickup(let job, _), .onBoard(let job, _): job
        }
    }

    /// The same state carrying `job` instead.
    func replacingJob(_ job: Job) -> DriverState {
        switch self {
        case .offDuty, .available, .paused:
            return self
        case .offered(var offer):
            offer.job = job
            return .offered(offer)
        case .enRoute:
            return .enRoute(job)
        case .atPickup(_, let arrivedAt):
            return .atPickup(job, arrivedAt: arrivedAt)
        case .onBoard(_, let since):
            return .onBoard(job, since: since)
        }
    }
}

/// An offer the unit has finished with, remembered so a redelivered copy gets the same answer (rule 4).
public struct AnsweredOffer: Sendable, Equatable {
    public var job: String
    /// nil when the dispatcher withdrew the offer before it was answered.
    public var reply: JobReply?
    /// Unit clock when the answer was last published again for a redelivered copy: the first copy is
    /// answered at once, and later copies at most once per `UnitStateMachine.repeatAnswerAfter`,
    /// so that a dispatcher (or a broker) sending the offer over and over cannot pile up answers.
    public var lastSentAt: UnitTime?

    public init(job: String, reply: JobReply?, lastSentAt: UnitTime? = nil) {
        self.job = job
        self.reply = reply
        self.lastSentAt = lastSentAt
    }
}

/// The panic alarm while the dispatcher has not acknowledged it.
public struct Panic: Sendable, Equatable {
    public var raisedAt: UnitTime
    /// The `id` of this alarm's `sos` message, once the shell has stored it: an `sos/ack` naming
    /// another id acknowledges an earlier alarm and leaves this one open.
    public var messageID: String?

    public init(raisedAt: UnitTime, messageID: String? = nil) {
        self.raisedAt = raisedAt
        self.messageID = messageID
    }
}

/// What survives a restart: written (synchronous=FULL) with every reply it explains.
public struct UnitSnapshot: Sendable, Equatable {
    public var state: DriverState
    public var panic: Panic?
    /// Most recent last, at most `UnitSettings.answeredOfferMemory` entries.
    public var answeredOffers: [AnsweredOffer]
    /// Free seats as the driver set them by hand (minibus taxis fill up in the street); nil: the
    /// configured seats.
    public var freeSeats: Int?
    /// The accepted reservation's reminder, not yet given.
    public var reminder: Reminder?
    /// The driver's request to drop the job, while the dispatcher has not answered it.
    public var cancelRequest: CancelRequest?
    /// The `job/update`s applied to the jobs the unit holds (in hand, stacked, pre-booked), most
    /// recent last, at most `UnitSettings.answeredOfferMemory`: a redelivered one is answered again
    /// and not applied twice.
    public var appliedUpdates: [AppliedUpdate]
    /// Accepted pre-bookings not yet started, by meeting time, at most `UnitSettings.maxUpcoming`.
    public var upcoming: [Reservation]
    /// The job accepted to start once the passengers on board are dropped (stack depth 1).
    public var next: Job?
    /// An offer being answered while the driver has a job in hand: a pre-booking or the next job.
    public var sideOffer: PendingOffer?
    /// The driver's open shift (ShiftTracker.swift).
    public var shift: Shift?

    public init(
        state: DriverState = .offDuty, panic: Panic? = nil, answeredOffers: [AnsweredOffer] = [], freeSeats: Int? = nil,
        reminder: Reminder? = nil, cancelRequest: CancelRequest? = nil, appliedUpdates: [AppliedUpdate] = [],
        upcoming: [Reservation] = [], next: Job? = nil, sideOffer: PendingOffer? = nil
    ) {
        self.upcoming = upcoming
        self.next = next
        self.sideOffer = sideOffer
        self.cancelRequest = cancelRequest
        self.appliedUpdates = appliedUpdates
        self.state = state
        self.panic = panic
        self.answeredOffers = answeredOffers
        self.freeSeats = freeSeats
        self.reminder = reminder
    }
}

public struct UnitSettings: Sendable, Equatable {
    /// Fix validity, reporting policy, heartbeat, zones.
    public var positions: PositionSettings
    /// Answer window when an offer does not bring its own `respond_within_s`.
    public var offerTimeout: Duration
    /// A fix this close to the pickup means "arrived".
    public var arrivalRadiusM: Double
    /// A no-show may be declared this long after arriving…
    public var noShowWait: Duration
    /// …and only this close to the pickup.
    public var noShowRadiusM: Double
    public var seats: Int
    /// How many finished offers are remembered for redeliveries. Brokers redeliver within a session
    /// or after a reconnect, so a few dozen cover any realistic gap.
    public var answeredOfferMemory: Int
    /// An accepted reservation rings this long before its meeting time; 0: never.
    public var reminderMin: Int
    /// `soon` without a number announces the taxi clear in this many minutes.
    public var soonClearMin: Int
    /// `[driver] require_login`: on duty only with a driver logged in (`UnitStateMachine.driverLoggedIn`).
    public var requireLogin: Bool
    /// `[ignition] off_while_available`.
    public var ignitionOff: IgnitionOffPolicy
    /// `[job] payments`: how a passenger may pay, in the order the terminal offers them; empty: the
    /// clear key clears at once, without a fare and payment screen.
    public var payments: [String]
    /// `[job] payment_required`: a ride is not cleared without a payment picked.
    public var paymentRequired: Bool
    /// `[job] currency`: what a typed fare is in.
    public var currency: String
    /// `[job] reservation_lead_min`: a reservation occupies the unit from this long before its meeting
    /// time; an offer meeting later is a pre-booking. 0: every reservation occupies it from acceptance.
    public var reservationLeadMin: Int
    /// `[job] max_upcoming`: how many pre-bookings the unit keeps.
    public var maxUpcoming: Int
    /// `[job] expected_job_min`: how long a job is assumed to take, for conflicts with pre-bookings.
    public var expectedJobMin: Int
    /// `[shift]`: the working day's limits.
    public var shift = ShiftSettings()

    public static let defaultPayments = ["cash", "card", "account"]
    public static let defaultCurrency = "EUR"

    public init(
        positions: PositionSettings = PositionSettings(), offerTimeout: Duration = .seconds(60), arrivalRadiusM: Double = 20, noShowWait: Duration = .seconds(300),
        noShowRadiusM: Double = 100, seats: Int = 4, answeredOfferMemory: Int = 64, reminderMin: Int = 10, soonClearMin: Int = 5,
        requireLogin: Bool = false, ignitionOff: IgnitionOffPolicy = .ask, payments: [String] = defaultPayments,
        paymentRequired: Bool = false, currency: String = defaultCurrency, reservationLeadMin: Int = 0, maxUpcoming: Int = 8,
        expectedJobMin: Int = 30
    ) {
        self.reservationLeadMin = reservationLeadMin
        self.maxUpcoming = maxUpcoming
        self.expectedJobMin = expectedJobMin
        self.payments = payments
        self.paymentRequired = paymentRequired
        self.currency = currency
        self.soonClearMin = soonClearMin
        self.requireLogin = requireLogin
        self.ignitionOff = ignitionOff
        self.positions = positions
        self.offerTimeout = offerTimeout
        self.arrivalRadiusM = arrivalRadiusM
        self.noShowWait = noShowWait
        self.noShowRadiusM = noShowRadiusM
        self.seats = seats
        self.answeredOfferMemory = answeredOfferMemory
        self.reminderMin = reminderMin
    }
}

public enum TimerID: Sendable, Hashable, Codable {
    /// Fires at the offer's deadline: silence is a refusal.
    case offerDeadline(job: String)
    /// Sends the last valid fix, marked stale, when no fix has been valid for the reporting interval.
    case heartbeat
    /// Rings the driver before an accepted reservation's meeting time.
    case reminder(job: String)
    /// The ignition has been off long enough: an available driver goes off duty.
    case ignitionOffDuty
    /// A pre-booking's window opens: it becomes the job in hand when the driver is available.
    case reservationWindow(job: String)
}

/// What the retained `status` says, minus what only the shell knows (online, zone, clock).
public struct UnitStatus: Sendable, Equatable {
    public var state: StateName
    public var pauseReason: PauseReason?
    public var job: String?
    public var seatsLeft: Int
    /// nil while the unit has no ignition input, or has not heard from it since the start.
    public var ignitionOn: Bool?
    /// The pre-bookings, by meeting time.
    public var upcoming: [UpcomingJob] = []
    /// The job stacked to start after the ride on board.
    public var next: String?

    public init(state: StateName, pauseReason: PauseReason? = nil, job: String? = nil, seatsLeft: Int, ignitionOn: Bool? = nil) {
        self.state = state
        self.pauseReason = pauseReason
        self.job = job
        self.seatsLeft = seatsLeft
        self.ignitionOn = ignitionOn
    }
}

public enum UnitEvent: Sendable, Equatable {
    /// A gpsd report and the clocks when it arrived (the unit clock is made from them).
    case gps(GPSSample, at: ClockSample)
    /// `at`: unit clock.
    case driver(DriverInput, at: UnitTime)
    case inbound(InboundMessage, receivedAt: UnitTime)
    /// A `msg` on the fleet's broadcast topic (`zone` nil) or on `zone`'s; `retained`: the broker
    /// kept it and sent it again for a new subscription.
    case broadcast(TextMessage, zone: String?, retained: Bool, receivedAt: UnitTime)
    /// An inbound message that could not be used.
    case malformed(InboundProblem, at: UnitTime)
    case timerFired(TimerID, at: UnitTime)
    /// The daemon (re)started with the restored snapshot: pending deadlines are re-armed or due.
    case resumed(at: UnitTime)
    /// The ignition input changed (or told its state at the start); `at`: unit clock.
    case ignition(on: Bool, at: UnitTime)
    /// A crash loop was broken by setting the snapshot aside, and with it the job the unit had in
    /// `state`: the dispatcher and the driver must hear that the unit no longer has it.
    case jobDropped(job: String, state: StateName, at: UnitTime)
    /// The taximeter reported the ride's fare (minor units of `currency`); `at`: unit clock.
    case meterFare(amount: Int64, currency: String, at: UnitTime)
    /// The taximeter went hired (`true`) or vacant; `at`: unit clock.
    case meter(hired: Bool, at: UnitTime)
    /// The taximeter's first hired/vacant reading since its device opened (the adapter knows): the
    /// state it was found in, not a change; `at`: unit clock.
    case meterFound(hired: Bool, at: UnitTime)
}

/// The unit's state machine: every decision, no effects. The shell feeds events and performs the
/// `Step` each `handle` returns: the complete set of effects of one event.
public struct UnitStateMachine: Sendable {
    public private(set) var snapshot: UnitSnapshot
    /// The settings in force; a fleet document changes them through `use(_:)`.
    public private(set) var settings: UnitSettings
    public private(set) var positions: PositionPipeline
    public private(set) var lastFix: Fix?
    /// Whether a driver is logged in (`DriverSession`, kept by the shell in its own table).
    public var driverLoggedIn = false
    /// The driver's messages and the zone queue position (DriverMessages.swift).
    public private(set) var driverMessages: DriverMessages
    /// The ignition as its input last said; nil without one. Not stored: the input says it again.
    public private(set) var ignitionOn: Bool?
    /// The taximeter as it last said (hired or vacant); nil without one. Not stored: the meter says it again.
    public private(set) var meterHired: Bool?
    /// The driver's shift as it is now; the snapshot holds it as last written (at most a minute of
    /// driving behind).
    private var shiftTracker: ShiftTracker

    public var shift: Shift? { shiftTracker.shift }

    /// `lastFix`: the newest stored fix, so an alarm right after a restart still has a position.
    /// `messages`: the inbox as stored.
    public init(
        restoring snapshot: UnitSnapshot = UnitSnapshot(), settings: UnitSettings = UnitSettings(), lastFix: Fix? = nil,
        messages: DriverMessages = DriverMessages()
    ) {
        self.snapshot = snapshot
        self.settings = settings
        self.lastFix = lastFix
        self.driverMessages = messages
        positions = PositionPipeline(settings: settings.positions)
        shiftTracker = ShiftTracker(shift: snapshot.shift, settings: settings.shift)
    }

    public var state: DriverState { snapshot.state }

    /// Copies of a redelivered offer are answered again at most this often (unit clock).
    public static let repeatAnswerAfter: Duration = .seconds(30)
    /// The longest answer window an offer can have; the decoder and the configuration keep to it.
    public static let longestAnswerWindow: Duration = .seconds(3_600)

    /// The shell stored the open alarm's `sos` message under `id` (in the transaction that also
    /// writes the snapshot), so that acknowledgements can be matched to it.
    public mutating func alarmStored(messageID id: String) {
        snapshot.panic?.messageID = id
    }

    /// A fleet document changed the settings: they are in force from this step on, and what
    /// derives from them (the position pipeline, reporting, zones, the offers remembered) with them.
    public mutating func use(_ next: UnitSettings) -> Step {
        let leadChanged = next.reservationLeadMin != settings.reservationLeadMin
        settings = next
        shiftTracker.use(next.shift)
        var step = positions.reconfigure(next.positions, state: reportingState)
        // The pre-bookings' windows move with the lead.
        if leadChanged { step.timers += snapshot.upcoming.map { .start(.reservationWindow(job: $0.job.id), fireAt: windowOpens(meeting: $0.meetingTime)) } }
        let remembered = snapshot.answeredOffers.count + snapshot.appliedUpdates.count
        trimMemory()
        if snapshot.answeredOffers.count + snapshot.appliedUpdates.count != remembered { step.snapshot = snapshot }
        // The seats shown and offered follow a new seat count at once.
        step.status = status
        return step
    }

    /// The driver's canned messages changed (a fleet document); one being chosen is put away.
    public mutating func useCannedMessages(_ canned: [String]) {
        driverMessages.useCanned(canned)
    }

    public var status: UnitStatus {
        var pauseReason: PauseReason?
        if case .paused(let reason) = state { pauseReason = reason }
        // Off duty and private, the taxi's use is the driver's own business too.
        let ignition = positions.isPrivate(reportingState) ? nil : ignitionOn
        var status = UnitStatus(state: state.name, pauseReason: pauseReason, job: state.job?.id, seatsLeft: seatsLeft, ignitionOn: ignition)
        status.upcoming = snapshot.upcoming.map { UpcomingJob(job: $0.job.id, meetingTime: $0.meetingTime) }
        status.next = snapshot.next?.id
        return status
    }

    /// The seats jobs may fill: the driver's count when set by hand, never more than configured.
    public var seats: Int {
        max(0, min(snapshot.freeSeats ?? settings.seats, settings.seats))
    }

    /// Seats minus passengers on board.
    public var seatsLeft: Int {
        if case .onBoard(let job, _) = state { return job.passengers >= seats ? 0 : seats - max(0, job.passengers) }
        return seats
    }

    public mutating func handle(_ event: UnitEvent) -> Step {
        let before = state
        let fixBefore = lastFix
        let step = handleJob(event)
        return step + followShift(event, before: before, fixBefore: fixBefore, step: step)
    }

    private mutating func handleJob(_ event: UnitEvent) -> Step {
        switch event {
        case .gps(let report, let sample):
            return handleGPS(report, at: sample)
        case .driver(let input, let now):
            return handleDriver(input, now: now)
        case .inbound(.offer(let offer), let receivedAt):
            return handleOffer(offer, receivedAt: receivedAt)
        case .inbound(.cancel(let cancel), let now):
            return handleCancel(cancel, now: now)
        case .inbound(.update(let update), let now):
            return handleUpdate(update, now: now)
        case .inbound(.sosAck(let ack), _):
            guard let panic = snapshot.panic else { return .note("sos/ack without a pending alarm ignored") }
            if let named = ack.id, let open = panic.messageID, named != open {
                return .note("sos/ack for an earlier alarm ignored; the open alarm is \(open)")
            }
            snapshot.panic = nil
            // Discreet: the attacker may be watching the terminal.
            // Positions slow down again from the last one panic reported.
            return Step(snapshot: snapshot, driver: [.told("ok")]) + positions.stateChanged(to: reportingState, reportNextFix: false)
        case .inbound(.message(let message), let now):
            return driverMessages.received(message, now: now)
        case .broadcast(let message, let zone, let retained, let now):
            return driverMessages.receivedBroadcast(message, zone: zone, retained: retained, taxiZone: positions.zones.broadcastZone, now: now)
        case .inbound(.queue(let position), let now):
            return driverMessages.queued(position, now: now, available: state == .available)
        case .malformed(let problem, let now) where problem.topic == .msg || problem.topic == .queue:
            return driverMessages.malformed(problem, now: now)
        case .malformed(let problem, let now):
            let description = "malformed \(problem.topic.rawValue): \(problem.reason)"
            guard let job = problem.job else { return .note(description) }
            return Step(messages: [.reply(JobReply(job: job, re: problem.topic, reply: .invalid, reason: problem.reason, t: now))], notes: [description])
        case .timerFired(.heartbeat, let now):
            return positions.heartbeatDue(now: now, state: reportingState)
        case .timerFired(.reminder(let job), let now):
            return remind(job: job, now: now)
        case .timerFired(.reservationWindow(let job), let now):
            return reservationWindowOpened(job: job, now: now)
        case .timerFired(.offerDeadline(let job), let now):
            if let aside = snapshot.sideOffer, aside.job.id == job { return answerSideOffer(.timeout, reason: nil, now: now) }
            guard case .offered(let offer) = state, offer.job.id == job else {
                return .note("offer deadline for \(job) no longer pending")
            }
            return answerOffer(.timeout, reason: nil, now: now, then: .available, tell: "Job \(job): no answer, refused (timeout)")
        case .ignition(let on, let now):
            return ignitionChanged(on: on, now: now)
        case .timerFired(.ignitionOffDuty, let now):
            guard ignitionOn == false, state == .available else { return .note("ignition off-duty timer no longer applies") }
            return transition(to: .offDuty, now: now, reason: "ignition_off", tell: "Ignition off: off duty")
        case .jobDropped(let job, let from, let now):
            return Step(
                messages: [.event(Transition(t: now, from: from, to: state.name, job: job, reason: "crash_loop"))],
                driver: [.told("Job \(job) dropped after repeated crashes: call dispatch")])
        case .meterFare(let amount, let currency, _):
            return meterFare(amount: amount, currency: currency)
        case .meter(let hired, let now):
            return meterChanged(hired: hired, now: now)
        case .meterFound(let hired, _):
            return meterFound(hired: hired)
        case .resumed(let now):
            var step = Step()
            if let reminder = snapshot.reminder {
                // Given at most once: a reminder due while the unit was down rings now.
                step = reminder.at <= now ? remind(job: reminder.job, now: now) : Step(timers: [.start(.reminder(job: reminder.job), fireAt: reminder.at)])
            }
            step += resumeQueuedJobs(now: now)
            guard case .offered(let offer) = state else { return step }
            if offer.deadline <= now {
                return step + answerOffer(.timeout, reason: nil, now: now, then: .available, tell: "Job \(offer.job.id): no answer, refused (timeout)")
            }
            return step + Step(timers: [.start(.offerDeadline(job: offer.job.id), fireAt: offer.deadline)])
        }
    }

    // MARK: GPS

    /// The reporting policy's key: the state, or `panic` while an alarm is open.
    var reportingState: String { snapshot.panic == nil ? state.name.rawValue : ReportingPolicy.panic }

    /// The ignition input said `on`: the dispatcher hears of a change, the status shows it,
    /// positions follow the `ignition_off` rule while it is off, and an available driver is asked
    /// to go off duty, or is taken off duty after a while (`[ignition] off_while_available`).
    private mutating func ignitionChanged(on: Bool, now: UnitTime) -> Step {
        guard ignitionOn != on else { return Step() }
        ignitionOn = on
        positions.ignitionOff = !on
        // Off duty and private, the taxi's use is the driver's own business: nothing is said.
        let told: [OutgoingMessage] = positions.isPrivate(reportingState) ? [] : [.ignition(IgnitionChange(on: on, state: state.name), at: now)]
        var step = Step(messages: told, status: status)
        // On again: the taxi moves; its next fix is reported at once.
        step += positions.stateChanged(to: reportingState, reportNextFix: on)
        guard !on else { return step + Step(timers: [.cancel(.ignitionOffDuty)]) }
        guard state == .available else { return step }
        switch settings.ignitionOff {
        case .ask:
            step.driver.append(.offDutySuggested("Ignition off: go off duty?"))
        case .offDuty(let after):
            step.timers.append(.start(.ignitionOffDuty, fireAt: now + after))
        case .ignore:
            break
        }
        return step
    }

    private mutating func handleGPS(_ report: GPSSample, at sample: ClockSample) -> Step {
        guard case (let fix, var step)? = positions.handle(report, at: sample, state: reportingState) else { return Step() }
        lastFix = fix
        // The retained status names the zone.
        if step.messages.contains(where: { if case .zone = $0 { true } else { false } }) { step.status = status }
        if case .enRoute(let job) = state, Coordinate(fix).distance(to: job.pickup.coordinate) <= settings.arrivalRadiusM {
            // On the unit clock, as every other time the no-show wait and the ride are measured on:
            // the fix's own GPS time can be far behind it (a receiver that lags).
            let now = positions.clock.reading(at: sample).time
            step += transition(
                to: .atPickup(job, arrivedAt: now), now: now, reason: "arrived_by_gps",
                tell: "Arrived at \(job.pickup.label). Passenger on board?")
        }
        return step
    }

    // MARK: Driver

    private mutating func handleDriver(_ input: DriverInput, now: UnitTime) -> Step {
        switch (input, state) {
        case (.message, .offered):
            // The offer's screen stays until it is answered: a message opened now would be marked
            // read unseen.
            return refuse(.answerOfferFirst)
        case (.message(let action), _):
            return driverMessages.handle(action, now: now)
        case (.sos, _):
            snapshot.panic = Panic(raisedAt: now)
            // Nothing obvious on the terminal: the driver is told nothing.
            let alarm = SOSAlarm(t: now, state: state.name, job: state.job?.id, fix: lastFix.map { PositionPoint($0) })
            return Step(snapshot: snapshot, messages: [.sos(alarm)]) + positions.stateChanged(to: reportingState)

        case (.duty, .offDuty):
            if settings.requireLogin, !driverLoggedIn { return refuse(.loginRequired) }
            return transition(to: .available, now: now, tell: "On duty, available")
        case (.duty, .available), (.duty, .paused):
            return transition(to: .offDuty, now: now, tell: "Off duty")
        case (.duty, .offered(let offer)):
            return answerOffer(.reject, reason: "off_duty", now: now, then: .offDuty, tell: "Job \(offer.job.id) refused; off duty")
        case (.duty, .enRoute), (.duty, .atPickup), (.duty, .onBoard):
            return refuse(.finishJobFirst)

        case (.accept, .offered(let offer)) where isPreBooking(offer.job, at: now):
            return answerOffer(
                .accept, reason: nil, now: now, then: .available, tell: "Reservation \(offer.job.id) accepted, sent. Available until it is due")
                + book(offer.job)
        case (.accept, .offered(let offer)):
            let reminder = reminder(for: offer.job, now: now)
            snapshot.reminder = reminder
            var step = answerOffer(
                .accept, reason: nil, now: now, then: .enRoute(offer.job), tell: "Job \(offer.job.id) accepted, sent. Go to \(offer.job.pickup.label)")
            if let reminder { step.timers.append(.start(.reminder(job: reminder.job), fireAt: reminder.at)) }
            return step
        case (.reject(let reason), .offered(let offer)):
            return answerOffer(.reject, reason: reason, now: now, then: .available, tell: "Job \(offer.job.id) refused, sent")
        case (.accept, _):
            // An offer beside the job in hand, answerable still once that job has ended.
            return answerSideOffer(.accept, reason: nil, now: now)
        case (.reject(let reason), _):
            return answerSideOffer(.reject, reason: reason, now: now)

        case (.arrived, .enRoute(let job)):
            return transition(to: .atPickup(job, arrivedAt: now), now: now, tell: "At pickup. Passenger on board?")
        case (.arrived, _):
            return refuse(.notOnTheWay)

        case (.passengersOnBoard(let count), .atPickup(let job, let arrivedAt)):
            var job = job
            let passengers = count ?? job.passengers
            guard passengers <= seats else { return refuse(.notEnoughSeats(seats: seats)) }
            job.passengers = passengers
            let start = RideStart(time: now, fix: lastFix, arrivedAt: arrivedAt)
            return transition(to: .onBoard(job, since: start), now: now, tell: "\(passengers) on board")
        case (.passengersOnBoard, _):
            return refuse(.notAtPickup)

        case (.noShow, .atPickup(let job, let arrivedAt)):
            let waited = now - arrivedAt
            guard waited >= settings.noShowWait else {
                let left = (settings.noShowWait - waited).wholeMilliseconds.saturatingAdd(999) / 1000
                return refuse(.noShowTooEarly(secondsLeft: Int(clamping: left)))
            }
            guard let fix = lastFix else { return refuse(.noPosition) }
            guard Coordinate(fix).distance(to: job.pickup.coordinate) <= settings.noShowRadiusM else {
                return refuse(.tooFarForNoShow)
            }
            return transition(to: .available, now: now, reason: "no_show", tell: "No-show recorded, available")
        case (.noShow, _):
            return refuse(.notAtPickup)

        case (.clear, .onBoard(let job, let since)):
            return clearRide(job, since: since, settlement: Settlement(), now: now)
        case (.clearSettled(let settlement), .onBoard(let job, let since)):
            return clearRide(job, since: since, settlement: settlement, now: now)
        case (.clear, _), (.clearSettled, _):
            return refuse(.noPassenger)

        case (.cancelRequest(let reason), .enRoute(let job)), (.cancelRequest(let reason), .atPickup(let job, _)):
            if let pending = snapshot.cancelRequest, pending.job == job.id { return refuse(.dropAlreadyAsked) }
            let request = CancelRequest(job: job.id, reason: reason, at: now)
            snapshot.cancelRequest = request
            return Step(
                snapshot: snapshot, messages: [.cancelRequest(request, state: state.name)],
                driver: [.told("Drop of job \(job.id) asked (\(reason.rawValue)): sent, the job stands until dispatch answers")])
        case (.cancelRequest, .onBoard):
            // The dispatcher cannot cancel a job with passengers on board: the driver ends the ride.
            return refuse(.dropNotOnBoard)
        case (.cancelRequest, .offDuty), (.cancelRequest, .available), (.cancelRequest, .paused), (.cancelRequest, .offered):
            return refuse(.noJobToDrop)

        case (.soonClear(let minutes), .onBoard(let job, _)):
            let clearIn = minutes ?? settings.soonClearMin
            return Step(
                messages: [.soonClear(SoonClear(job: job.id, minutes: clearIn), at: now)],
                driver: [.told("Clear in \(clearIn) min: sent")])
        case (.soonClear, _):
            return refuse(.noPassenger)

        case (.pause(let reason), .available):
            return transition(to: .paused(reason), now: now, reason: reason.rawValue, tell: "Paused (\(reason.rawValue))")
        case (.pause(let reason), .paused(let current)) where reason != current:
            // The reason changes while paused: the dispatcher hears the new one.
            return transition(to: .paused(reason), now: now, reason: reason.rawValue, tell: "Paused (\(reason.rawValue))")
        case (.pause, .paused):
            return refuse(.alreadyPaused)
        case (.pauseNext, .available):
            return transition(to: .paused(.break), now: now, reason: PauseReason.break.rawValue, tell: "Paused (break)")
        case (.pauseNext, .paused(let current)):
            return transition(to: .paused(current.next), now: now, reason: current.next.rawValue, tell: "Paused (\(current.next.rawValue))")
        case (.pauseNext, _):
            return refuse(.pauseOnlyWhenAvailable)
        case (.pause, _):
            return refuse(.pauseOnlyWhenAvailable)

        case (.resume, .paused):
            return transition(to: .available, now: now, tell: "Available")
        case (.resume, _):
            return refuse(.notPaused)

        case (.seats(let count), _):
            // Without a count, one seat fewer (a passenger got in), round to all seats after none.
            let free = count ?? (seats == 0 ? settings.seats : seats - 1)
            guard (0...max(0, settings.seats)).contains(free) else { return refuse(.notEnoughSeats(seats: settings.seats)) }
            snapshot.freeSeats = free == settings.seats ? nil : free
            return Step(snapshot: snapshot, status: status, driver: [.told("Free seats \(seatsLeft)")])

        case (.shift(let input), _):
            return shiftInput(input, now: now)

        case (.details, _):
            // Paging is the terminal's: the machine only says when there is nothing to page through.
            return state.job == nil ? refuse(.noJob) : Step()

        case (.history, _):
            // The pages show the rides the shell kept from earlier steps: nothing changes here.
            return Step()

        case (.preBookings, _):
            // The terminal shows the pre-bookings the snapshot holds: nothing changes here.
            return Step()
        }
    }

    /// Clears the ride with the fare typed, else the job's, and the payment picked.
    private mutating func clearRide(_ job: Job, since: RideStart, settlement: Settlement, now: UnitTime) -> Step {
        if let payment = settlement.payment, !settings.payments.contains(payment) { return refuse(.unknownPayment) }
        if settlement.payment == nil, settings.paymentRequired { return refuse(.paymentRequired) }
        if let typed = settlement.typedFare, !FareLimits.amount.contains(typed) { return refuse(.fareOutOfRange) }
        let fare = settlement.typedFare.map { Fare(amount: $0, currency: settings.currency, source: .typed) } ?? job.fare
        let ride = RideSummary(
            job: job.id, passengers: job.passengers, pickupTime: since.time, dropTime: now, pickupFix: since.fix, dropFix: lastFix,
            waiting: since.arrivedAt.map { max(.zero, since.time - $0) }, fare: fare, payment: settlement.payment, pickupAddress: job.pickup.address)
        var step = transition(to: .available, now: now, reason: "completed", tell: "Ride complete, available")
        step.ride = ride
        // After the `completed` event: the dispatcher's record of the ride, for distance fares.
        step.messages.append(.ride(ride))
        return step
    }

    /// The meter's fare replaces the job's (a quoted one too) while the passengers are on board.
    private mutating func meterFare(amount: Int64, currency: String) -> Step {
        if let problem = FareLimits.check(fare: amount, currency: currency) { return .note("meter fare refused: \(problem)") }
        guard case .onBoard(var job, let since) = state else { return .note("meter fare ignored: nobody on board") }
        job.fare = Fare(amount: amount, currency: currency, source: .meter)
        snapshot.state = .onBoard(job, since: since)
        return Step(snapshot: snapshot)
    }

    /// The meter went hired or vacant. Hired at the pickup puts the passengers on board; hired while
    /// available or paused is a street hail: the unit makes the job itself and goes on board with
    /// it. Vacant with passengers on board clears the ride, with the meter's fare if it sent one.
    /// Anywhere else the signal means nothing and changes nothing.
    private mutating func meterChanged(hired: Bool, now: UnitTime) -> Step {
        // A meter that repeats its state says nothing new, and fills no log.
        guard meterHired != hired else { return Step() }
        meterHired = hired
        switch (hired, state) {
        case (true, .atPickup(let job, let arrivedAt)):
            guard job.passengers <= seats else { return refuse(.notEnoughSeats(seats: seats)) }
            let start = RideStart(time: now, fix: lastFix, arrivedAt: arrivedAt)
            return transition(to: .onBoard(job, since: start), now: now, reason: "meter", tell: "\(job.passengers) on board")
        case (true, .available), (true, .paused):
            // Picked up where the taxi is; with no fix yet, nowhere in particular (the ride's pickup fix is absent too).
            let job = Job(id: Self.hailJobID(at: now), pickup: Place(lat: lastFix?.latitude ?? 0, lon: lastFix?.longitude ?? 0))
            return transition(to: .onBoard(job, since: RideStart(time: now, fix: lastFix)), now: now, reason: "hail", tell: "Street hail: \(job.id) on board")
        case (false, .onBoard(let job, let since)):
            return clearRide(job, since: since, settlement: Settlement(), now: now)
        case (true, .offDuty), (true, .offered), (true, .enRoute), (true, .onBoard):
            return .note("meter hired ignored while \(state.name.rawValue)")
        case (false, .offDuty), (false, .available), (false, .paused), (false, .offered), (false, .enRoute), (false, .atPickup):
            return .note("meter vacant ignored while \(state.name.rawValue)")
        }
    }

    /// The meter as its device was found at start-up, or when it came back: what later changes are
    /// measured from. It changes no job: hired while free may be a ride the driver cleared by key
    /// with the meter still running, vacant on board a ride the driver put on board by key. Where
    /// it disagrees with the state the driver is told, once.
    private mutating func meterFound(hired: Bool) -> Step {
        meterHired = hired
        switch (hired, state) {
        case (true, .available), (true, .paused):
            return Step(
                driver: [.meterDisagrees(hired: true, text: "Meter hired, taxi free: no hail made")],
                notes: ["meter found hired while \(state.name.rawValue): no hail"])
        case (false, .onBoard):
            return Step(
                driver: [.meterDisagrees(hired: false, text: "Meter vacant, passengers on board: not cleared")],
                notes: ["meter found vacant while on_board: not cleared"])
        case (true, .offDuty), (true, .offered), (true, .enRoute), (true, .atPickup), (true, .onBoard),
            (false, .offDuty), (false, .available), (false, .paused), (false, .offered), (false, .enRoute), (false, .atPickup):
            return Step()
        }
    }

    /// A street hail's job id: made by the unit from the unit clock, so two hails (each one cleared
    /// before the next can start) never share one.
    static func hailJobID(at now: UnitTime) -> String {
        "hail-\(now.milliseconds)"
    }

    /// Rings the driver before the reservation's meeting time, once.
    private mutating func remind(job id: String, now: UnitTime) -> Step {
        guard let reminder = snapshot.reminder, reminder.job == id else { return .note("reminder for \(id) no longer due") }
        // Timers wait at most an hour (EngineTimers): one that fired before the reminder is due is armed again.
        if reminder.at > now { return Step(timers: [.start(.reminder(job: id), fireAt: reminder.at)]) }
        guard case .enRoute(let job) = state, job.id == reminder.job else {
            // Only a snapshot read back from the disk can hold a reminder for another state.
            snapshot.reminder = nil
            return Step(snapshot: snapshot, notes: ["reminder for \(id) dropped: not on the way to its pickup"])
        }
        snapshot.reminder = nil
        let meeting = job.meetingTime.map { " in \(max(.zero, $0 - now).wholeSeconds / 60) min" } ?? ""
        return Step(snapshot: snapshot, driver: [.reminder("Reminder: job \(job.id), meet at \(job.pickup.label)\(meeting)")])
    }

    // MARK: Shift

    /// `shift start`, `shift end`: ending it is for off duty, so the day's last job is in it.
    private mutating func shiftInput(_ input: ShiftInput, now: UnitTime) -> Step {
        let result: Result<ShiftTracker.Outcome, ShiftTracker.Refusal>
        switch input {
        case .start(let odometer):
            result = shiftTracker.start(at: now, odometerKm: odometer, onDuty: state != .offDuty)
        case .end(let odometer):
            guard state == .offDuty else { return refuse(.offDutyFirst) }
            result = shiftTracker.end(at: now, odometerKm: odometer)
        }
        switch result {
        case .failure(.alreadyStarted): return refuse(.shiftAlreadyStarted)
        case .failure(.noShift): return refuse(.noShift)
        case .success(let outcome):
            var step = shiftStep(outcome, forceSnapshot: true)
            step.driver.append(.told(shiftTracker.shift == nil ? "Shift ended" : "Shift started"))
            return step
        }
    }

    /// What the event means for the shift: fixes count driving, state changes on-duty time and breaks.
    private mutating func followShift(_ event: UnitEvent, before: DriverState, fixBefore: Fix?, step: Step) -> Step {
        var outcome = ShiftTracker.Outcome()
        if case .gps(_, let sample) = event, let fix = lastFix, fix != fixBefore {
            outcome = shiftTracker.fix(speed: fix.speed, at: positions.clock.reading(at: sample).time)
        }
        var pauseBefore: PauseReason?, pauseAfter: PauseReason?
        if case .paused(let reason) = before { pauseBefore = reason }
        if case .paused(let reason) = state { pauseAfter = reason }
        let transition = step.messages.last { if case .event = $0 { true } else { false } }
        if before.name != state.name || pauseBefore != pauseAfter, case .event(let moved)? = transition {
            outcome = outcome + shiftTracker.stateChanged(to: state.name, pauseReason: pauseAfter, at: moved.t)
        }
        return shiftStep(outcome, forceSnapshot: step.snapshot != nil)
    }

    /// The shift's events and warnings; the snapshot when the shift changed, or when the step writes
    /// one anyway (it must not carry an older shift).
    private mutating func shiftStep(_ outcome: ShiftTracker.Outcome, forceSnapshot: Bool) -> Step {
        var step = Step(messages: outcome.reports.map(OutgoingMessage.shift))
        step.driver = outcome.warnings.map { .shiftWarning($0, text: Self.warningText($0)) }
        if outcome.changed || forceSnapshot {
            snapshot.shift = shiftTracker.shift
            step.snapshot = snapshot
        }
        return step
    }

    private static func warningText(_ warning: ShiftWarning) -> String {
        let what = switch warning.limit {
        case .continuousDriving: "Break due"
        case .shiftLength: "Shift limit"
        }
        return warning.reached ? "\(what): limit reached" : "\(what) in \(warning.minutesLeft) min"
    }

    // MARK: Dispatcher

    private mutating func handleOffer(_ offer: JobOffer, receivedAt: UnitTime) -> Step {
        if let index = snapshot.answeredOffers.lastIndex(where: { $0.job == offer.job }) {
            let answered = snapshot.answeredOffers[index]
            guard let reply = answered.reply else { return .note("offer \(offer.job) was withdrawn; redelivery ignored") }
            if let last = answered.lastSentAt, receivedAt - last < Self.repeatAnswerAfter {
                return .note("offer \(offer.job) delivered again within \(Self.repeatAnswerAfter.wholeSeconds) s of its last answer; not answered again")
            }
            snapshot.answeredOffers[index].lastSentAt = receivedAt
            return Step(snapshot: snapshot, messages: [.reply(reply)], notes: ["offer \(offer.job) delivered again; same answer"])
        }
        if case .offered(let pending) = state, pending.job.id == offer.job {
            return .note("offer \(offer.job) delivered again while the driver decides")
        }
        if let pending = snapshot.sideOffer, pending.job.id == offer.job {
            return .note("offer \(offer.job) delivered again while the driver decides")
        }
        // The decoder bounds respond_within_s and the configuration the timeout; out of range is never
        // reached, but would mean the longest window rather than a trap.
        let window = min(max(offer.respondWithinS.map(Duration.checkedSeconds) ?? settings.offerTimeout, .milliseconds(1)), Self.longestAnswerWindow)
        if let sent = offer.t, UnitTime(milliseconds: sent) + window <= receivedAt {
            return remember(JobReply(job: offer.job, reply: .expired, reason: "answer window over on arrival", t: receivedAt))
        }
        let job = Job(offer)
        let preBooking = isPreBooking(job, at: receivedAt)
        switch state {
        case .enRoute, .atPickup, .onBoard:
            if preBooking || offer.next == true { return offerAside(job, preBooking: preBooking, window: window, receivedAt: receivedAt) }
        case .offDuty, .available, .paused, .offered:
            break
        }
        guard case .available = state else {
            return remember(JobReply(job: offer.job, reply: .busy, reason: state.name.rawValue, t: receivedAt))
        }
        guard job.passengers <= seats else {
            return remember(JobReply(job: offer.job, reply: .invalid, reason: "\(job.passengers) passengers exceed \(seats) seats", t: receivedAt))
        }
        if let refusal = preBooking ? preBookingRefusal(job) : reservationConflict(startingAt: receivedAt) {
            return remember(JobReply(job: offer.job, reply: .busy, reason: refusal, t: receivedAt))
        }
        let pending = PendingOffer(job: job, receivedAt: receivedAt, deadline: receivedAt + window)
        var step = transition(to: .offered(pending), now: receivedAt, tell: offerText(job, window: window))
        step.timers.append(.start(.offerDeadline(job: job.id), fireAt: pending.deadline))
        return step
    }

    private func offerText(_ job: Job, window: Duration) -> String {
        var text = "Job \(job.id): \(job.pickup.label), \(job.passengers) pax"
        if job.meetingTime != nil { text += ", reservation" }
        if job.shared { text += ", shared" }
        if let note = job.note { text += " (\(note))" }
        return text + ". Accept within \(window.wholeSeconds) s?"
    }

    private mutating func handleCancel(_ cancel: JobCancel, now: UnitTime) -> Step {
        if let step = cancelQueued(cancel, now: now) { return step }
        guard let job = state.job, job.id == cancel.job else {
            return .note("cancel for unknown job \(cancel.job) ignored")
        }
        let why = cancel.reason.map { ": \($0)" } ?? ""
        if let request = snapshot.cancelRequest, request.job == job.id, state.name == .enRoute || state.name == .atPickup {
            var step = transition(to: .available, now: now, reason: "cancelled", tell: "")
            step.driver = [.cancelAnswered(request, confirmed: true, text: "Job \(job.id) cancelled as asked (\(request.reason.rawValue))\(why)")]
            return step
        }
        switch state {
        case .offered:
            snapshot.answeredOffers.append(AnsweredOffer(job: job.id, reply: nil))
            trimMemory()
            var step = transition(to: .available, now: now, reason: "cancelled", tell: "Job \(job.id) cancelled by dispatch\(why)")
            step.timers.append(.cancel(.offerDeadline(job: job.id)))
            return step
        case .enRoute, .atPickup:
            return transition(to: .available, now: now, reason: "cancelled", tell: "Job \(job.id) cancelled by dispatch\(why)")
        default:
            return .note("cancel for job \(job.id) ignored: passenger on board")
        }
    }

    private mutating func handleUpdate(_ update: JobUpdate, now: UnitTime) -> Step {
        guard var job = jobInHand(update.job) else {
            return .note("update for unknown job \(update.job) ignored")
        }
        let key = update.redeliveryKey
        if let index = snapshot.appliedUpdates.lastIndex(where: { $0.key == key }) {
            let applied = snapshot.appliedUpdates[index]
            if let last = applied.lastSentAt, now - last < Self.repeatAnswerAfter {
                return .note("update for job \(job.id) delivered again within \(Self.repeatAnswerAfter.wholeSeconds) s of its last answer; not answered again")
            }
            snapshot.appliedUpdates[index].lastSentAt = now
            return Step(snapshot: snapshot, messages: [.reply(applied.reply)], notes: ["update for job \(job.id) delivered again; same answer, not applied twice"])
        }
        // Refused, the update changes nothing.
        func refused(_ reason: String) -> Step {
            Step(
                messages: [.reply(JobReply(job: job.id, re: .jobUpdate, reply: .invalid, reason: reason, t: now, update: update.update))],
                notes: ["update for job \(job.id) refused: \(reason)"])
        }
        var refusedRequest: CancelRequest?
        if update.cancelRefused == true {
            guard let request = snapshot.cancelRequest, request.job == job.id else { return refused("no cancel request pending for job \(job.id)") }
            refusedRequest = request
        }
        let meeting = update.meetingTime.map { UnitTime(milliseconds: $0) }
        if let meeting, let reason = meetingTimeRefusal(moving: job.id, to: meeting, now: now) { return refused(reason) }
        var told: [String] = []
        var passengers = update.passengers ?? job.passengers
        if let added = update.addPickup {
            passengers = passengers.saturatingAdd(added.passengers ?? 1)
            told.append("extra pickup at \(added.place.label)")
        }
        guard passengers <= seats else { return refused("\(passengers) passengers exceed \(seats) seats") }
        if passengers != job.passengers { told.append("\(passengers) pax") }
        job.passengers = passengers
        if let added = update.addPickup {
            job.addedPickups.append(added.place)
            job.shared = true
        }
        if let note = update.note {
            job.note = note
            told.append(note)
        }
        var timers: [TimerChange] = []
        if let meeting, meeting != job.meetingTime {
            job.meetingTime = meeting
            told.append("meeting time moved")
        }
        keep(job)
        if let meeting { timers.append(movePreBooking(job.id, to: meeting)) }
        let reply = JobReply(job: job.id, re: .jobUpdate, reply: .shown, t: now, update: update.update)
        snapshot.appliedUpdates.append(AppliedUpdate(key: key, reply: reply))
        trimMemory()
        var driver: [DriverNotice] = []
        if let refusedRequest {
            snapshot.cancelRequest = nil
            driver.append(.cancelAnswered(refusedRequest, confirmed: false, text: "Drop of job \(job.id) refused: the job goes on"))
        }
        if !told.isEmpty {
            let text = "Job \(job.id) changed: " + told.joined(separator: ", ")
            driver.append(state.job?.id == job.id ? .told(text) : .heldJobChanged(job: job.id, text: text))
        }
        // Answered in the same step as the driver is told: the dispatcher learns the change was shown.
        return Step(snapshot: snapshot, messages: [.reply(reply)], timers: timers, status: status, driver: driver)
    }

    // MARK: Pre-bookings and the next job

    /// When a reservation meeting at `meeting` starts to occupy the unit.
    public func windowOpens(meeting: UnitTime) -> UnitTime {
        meeting - .seconds(settings.reservationLeadMin.saturatingMultiply(60))
    }

    /// A reservation whose window has not opened at `now` is a pre-booking: accepted, it waits in
    /// `upcoming` instead of occupying the unit.
    private func isPreBooking(_ job: Job, at now: UnitTime) -> Bool {
        guard settings.reservationLeadMin > 0, let meeting = job.meetingTime else { return false }
        return windowOpens(meeting: meeting) > now
    }

    private var expectedJob: Duration { .seconds(settings.expectedJobMin.saturatingMultiply(60)) }

    /// Why a job starting `now` cannot be taken: it would still run when a pre-booking's window opens.
    private func reservationConflict(startingAt now: UnitTime) -> String? {
        guard let reservation = snapshot.upcoming.first(where: { windowOpens(meeting: $0.meetingTime) < now + expectedJob }) else { return nil }
        return Self.conflictReason(reservation)
    }

    /// Why the pre-booking `job` cannot be kept: the list is full, or another one's job would overlap it.
    private func preBookingRefusal(_ job: Job) -> String? {
        guard let meeting = job.meetingTime else { return nil }
        if snapshot.upcoming.count >= max(0, settings.maxUpcoming) { return "pre-bookings full (\(max(0, settings.maxUpcoming)))" }
        return snapshot.upcoming.first { overlaps(meeting, $0.meetingTime) }.map(Self.conflictReason)
    }

    /// Reservations meeting at `one` and `other` would hold the unit at the same time: from their
    /// windows' opening to their jobs' assumed end.
    private func overlaps(_ one: UnitTime, _ other: UnitTime) -> Bool {
        windowOpens(meeting: other) < one + expectedJob && windowOpens(meeting: one) < other + expectedJob
    }

    /// Why the pre-booking `id` cannot be moved to meet at `meeting`: it is no pre-booking (the job
    /// in hand, the stacked job or an offer keep their time), the time has passed, its window would
    /// open before the jobs in hand are assumed done, or it would overlap another pre-booking.
    private func meetingTimeRefusal(moving id: String, to meeting: UnitTime, now: UnitTime) -> String? {
        guard snapshot.upcoming.contains(where: { $0.job.id == id }) else { return "meeting_time moves only a pre-booking" }
        guard meeting > now else { return "meeting_time has passed" }
        let inHand = [state.job, snapshot.next].compactMap { $0 }
        if let last = inHand.last {
            let free = now + expectedJob * inHand.count
            if windowOpens(meeting: meeting) < free { return "job \(last.id) until \(free.milliseconds)" }
        }
        return snapshot.upcoming.first { $0.job.id != id && overlaps(meeting, $0.meetingTime) }.map(Self.conflictReason)
    }

    /// The pre-booking `id` meets at `meeting` from now on: kept in meeting-time order, its window
    /// armed for the new time (a window already open starts it, or warns a busy driver, at once).
    private mutating func movePreBooking(_ id: String, to meeting: UnitTime) -> TimerChange {
        if let index = snapshot.upcoming.firstIndex(where: { $0.job.id == id }) {
            var moved = snapshot.upcoming.remove(at: index)
            moved.meetingTime = meeting
            moved.job.meetingTime = meeting
            let position = snapshot.upcoming.firstIndex { $0.meetingTime > meeting } ?? snapshot.upcoming.endIndex
            snapshot.upcoming.insert(moved, at: position)
        }
        return .start(.reservationWindow(job: id), fireAt: windowOpens(meeting: meeting))
    }

    /// The reason a dispatcher acts on: which reservation, and when it meets (ms since the epoch).
    private static func conflictReason(_ reservation: Reservation) -> String {
        "reservation \(reservation.job.id) at \(reservation.meetingTime.milliseconds)"
    }

    /// The reminder an accepted reservation rings, when there is still time for one.
    private func reminder(for job: Job, now: UnitTime) -> Reminder? {
        guard let meeting = job.meetingTime, settings.reminderMin > 0 else { return nil }
        let at = meeting - .seconds(settings.reminderMin.saturatingMultiply(60))
        return at > now ? Reminder(job: job.id, at: at) : nil
    }

    /// Keeps the accepted pre-booking `job` until its window opens.
    private mutating func book(_ job: Job) -> Step {
        guard let meeting = job.meetingTime else { return Step() }
        let index = snapshot.upcoming.firstIndex { $0.meetingTime > meeting } ?? snapshot.upcoming.endIndex
        snapshot.upcoming.insert(Reservation(job: job, meetingTime: meeting), at: index)
        return Step(snapshot: snapshot, timers: [.start(.reservationWindow(job: job.id), fireAt: windowOpens(meeting: meeting))], status: status)
    }

    /// An offer while the driver has a job in hand: a pre-booking, or (on board) the next job. It is
    /// answered as any offer; the job in hand stays the driver's state.
    private mutating func offerAside(_ job: Job, preBooking: Bool, window: Duration, receivedAt: UnitTime) -> Step {
        func busy(_ reason: String) -> Step { remember(JobReply(job: job.id, reply: .busy, reason: reason, t: receivedAt)) }
        if let pending = snapshot.sideOffer { return busy("offer \(pending.job.id) awaits an answer") }
        guard job.passengers <= settings.seats else {
            return remember(JobReply(job: job.id, reply: .invalid, reason: "\(job.passengers) passengers exceed \(settings.seats) seats", t: receivedAt))
        }
        if preBooking {
            if let refusal = preBookingRefusal(job) { return busy(refusal) }
        } else {
            guard state.name == .onBoard else { return busy("next only while on board") }
            if let stacked = snapshot.next { return busy("next job \(stacked.id) already stacked") }
            if let refusal = reservationConflict(startingAt: receivedAt) { return busy(refusal) }
        }
        let pending = PendingOffer(job: job, receivedAt: receivedAt, deadline: receivedAt + window)
        snapshot.sideOffer = pending
        let kind = preBooking ? "Pre-booking" : "Next job"
        return Step(
            snapshot: snapshot, timers: [.start(.offerDeadline(job: job.id), fireAt: pending.deadline)],
            driver: [.offeredBeside(job, preBooking: preBooking, text: "\(kind) " + offerText(job, window: window))])
    }

    /// Answers the offer made beside the job in hand; an accepted one is booked or stacked.
    private mutating func answerSideOffer(_ code: ReplyCode, reason: String?, now: UnitTime) -> Step {
        guard let offer = snapshot.sideOffer else { return refuse(.noOffer) }
        snapshot.sideOffer = nil
        let reply = JobReply(job: offer.job.id, reply: code, reason: reason, t: now)
        snapshot.answeredOffers.append(AnsweredOffer(job: offer.job.id, reply: reply))
        trimMemory()
        let timers: [TimerChange] = code == .timeout ? [] : [.cancel(.offerDeadline(job: offer.job.id))]
        var step = Step(snapshot: snapshot, messages: [.reply(reply)], timers: timers, status: status)
        switch code {
        case .accept where isPreBooking(offer.job, at: offer.receivedAt):
            step.driver = [.told("Reservation \(offer.job.id) accepted, sent")]
            return step + book(offer.job)
        case .accept:
            snapshot.next = offer.job
            step.snapshot = snapshot
            step.status = status
            step.driver = [.told("Next job \(offer.job.id) accepted, sent. It starts after this ride")]
            return step
        case .timeout:
            step.driver = [.told("Job \(offer.job.id): no answer, refused (timeout)")]
            return step
        case .reject, .busy, .expired, .invalid, .shown:
            step.driver = [.told("Job \(offer.job.id) refused, sent")]
            return step
        }
    }

    /// The stacked job, else the first pre-booking whose window is open, becomes the job in hand.
    private mutating func startQueuedJob(now: UnitTime) -> Step? {
        if let job = snapshot.next {
            snapshot.next = nil
            return transition(to: .enRoute(job), now: now, reason: "next", tell: "Next job \(job.id): go to \(job.pickup.label)")
        }
        guard let index = snapshot.upcoming.firstIndex(where: { windowOpens(meeting: $0.meetingTime) <= now }) else { return nil }
        let reservation = snapshot.upcoming.remove(at: index)
        let reminder = reminder(for: reservation.job, now: now)
        snapshot.reminder = reminder
        var step = transition(
            to: .enRoute(reservation.job), now: now, reason: "reservation",
            tell: "Reservation \(reservation.job.id) due: go to \(reservation.job.pickup.label)")
        step.timers.append(.cancel(.reservationWindow(job: reservation.job.id)))
        if let reminder { step.timers.append(.start(.reminder(job: reminder.job), fireAt: reminder.at)) }
        return step
    }

    /// A pre-booking's window opened: it starts now if the driver is free, else when the driver is
    /// next available (after the job in hand, the stacked job, a pause or going on duty), and the
    /// driver is warned.
    private mutating func reservationWindowOpened(job id: String, now: UnitTime) -> Step {
        guard let reservation = snapshot.upcoming.first(where: { $0.job.id == id }) else { return .note("reservation \(id) no longer booked") }
        // Timers wait at most an hour (EngineTimers): one that fired before the window opens is armed again.
        let opens = windowOpens(meeting: reservation.meetingTime)
        if opens > now { return Step(timers: [.start(.reservationWindow(job: id), fireAt: opens)]) }
        switch state {
        case .available:
            return startQueuedJob(now: now) ?? Step()
        case .offDuty, .paused, .offered, .enRoute, .atPickup, .onBoard:
            return Step(driver: [.reminder("Reservation \(id) due, meet at \(reservation.job.pickup.label): it starts when you are free")])
        }
    }

    /// After a restart: the offer beside the job in hand and the pre-bookings' windows are armed
    /// again, or answered and started when they fell due while the unit was down.
    private mutating func resumeQueuedJobs(now: UnitTime) -> Step {
        var step = Step()
        if let offer = snapshot.sideOffer {
            step += offer.deadline <= now
                ? answerSideOffer(.timeout, reason: nil, now: now) : Step(timers: [.start(.offerDeadline(job: offer.job.id), fireAt: offer.deadline)])
        }
        step.timers += snapshot.upcoming.map { .start(.reservationWindow(job: $0.job.id), fireAt: windowOpens(meeting: $0.meetingTime)) }
        return step
    }

    /// A `job/cancel` for a pre-booking, the stacked job or the offer beside the job in hand; nil
    /// when it names none of them.
    private mutating func cancelQueued(_ cancel: JobCancel, now: UnitTime) -> Step? {
        let why = cancel.reason.map { ": \($0)" } ?? ""
        if let index = snapshot.upcoming.firstIndex(where: { $0.job.id == cancel.job }) {
            snapshot.upcoming.remove(at: index)
            forgetUpdatesOfJobsLetGo()
            return Step(
                snapshot: snapshot, timers: [.cancel(.reservationWindow(job: cancel.job))], status: status,
                driver: [.told("Reservation \(cancel.job) cancelled by dispatch\(why)")])
        }
        if snapshot.next?.id == cancel.job {
            snapshot.next = nil
            forgetUpdatesOfJobsLetGo()
            return Step(snapshot: snapshot, status: status, driver: [.told("Next job \(cancel.job) cancelled by dispatch\(why)")])
        }
        if let offer = snapshot.sideOffer, offer.job.id == cancel.job {
            snapshot.sideOffer = nil
            snapshot.answeredOffers.append(AnsweredOffer(job: offer.job.id, reply: nil))
            trimMemory()
            return Step(
                snapshot: snapshot, timers: [.cancel(.offerDeadline(job: offer.job.id))],
                driver: [.told("Job \(cancel.job) cancelled by dispatch\(why)")])
        }
        return nil
    }

    /// The job `id` names among those the unit holds: in hand, stacked or pre-booked.
    private func jobInHand(_ id: String) -> Job? {
        if let job = state.job, job.id == id { return job }
        if let job = snapshot.next, job.id == id { return job }
        return snapshot.upcoming.first { $0.job.id == id }?.job
    }

    /// Applied updates are remembered while the unit holds their job (in hand, stacked or
    /// pre-booked), so that a redelivered copy is not applied to it again wherever it moved.
    private mutating func forgetUpdatesOfJobsLetGo() {
        let held = Set([state.job?.id, snapshot.next?.id].compactMap { $0 } + snapshot.upcoming.map(\.job.id))
        snapshot.appliedUpdates.removeAll { !held.contains($0.reply.job) }
    }

    /// Puts the changed `job` back where it is held.
    private mutating func keep(_ job: Job) {
        if state.job?.id == job.id {
            snapshot.state = state.replacingJob(job)
        } else if snapshot.next?.id == job.id {
            snapshot.next = job
        } else if let index = snapshot.upcoming.firstIndex(where: { $0.job.id == job.id }) {
            snapshot.upcoming[index].job = job
        }
    }

    // MARK: Helpers

    /// Moves to `next`: the snapshot, the event, the status, and what the driver is told.
    private mutating func transition(to next: DriverState, now: UnitTime, reason: String? = nil, tell: String) -> Step {
        let from = state
        snapshot.state = next
        var cancelled: [TimerChange] = []
        // A reminder is for the way to the pickup: arriving, a cancel or anything else ends it.
        if let reminder = snapshot.reminder, !(next.name == .enRoute && next.job?.id == reminder.job) {
            snapshot.reminder = nil
            cancelled.append(.cancel(.reminder(job: reminder.job)))
        }
        if next != .available { driverMessages.leftAvailable() }
        // A cancel request is for a job the driver may still leave.
        if let request = snapshot.cancelRequest, !(next.job?.id == request.job && (next.name == .enRoute || next.name == .atPickup)) {
            snapshot.cancelRequest = nil
        }
        forgetUpdatesOfJobsLetGo()
        let job = next.job?.id ?? from.job?.id
        let step = Step(
            snapshot: snapshot, messages: [.event(Transition(t: now, from: from.name, to: next.name, job: job, reason: reason))],
            timers: cancelled, status: status, driver: [.told(tell)])
        let moved = from.name == next.name ? step : step + positions.stateChanged(to: reportingState)
        // Free again: the stacked job, else a pre-booking whose window is open, becomes the job in hand.
        guard next == .available, let started = startQueuedJob(now: now) else { return moved }
        return moved + started
    }

    /// Answers the pending offer once and for all, remembering the answer for redeliveries.
    private mutating func answerOffer(_ code: ReplyCode, reason: String?, now: UnitTime, then next: DriverState, tell: String) -> Step {
        guard case .offered(let offer) = state else { return Step() }
        let reply = JobReply(job: offer.job.id, reply: code, reason: reason, t: now)
        snapshot.answeredOffers.append(AnsweredOffer(job: offer.job.id, reply: reply))
        trimMemory()
        var step = transition(to: next, now: now, reason: code.rawValue, tell: tell)
        // The answer goes out before the event that follows from it.
        step.messages.insert(.reply(reply), at: 0)
        if code != .timeout { step.timers.append(.cancel(.offerDeadline(job: offer.job.id))) }
        return step
    }

    /// Answers an offer that never reached the driver; the state does not change.
    private mutating func remember(_ reply: JobReply) -> Step {
        snapshot.answeredOffers.append(AnsweredOffer(job: reply.job, reply: reply))
        trimMemory()
        return Step(snapshot: snapshot, messages: [.reply(reply)])
    }

    private mutating func trimMemory() {
        let excess = snapshot.answeredOffers.count - max(0, settings.answeredOfferMemory)
        if excess > 0 { snapshot.answeredOffers.removeFirst(excess) }
        let excessUpdates = snapshot.appliedUpdates.count - max(0, settings.answeredOfferMemory)
        if excessUpdates > 0 { snapshot.appliedUpdates.removeFirst(excessUpdates) }
    }

    private func refuse(_ reason: DriverRefusal) -> Step {
        Step(driver: [.refused(reason)])
    }
}
