import TaxiProtocol
import Testing
import UnitCore

/// Shared fixtures: a pickup, fixes on it and far from it, and a machine put into any state the
/// way the daemon would get there (by events, not by constructing snapshots).
extension UnitEvent {
    /// A report read while the system clock was synchronised and said the fix's own time.
    static func gps(_ sample: GPSSample) -> UnitEvent {
        .gps(sample, at: ClockSample(system: UnitTime(seconds: sample.time), systemSynchronised: true, monotonic: .checkedSeconds(sample.time)))
    }
}

extension UnitSettings {
    /// Every state reports at `reportingIntervalS` (and by the default distance and heading rules).
    init(reportingIntervalS: Double) {
        var policy = ReportingPolicy()
        for state in ReportingPolicy.stateNames { policy.rules[state]?.intervalS = reportingIntervalS }
        self.init(positions: PositionSettings(reporting: policy))
    }
}

enum Scenario {
    static let pickup = Place(lat: 46.5, lon: 7.5, address: "Bahnhofplatz 1")
    static let t0: UnitTime = 1_800_000_000_000

    static func sample(_ time: Double, lat: Double = 46.5, lon: Double = 7.5) -> GPSSample {
        GPSSample(mode: 3, time: time, latitude: lat, longitude: lon)
    }

    static func offer(_ job: String, window: Double? = nil, passengers: Int? = nil, sentAt: UnitTime? = nil) -> JobOffer {
        JobOffer(job: job, pickup: pickup, respondWithinS: window, passengers: passengers, t: sentAt?.milliseconds)
    }

    /// A machine in `state` with job "J1" where the state has a job. Its last fix is 1 km north of
    /// the pickup so GPS does not interfere; `t0` is well after any deadline of the setup.
    static func machine(in state: StateName, settings: UnitSettings = UnitSettings()) -> UnitStateMachine {
        var machine = UnitStateMachine(settings: settings)
        _ = machine.handle(.gps(sample(t0.seconds - 1000, lat: 46.509)))
        let start = t0 - .milliseconds(600_000)
        func drive(_ events: UnitEvent...) {
            for event in events { _ = machine.handle(event) }
        }
        switch state {
        case .offDuty:
            break
        case .available:
            drive(.driver(.duty, at: start))
        case .paused:
            drive(.driver(.duty, at: start), .driver(.pause(.refuel), at: start))
        case .offered:
            drive(.driver(.duty, at: start), .inbound(.offer(offer("J1", window: 3600)), receivedAt: start))
        case .enRoute:
            drive(.driver(.duty, at: start), .inbound(.offer(offer("J1")), receivedAt: start), .driver(.accept, at: start))
        case .atPickup:
            drive(
                .driver(.duty, at: start), .inbound(.offer(offer("J1")), receivedAt: start), .driver(.accept, at: start),
                .driver(.arrived, at: start))
        case .onBoard:
            drive(
                .driver(.duty, at: start), .inbound(.offer(offer("J1")), receivedAt: start), .driver(.accept, at: start),
                .driver(.arrived, at: start), .driver(.passengersOnBoard(2), at: start))
        }
        precondition(machine.state.name == state, "setup reached \(machine.state.name), not \(state)")
        return machine
    }

    static func replies(_ step: Step) -> [JobReply] { step.replies }

    static func told(_ step: Step) -> [String] { step.told }

    static func refused(_ step: Step) -> [DriverRefusal] { step.refusals }
}

/// Every (state, event) pair has a defined outcome, and this table is it.
@Suite struct StateEventTableTests {
    enum Outcome: Equatable, CustomStringConvertible {
        /// Moves to another state, answering the offer with `reply` if set.
        case to(StateName, reply: ReplyCode? = nil)
        /// Same state, but something happened (a reply, an alarm, a stored fix, a timer).
        case stays(reply: ReplyCode? = nil)
        /// Same state; only the driver is told why not (rule 17).
        case refused
        /// Same state; logged at most.
        case ignored

        var description: String {
            switch self {
            case .to(let state, let reply): "to \(state.rawValue)\(reply.map { " +\($0.rawValue)" } ?? "")"
            case .stays(let reply): "stays\(reply.map { " +\($0.rawValue)" } ?? "")"
            case .refused: "refused"
            case .ignored: "ignored"
            }
        }
    }

    static func classify(before: UnitStateMachine, after: UnitStateMachine, _ actions: Step) -> Outcome {
        let reply = Scenario.replies(actions).first?.reply
        if after.state.name != before.state.name { return .to(after.state.name, reply: reply) }
        if actions == Step(notes: actions.notes) { return .ignored }
        if actions == Step(driver: actions.driver), actions.driver.count == 1, !actions.refusals.isEmpty { return .refused }
        return .stays(reply: reply)
    }

    static let t = Scenario.t0
    /// Columns: off_duty, available, paused, offered, en_route, at_pickup, on_board.
    static let table: [(String, UnitEvent, [Outcome])] = [
        ("duty", .driver(.duty, at: t), [.to(.available), .to(.offDuty), .to(.offDuty), .to(.offDuty, reply: .reject), .refused, .refused, .refused]),
        ("accept", .driver(.accept, at: t), [.refused, .refused, .refused, .to(.enRoute, reply: .accept), .refused, .refused, .refused]),
        ("reject", .driver(.reject(reason: "far"), at: t), [.refused, .refused, .refused, .to(.available, reply: .reject), .refused, .refused, .refused]),
        ("arrived", .driver(.arrived, at: t), [.refused, .refused, .refused, .refused, .to(.atPickup), .refused, .refused]),
        ("pob", .driver(.passengersOnBoard(nil), at: t), [.refused, .refused, .refused, .refused, .refused, .to(.onBoard), .refused]),
        ("pob 9", .driver(.passengersOnBoard(9), at: t), [.refused, .refused, .refused, .refused, .refused, .refused, .refused]),
        ("clear", .driver(.clear, at: t), [.refused, .refused, .refused, .refused, .refused, .refused, .to(.available)]),
        // The setup's last fix is 1 km from the pickup: a no-show is refused there (see NoShowTests).
        ("noshow", .driver(.noShow, at: t), [.refused, .refused, .refused, .refused, .refused, .refused, .refused]),
        ("soon", .driver(.soonClear(minutes: 5), at: t), [.refused, .refused, .refused, .refused, .refused, .refused, .stays()]),
        // Only a job the driver holds and can still leave may be asked to drop (CancelRequestTests).
        ("drop", .driver(.cancelRequest(.passengerUnreachable), at: t), [.refused, .refused, .refused, .refused, .stays(), .stays(), .refused]),
        // The setup pauses for `refuel`: another reason is a change the dispatcher hears, the same one is refused.
        ("pause", .driver(.pause(.break), at: t), [.refused, .to(.paused), .stays(), .refused, .refused, .refused, .refused]),
        ("pause refuel", .driver(.pause(.refuel), at: t), [.refused, .to(.paused), .refused, .refused, .refused, .refused, .refused]),
        ("pause next", .driver(.pauseNext, at: t), [.refused, .to(.paused), .stays(), .refused, .refused, .refused, .refused]),
        ("resume", .driver(.resume, at: t), [.refused, .refused, .to(.available), .refused, .refused, .refused, .refused]),
        ("sos", .driver(.sos, at: t), [.stays(), .stays(), .stays(), .stays(), .stays(), .stays(), .stays()]),
        ("seats 2", .driver(.seats(2), at: t), [.stays(), .stays(), .stays(), .stays(), .stays(), .stays(), .stays()]),
        ("seats 9", .driver(.seats(9), at: t), [.refused, .refused, .refused, .refused, .refused, .refused, .refused]),
        // Paging through the job's details is the terminal's; without a job there is nothing to show.
        ("info", .driver(.details, at: t), [.refused, .refused, .refused, .ignored, .ignored, .ignored, .ignored]),
        // The shift's history is read and paged by the terminal's side: the machine does nothing, in every state.
        ("jobs", .driver(.history, at: t), [.ignored, .ignored, .ignored, .ignored, .ignored, .ignored, .ignored]),
        // The pre-bookings page shows what the snapshot holds: the machine does nothing, in every state.
        ("bookings", .driver(.preBookings, at: t), [.ignored, .ignored, .ignored, .ignored, .ignored, .ignored, .ignored]),
        ("offer J2", .inbound(.offer(Scenario.offer("J2")), receivedAt: t),
         [.stays(reply: .busy), .to(.offered), .stays(reply: .busy), .stays(reply: .busy), .stays(reply: .busy), .stays(reply: .busy), .stays(reply: .busy)]),
        // J1 is the setup's job: accepted in the job states, pending in `offered`, new elsewhere.
        ("offer J1 again", .inbound(.offer(Scenario.offer("J1")), receivedAt: t),
         [.stays(reply: .busy), .to(.offered), .stays(reply: .busy), .ignored, .stays(reply: .accept), .stays(reply: .accept), .stays(reply: .accept)]),
        ("offer 7 passengers", .inbound(.offer(Scenario.offer("J4", passengers: 7)), receivedAt: t),
         [.stays(reply: .busy), .stays(reply: .invalid), .stays(reply: .busy), .stays(reply: .busy), .stays(reply: .busy), .stays(reply: .busy), .stays(reply: .busy)]),
        ("expired offer", .inbound(.offer(Scenario.offer("J3", window: 60, sentAt: t - .milliseconds(61_000))), receivedAt: t),
         [.stays(reply: .expired), .stays(reply: .expired), .stays(reply: .expired), .stays(reply: .expired), .stays(reply: .expired), .stays(reply: .expired), .stays(reply: .expired)]),
        ("cancel J1", .inbound(.cancel(JobCancel(job: "J1", reason: "withdrawn")), receivedAt: t),
         [.ignored, .ignored, .ignored, .to(.available), .to(.available), .to(.available), .ignored]),
        ("cancel unknown", .inbound(.cancel(JobCancel(job: "J9")), receivedAt: t),
         [.ignored, .ignored, .ignored, .ignored, .ignored, .ignored, .ignored]),
        ("update J1 to 3 pax", .inbound(.update(JobUpdate(job: "J1", passengers: 3)), receivedAt: t),
         [.ignored, .ignored, .ignored, .stays(reply: .shown), .stays(reply: .shown), .stays(reply: .shown), .stays(reply: .shown)]),
        ("update J1 to 5 pax", .inbound(.update(JobUpdate(job: "J1", passengers: 5)), receivedAt: t),
         [.ignored, .ignored, .ignored, .stays(reply: .invalid), .stays(reply: .invalid), .stays(reply: .invalid), .stays(reply: .invalid)]),
        ("update unknown", .inbound(.update(JobUpdate(job: "J9", passengers: 2)), receivedAt: t),
         [.ignored, .ignored, .ignored, .ignored, .ignored, .ignored, .ignored]),
        ("sos/ack without alarm", .inbound(.sosAck(SOSAck()), receivedAt: t),
         [.ignored, .ignored, .ignored, .ignored, .ignored, .ignored, .ignored]),
        ("malformed with job", .malformed(InboundProblem(topic: .jobOffer, job: "J5", reason: "pickup is missing"), at: t),
         [.stays(reply: .invalid), .stays(reply: .invalid), .stays(reply: .invalid), .stays(reply: .invalid), .stays(reply: .invalid), .stays(reply: .invalid), .stays(reply: .invalid)]),
        ("malformed without job", .malformed(InboundProblem(topic: .jobCancel, job: nil, reason: "not JSON"), at: t),
         [.ignored, .ignored, .ignored, .ignored, .ignored, .ignored, .ignored]),
        ("deadline J1", .timerFired(.offerDeadline(job: "J1"), at: t),
         [.ignored, .ignored, .ignored, .to(.available, reply: .timeout), .ignored, .ignored, .ignored]),
        ("reminder without reservation", .timerFired(.reminder(job: "J1"), at: t),
         [.ignored, .ignored, .ignored, .ignored, .ignored, .ignored, .ignored]),
        ("window without pre-booking", .timerFired(.reservationWindow(job: "R9"), at: t),
         [.ignored, .ignored, .ignored, .ignored, .ignored, .ignored, .ignored]),
        ("stale deadline", .timerFired(.offerDeadline(job: "J7"), at: t),
         [.ignored, .ignored, .ignored, .ignored, .ignored, .ignored, .ignored]),
        ("resumed before deadline", .resumed(at: t),
         [.ignored, .ignored, .ignored, .stays(), .ignored, .ignored, .ignored]),
        ("resumed after deadline", .resumed(at: t + .milliseconds(3_600_000)),
         [.ignored, .ignored, .ignored, .to(.available, reply: .timeout), .ignored, .ignored, .ignored]),
        ("fix far away", .gps(Scenario.sample(t.seconds, lat: 46.51)),
         [.stays(), .stays(), .stays(), .stays(), .stays(), .stays(), .stays()]),
        ("fix at pickup", .gps(Scenario.sample(t.seconds)),
         [.stays(), .stays(), .stays(), .stays(), .to(.atPickup), .stays(), .stays()]),
    ]

    static let columns: [StateName] = [.offDuty, .available, .paused, .offered, .enRoute, .atPickup, .onBoard]

    @Test func theTableCoversEveryState() {
        #expect(Set(Self.columns) == Set(StateName.allCases))
        for (name, _, outcomes) in Self.table { #expect(outcomes.count == Self.columns.count, "\(name)") }
    }

    @Test(arguments: StateName.allCases)
    func everyEventHasItsOutcome(in state: StateName) {
        let column = Self.columns.firstIndex(of: state)!
        for (name, event, outcomes) in Self.table {
            var machine = Scenario.machine(in: state)
            let before = machine
            let actions = machine.handle(event)
            let outcome = Self.classify(before: before, after: machine, actions)
            #expect(outcome == outcomes[column], "\(state.rawValue) + \(name): \(actions)")
            Self.checkShape(before: before, after: machine, actions, name: "\(state.rawValue) + \(name)")
        }
    }

    /// Panic is orthogonal: with an alarm pending, every pair has the same outcome, except that an
    /// acknowledgement now has something to end.
    @Test(arguments: StateName.allCases)
    func panicChangesNoOutcome(in state: StateName) {
        let column = Self.columns.firstIndex(of: state)!
        for (name, event, outcomes) in Self.table {
            var machine = Scenario.machine(in: state)
            _ = machine.handle(.driver(.sos, at: Self.t - .milliseconds(1)))
            let before = machine
            let actions = machine.handle(event)
            let expected: Outcome = name == "sos/ack without alarm" ? .stays() : outcomes[column]
            #expect(Self.classify(before: before, after: machine, actions) == expected, "\(state.rawValue) + \(name) in panic: \(actions)")
            if case .inbound(.sosAck, _) = event { #expect(machine.snapshot.panic == nil) } else { #expect(machine.snapshot.panic != nil, "\(name)") }
        }
    }

    /// Whatever happens: a step that changes the snapshot carries the new one and is synced (the
    /// shell writes it with the step's replies, events and alarms in one transaction, before the
    /// driver is told), a step that leaves it alone carries none, and a transition updates the status.
    static func checkShape(before: UnitStateMachine, after: UnitStateMachine, _ step: Step, name: String) {
        if before.snapshot != after.snapshot {
            #expect(step.snapshot == after.snapshot, "\(name): carries the new snapshot: \(step)")
            #expect(step.durability == .promised, "\(name)")
        } else {
            #expect(step.snapshot == nil, "\(name): nothing to persist: \(step)")
        }
        if step.messages.contains(where: { if case .event = $0 { true } else { false } }) {
            #expect(step.snapshot != nil, "\(name): an event explains a stored state")
            #expect(step.status == after.status, "\(name): a transition updates the status")
        }
        if !step.replies.isEmpty || !step.driver.isEmpty || step.snapshot != nil {
            #expect(step.durability != .stored && step.durability != .fixesOnly, "\(name)")
        }
    }
}

@Suite struct UnitStateMachineTests {
    func sample(_ time: Double) -> GPSSample { Scenario.sample(time) }

    @Test func startsOffDutyAndDutyToggles() {
        var machine = UnitStateMachine()
        #expect(machine.state == .offDuty)
        let on = machine.handle(.driver(.duty, at: 5))
        // Going on duty starts the driver's shift (ShiftTrackerTests); going off duty does not end it.
        var onDuty = UnitSnapshot(state: .available)
        onDuty.shift = Shift(startedAt: 5, onDutySince: 5)
        let started = ShiftCounters(length: .zero, onDuty: .zero, driving: .zero, continuousDriving: .zero)
        #expect(on == Step(
            snapshot: onDuty, messages: [.event(Transition(t: 5, from: .offDuty, to: .available)), .shift(ShiftReport(what: .start, at: 5, counters: started))],
            status: UnitStatus(state: .available, seatsLeft: 4), driver: [.told("On duty, available")]))
        let off = machine.handle(.driver(.duty, at: 6))
        var offDuty = UnitSnapshot(state: .offDuty)
        offDuty.shift = Shift(startedAt: 5, onDutyBefore: .milliseconds(1), restingSince: 6)
        #expect(off == Step(
            snapshot: offDuty, messages: [.event(Transition(t: 6, from: .available, to: .offDuty))],
            status: UnitStatus(state: .offDuty, seatsLeft: 4), driver: [.told("Off duty")]))
    }

    /// A job lost with a set-aside snapshot is told: an event to the state the unit is in now, and
    /// the driver's line. Nothing else changes.
    @Test func aDroppedJobIsToldAndChangesNothing() {
        var machine = UnitStateMachine()
        let step = machine.handle(.jobDropped(job: "LOOP", state: .enRoute, at: 7))
        #expect(step == Step(
            messages: [.event(Transition(t: 7, from: .enRoute, to: .offDuty, job: "LOOP", reason: "crash_loop"))],
            driver: [.told("Job LOOP dropped after repeated crashes: call dispatch")]))
        #expect(machine.state == .offDuty)
    }

    @Test func restoresTheSnapshot() {
        let machine = UnitStateMachine(restoring: UnitSnapshot(state: .available))
        #expect(machine.state == .available)
    }

}
