import PropertyBased
import TaxiProtocol
import Testing
import UnitCore

/// Random event sequences, run the way the shell runs them (timers fire when their time comes),
/// against the job rules' invariants (JobRulesTests).
@Suite struct StateMachinePropertyTests {
    /// A little world: three job ids so redeliveries and cancels hit real jobs, a clock that moves
    /// 0–120 s per step, fixes near and far from the pickup.
    struct World {
        var machine = UnitStateMachine(settings: UnitSettings(offerTimeout: .seconds(30), noShowWait: .seconds(60), seats: 4, answeredOfferMemory: 1000))
        var now: UnitTime = Scenario.t0
        var timers: [TimerID: UnitTime] = [:]
        var offered: Set<String> = []
        var malformedJobs: Set<String> = []
        /// Every reply published, per job.
        var replies: [String: [JobReply]] = [:]
        var withdrawn: Set<String> = []
        var failures: [String] = []

        mutating func step(_ code: Int) {
            let job = "J\(code % 3)"
            let advance = Duration.seconds((code / 40) % 121)
            // Timers due before the next event fire first, as the shell's clock would make them.
            fireTimers(until: now + advance)
            now += advance
            let event: UnitEvent
            switch code % 20 {
            case 0: event = .driver(.duty, at: now)
            case 1: event = .driver(.accept, at: now)
            case 2: event = .driver(.reject(reason: nil), at: now)
            case 3: event = .driver(.arrived, at: now)
            case 4: event = .driver(.passengersOnBoard((code / 20) % 6 + 1), at: now)
            case 5: event = .driver(.clear, at: now)
            case 6: event = .driver(.noShow, at: now)
            case 7: event = .driver(.pause(.break), at: now)
            case 8: event = .driver(.resume, at: now)
            case 9: event = .driver(.sos, at: now)
            case 10, 11, 12: event = .inbound(.offer(Scenario.offer(job, passengers: (code / 60) % 5 + 1)), receivedAt: now)
            case 13: event = .inbound(.offer(Scenario.offer(job, window: 10, sentAt: now - .milliseconds(11_000))), receivedAt: now)
            case 14: event = .inbound(.cancel(JobCancel(job: job)), receivedAt: now)
            case 15: event = .inbound(.update(JobUpdate(job: job, passengers: (code / 20) % 6 + 1)), receivedAt: now)
            case 16: event = .inbound(.update(JobUpdate(job: job, addPickup: .init(lat: 46.5, lon: 7.5, passengers: 1))), receivedAt: now)
            case 17: event = .inbound(.sosAck(SOSAck()), receivedAt: now)
            case 18: event = .malformed(InboundProblem(topic: .jobOffer, job: "M\(code % 2)", reason: "bad"), at: now)
            default: event = .gps(Scenario.sample(now.seconds, lat: code % 2 == 0 ? 46.5 : 46.52))
            }
            if case .inbound(.offer(let offer), _) = event { offered.insert(offer.job) }
            if case .malformed(let problem, _) = event, let job = problem.job { malformedJobs.insert(job) }
            apply(event)
        }

        mutating func fireTimers(until time: UnitTime) {
            while let (id, fireAt) = timers.min(by: { $0.value < $1.value }), fireAt <= time {
                timers[id] = nil
                apply(.timerFired(id, at: fireAt))
            }
        }

        mutating func apply(_ event: UnitEvent) {
            let pendingBefore: String? = if case .offered(let offer) = machine.state { offer.job.id } else { nil }
            let actions = machine.handle(event)
            for reply in actions.replies { replies[reply.job, default: []].append(reply) }
            for timer in actions.timers {
                switch timer {
                case .start(let id, let fireAt): timers[id] = fireAt
                case .cancel(let id): timers[id] = nil
                }
            }
            if let pendingBefore, case .inbound(.cancel(let cancel), _) = event, cancel.job == pendingBefore {
                withdrawn.insert(pendingBefore)
            }
            check(after: event, actions)
        }

        mutating func check(after event: UnitEvent, _ actions: Step) {
            let status = machine.status
            if status.seatsLeft < 0 || status.seatsLeft > 4 { failures.append("seats left \(status.seatsLeft) after \(event)") }
            if let job = machine.state.job, job.passengers > 4 || job.passengers < 1 {
                failures.append("job with \(job.passengers) passengers after \(event)")
            }
            // At most one job, and only one the unit accepted (the state holds one job by construction).
            if let job = machine.state.job, machine.state.name != .offered,
               !(replies[job.id] ?? []).contains(where: { $0.reply == .accept && $0.re == .jobOffer }) {
                failures.append("holding job \(job.id) that was never accepted, after \(event)")
            }
            for reply in actions.replies where !offered.contains(reply.job) && !malformedJobs.contains(reply.job) {
                failures.append("reply for unknown job \(reply.job) after \(event)")
            }
            // A fresh accept (not a re-answer to a redelivered offer) takes the job on.
            for reply in actions.replies where reply.reply == .accept && event == .driver(.accept, at: now) {
                if machine.state.name != .enRoute || machine.state.job?.id != reply.job {
                    failures.append("accepted \(reply.job) but state is \(machine.state.name)")
                }
            }
        }

        /// Every offer was answered, withdrawn, or is still waiting for the driver; every job's
        /// answers are one and the same (repeats are identical re-answers).
        func offerProblems() -> [String] {
            var problems: [String] = []
            let pending: String? = if case .offered(let offer) = machine.state { offer.job.id } else { nil }
            for job in offered {
                let answers = replies[job, default: []].filter { $0.re == .jobOffer }
                if answers.isEmpty && !withdrawn.contains(job) && job != pending { problems.append("offer \(job) never answered") }
                if Set(answers.map { "\($0.reply) \($0.reason ?? "") \($0.t)" }).count > 1 { problems.append("offer \(job) answered differently: \(answers)") }
            }
            return problems
        }
    }

    static let steps = Gen.int(in: 0...9_999).array(of: 0...80)

    @Test func randomSequencesKeepTheInvariants() async {
        await propertyCheck(count: 400, input: Self.steps) { codes in
            var world = World()
            for code in codes { world.step(code) }
            // Let every deadline pass: silence must end in an answer.
            world.fireTimers(until: world.now + .milliseconds(3_600_000))
            #expect(world.failures.isEmpty, "\(world.failures)")
            #expect(world.offerProblems().isEmpty, "\(world.offerProblems())")
            if case .offered = world.machine.state { Issue.record("an offer outlived its deadline") }
        }
    }

    @Test func theSnapshotAloneRestoresTheSameBehaviour() async {
        await propertyCheck(count: 200, input: Self.steps, Gen.int(in: 0...9_999).array(of: 1...20)) { prefix, suffix in
            var world = World()
            for code in prefix { world.step(code) }
            var restored = world
            restored.machine = UnitStateMachine(restoring: world.machine.snapshot, settings: world.machine.settings)
            // The restart loses the last fix and reporting history only; feed both the same fix.
            _ = world.machine.handle(.gps(Scenario.sample(world.now.seconds + 0.5, lat: 46.53)))
            _ = restored.machine.handle(.gps(Scenario.sample(world.now.seconds + 0.5, lat: 46.53)))
            for code in suffix {
                world.step(code)
                restored.step(code)
            }
            #expect(world.machine.snapshot == restored.machine.snapshot)
        }
    }
}
