import Foundation
import TaxiProtocol
import Testing
import UnitCore

/// Pre-bookings (reservations kept aside until `[job] reservation_lead_min` before their meeting
/// time) and the next job stacked while passengers are on board.
@Suite struct PreBookingTests {
    let t = Scenario.t0
    static let lead = 30
    let settings = UnitSettings(reservationLeadMin: lead, maxUpcoming: 2, expectedJobMin: 20)

    func minutes(_ count: Int64) -> Duration { .seconds(count * 60) }

    func reservation(_ job: String, meetsIn: Int64, next: Bool? = nil) -> JobOffer {
        JobOffer(job: job, pickup: Scenario.pickup, meetingTime: (t + minutes(meetsIn)).milliseconds, next: next)
    }

    func nextOffer(_ job: String) -> JobOffer {
        JobOffer(job: job, pickup: Scenario.pickup, next: true)
    }

    /// A machine in `state` (job J1 where it has one) with pre-booking R1 meeting in 120 min.
    func booked(in state: StateName = .available) -> UnitStateMachine {
        var machine = Scenario.machine(in: .available, settings: settings)
        _ = machine.handle(.inbound(.offer(reservation("R1", meetsIn: 120)), receivedAt: t))
        let accepted = machine.handle(.driver(.accept, at: t))
        precondition(accepted.replies.map(\.reply) == [.accept] && machine.snapshot.upcoming.count == 1)
        switch state {
        case .available:
            break
        case .onBoard:
            for event: UnitEvent in [
                .inbound(.offer(Scenario.offer("J1")), receivedAt: t), .driver(.accept, at: t), .driver(.arrived, at: t),
                .driver(.passengersOnBoard(1), at: t),
            ] { _ = machine.handle(event) }
        default:
            preconditionFailure("not set up: \(state)")
        }
        precondition(machine.state.name == state)
        return machine
    }

    @Test func aReservationAcceptedWhileAvailableDoesNotOccupyTheUnit() {
        var machine = Scenario.machine(in: .available, settings: settings)
        let offered = machine.handle(.inbound(.offer(reservation("R1", meetsIn: 120)), receivedAt: t))
        #expect(machine.state.name == .offered, "answered as any offer")
        #expect(Scenario.told(offered) == ["Job R1: Bahnhofplatz 1, 1 pax, reservation. Accept within 60 s?"])
        let accepted = machine.handle(.driver(.accept, at: t + .seconds(5)))
        #expect(Scenario.replies(accepted) == [JobReply(job: "R1", reply: .accept, t: t + .seconds(5))])
        #expect(machine.state == .available)
        #expect(machine.snapshot.upcoming.map(\.job.id) == ["R1"])
        #expect(accepted.timers.contains(.start(.reservationWindow(job: "R1"), fireAt: t + minutes(90))))
        #expect(accepted.status?.upcoming == [UpcomingJob(job: "R1", meetingTime: t + minutes(120))])
        // The driver takes an immediate job meanwhile.
        _ = machine.handle(.inbound(.offer(Scenario.offer("J2")), receivedAt: t + .seconds(10)))
        _ = machine.handle(.driver(.accept, at: t + .seconds(11)))
        #expect(machine.state.name == .enRoute && machine.state.job?.id == "J2")
    }

    @Test func withoutALeadAReservationOccupiesTheUnitFromAcceptance() {
        var machine = Scenario.machine(in: .available)
        _ = machine.handle(.inbound(.offer(reservation("R1", meetsIn: 120)), receivedAt: t))
        _ = machine.handle(.driver(.accept, at: t))
        #expect(machine.state.name == .enRoute && machine.snapshot.upcoming.isEmpty)
    }

    @Test func aReservationWhoseWindowIsOpenIsAnOrdinaryJob() {
        var machine = Scenario.machine(in: .available, settings: settings)
        _ = machine.handle(.inbound(.offer(reservation("R1", meetsIn: 20)), receivedAt: t))
        _ = machine.handle(.driver(.accept, at: t))
        #expect(machine.state.name == .enRoute && machine.state.job?.id == "R1")
        #expect(machine.snapshot.upcoming.isEmpty)
    }

    @Test func theWindowOpensByTimerAndTheReservationGoesEnRoute() {
        var machine = booked()
        let opens = t + minutes(90)
        let step = machine.handle(.timerFired(.reservationWindow(job: "R1"), at: opens))
        #expect(machine.state.name == .enRoute && machine.state.job?.id == "R1")
        #expect(machine.snapshot.upcoming.isEmpty)
        #expect(step.messages.contains(.event(Transition(t: opens, from: .available, to: .enRoute, job: "R1", reason: "reservation"))))
        #expect(Scenario.told(step) == ["Reservation R1 due: go to Bahnhofplatz 1"])
        #expect(step.timers.contains(.start(.reminder(job: "R1"), fireAt: t + minutes(110))), "the reminder rings as for any reservation")
        #expect(step.status?.upcoming == [])
    }

    @Test func aWindowOpeningWhileBusyWarnsTheDriverAndStartsTheReservationWhenFree() {
        var machine = booked(in: .onBoard)
        let opens = t + minutes(90)
        let warned = machine.handle(.timerFired(.reservationWindow(job: "R1"), at: opens))
        #expect(machine.state.name == .onBoard && machine.state.job?.id == "J1", "the ride on board goes on")
        #expect(warned.driver == [.reminder("Reservation R1 due, meet at Bahnhofplatz 1: it starts when you are free")])
        let cleared = machine.handle(.driver(.clear, at: opens + .seconds(60)))
        #expect(machine.state.name == .enRoute && machine.state.job?.id == "R1")
        let events = cleared.messages.compactMap { if case .event(let event) = $0 { event } else { nil } }
        #expect(events.map(\.to) == [.available, .enRoute])
        #expect(cleared.ride?.job == "J1")
    }

    @Test func aNewLeadMovesTheWindowsOfThePreBookings() {
        var machine = booked()
        var longer = settings
        longer.reservationLeadMin = 45
        let step = machine.use(longer)
        #expect(step.timers.contains(.start(.reservationWindow(job: "R1"), fireAt: t + minutes(75))))
        #expect(!machine.use(longer).timers.contains { if case .start(.reservationWindow, _) = $0 { true } else { false } }, "unchanged: not re-armed")
    }

    @Test func anImmediateJobRunningIntoAReservationsWindowIsRefusedWithItsReason() {
        var machine = booked()
        // The window opens at t + 90 min; a job takes 20: from t + 70 min on it would run into it.
        let late = t + minutes(71)
        let refused = machine.handle(.inbound(.offer(Scenario.offer("J2")), receivedAt: late))
        let reason = "reservation R1 at \((t + minutes(120)).milliseconds)"
        #expect(Scenario.replies(refused) == [JobReply(job: "J2", reply: .busy, reason: reason, t: late)])
        #expect(machine.state == .available)
        _ = machine.handle(.inbound(.offer(Scenario.offer("J3")), receivedAt: t + minutes(69)))
        #expect(machine.state.name == .offered, "an earlier job still fits")
    }

    @Test func overlappingPreBookingsAndAFullListAreRefused() {
        var machine = booked()
        let overlapping = machine.handle(.inbound(.offer(reservation("R2", meetsIn: 130)), receivedAt: t))
        #expect(Scenario.replies(overlapping).first?.reason == "reservation R1 at \((t + minutes(120)).milliseconds)")
        _ = machine.handle(.inbound(.offer(reservation("R3", meetsIn: 300)), receivedAt: t))
        _ = machine.handle(.driver(.accept, at: t))
        #expect(machine.snapshot.upcoming.map(\.job.id) == ["R1", "R3"])
        let full = machine.handle(.inbound(.offer(reservation("R4", meetsIn: 600)), receivedAt: t))
        #expect(Scenario.replies(full) == [JobReply(job: "R4", reply: .busy, reason: "pre-bookings full (2)", t: t)])
    }

    @Test func aPreBookingOfferedOnTheWayIsAnsweredBesideTheJobInHand() {
        var machine = Scenario.machine(in: .enRoute, settings: settings)
        let offered = machine.handle(.inbound(.offer(reservation("R1", meetsIn: 120)), receivedAt: t))
        #expect(machine.state.name == .enRoute && machine.state.job?.id == "J1", "the current job stays")
        #expect(offered.driver == [
            .offeredBeside(machine.snapshot.sideOffer!.job, preBooking: true, text: "Pre-booking Job R1: Bahnhofplatz 1, 1 pax, reservation. Accept within 60 s?")
        ])
        #expect(offered.timers.contains(.start(.offerDeadline(job: "R1"), fireAt: t + .seconds(60))))
        let accepted = machine.handle(.driver(.accept, at: t + .seconds(3)))
        #expect(Scenario.replies(accepted) == [JobReply(job: "R1", reply: .accept, t: t + .seconds(3))])
        #expect(machine.snapshot.upcoming.map(\.job.id) == ["R1"] && machine.snapshot.sideOffer == nil)
        #expect(machine.state.name == .enRoute && machine.state.job?.id == "J1")
        // Still unanswered when the job in hand ends, it is answered from the free taxi.
        _ = machine.handle(.inbound(.offer(reservation("R2", meetsIn: 600)), receivedAt: t + .seconds(4)))
        _ = machine.handle(.inbound(.cancel(JobCancel(job: "J1")), receivedAt: t + .seconds(5)))
        #expect(machine.state == .available && machine.snapshot.sideOffer?.job.id == "R2")
        #expect(Scenario.replies(machine.handle(.driver(.reject(reason: nil), at: t + .seconds(6)))).map(\.reply) == [.reject])
        #expect(machine.snapshot.sideOffer == nil)
        // Without an offer beside the job, accept has nothing to answer.
        #expect(Scenario.refused(machine.handle(.driver(.accept, at: t + .seconds(4)))) == [.noOffer])
    }

    @Test func anOfferBesideTheJobTimesOutAndIsWithdrawnLikeAnyOffer() {
        var machine = Scenario.machine(in: .onBoard, settings: settings)
        _ = machine.handle(.inbound(.offer(nextOffer("N1")), receivedAt: t))
        let silence = machine.handle(.timerFired(.offerDeadline(job: "N1"), at: t + .seconds(60)))
        #expect(Scenario.replies(silence) == [JobReply(job: "N1", reply: .timeout, t: t + .seconds(60))])
        #expect(machine.snapshot.sideOffer == nil && machine.snapshot.next == nil)
        _ = machine.handle(.inbound(.offer(nextOffer("N2")), receivedAt: t + .seconds(70)))
        let withdrawn = machine.handle(.inbound(.cancel(JobCancel(job: "N2")), receivedAt: t + .seconds(71)))
        #expect(withdrawn.timers.contains(.cancel(.offerDeadline(job: "N2"))))
        #expect(machine.snapshot.sideOffer == nil && machine.state.name == .onBoard)
    }

    @Test func aNextJobIsStackedOnBoardAndStartsEnRouteAfterClear() {
        var machine = Scenario.machine(in: .onBoard, settings: settings)
        let offered = machine.handle(.inbound(.offer(nextOffer("N1")), receivedAt: t))
        #expect(offered.offeredBeside?.job.id == "N1" && offered.offeredBeside?.preBooking == false)
        #expect(offered.driver == [.offeredBeside(Job(nextOffer("N1")), preBooking: false, text: "Next job Job N1: Bahnhofplatz 1, 1 pax. Accept within 60 s?")])
        let accepted = machine.handle(.driver(.accept, at: t + .seconds(2)))
        #expect(Scenario.replies(accepted) == [JobReply(job: "N1", reply: .accept, t: t + .seconds(2))])
        #expect(machine.snapshot.next?.id == "N1" && accepted.status?.next == "N1")
        #expect(machine.state.name == .onBoard && machine.state.job?.id == "J1")
        let cleared = machine.handle(.driver(.clear, at: t + .seconds(300)))
        #expect(machine.state.name == .enRoute && machine.state.job?.id == "N1")
        #expect(machine.snapshot.next == nil)
        #expect(cleared.messages.contains(.event(Transition(t: t + .seconds(300), from: .available, to: .enRoute, job: "N1", reason: "next"))))
        #expect(cleared.ride?.job == "J1")
    }

    @Test func stackDepthIsOneAndNextIsOnlyForATaxiOnBoard() {
        var machine = Scenario.machine(in: .onBoard, settings: settings)
        _ = machine.handle(.inbound(.offer(nextOffer("N1")), receivedAt: t))
        let whileAnswering = machine.handle(.inbound(.offer(nextOffer("N2")), receivedAt: t + .seconds(1)))
        #expect(Scenario.replies(whileAnswering).first?.reason == "offer N1 awaits an answer")
        _ = machine.handle(.driver(.accept, at: t + .seconds(2)))
        let second = machine.handle(.inbound(.offer(nextOffer("N3")), receivedAt: t + .seconds(3)))
        #expect(Scenario.replies(second) == [JobReply(job: "N3", reply: .busy, reason: "next job N1 already stacked", t: t + .seconds(3))])
        #expect(machine.snapshot.next?.id == "N1")

        var onTheWay = Scenario.machine(in: .enRoute, settings: settings)
        let early = onTheWay.handle(.inbound(.offer(nextOffer("N4")), receivedAt: t))
        #expect(Scenario.replies(early) == [JobReply(job: "N4", reply: .busy, reason: "next only while on board", t: t)])

        // A free taxi takes a `next` offer as any offer.
        var free = Scenario.machine(in: .available, settings: settings)
        _ = free.handle(.inbound(.offer(nextOffer("N5")), receivedAt: t))
        #expect(free.state.name == .offered)
    }

    @Test func aNextJobRunningIntoAReservationsWindowIsRefused() {
        var machine = booked(in: .onBoard)
        let late = t + minutes(75)
        let refused = machine.handle(.inbound(.offer(nextOffer("N1")), receivedAt: late))
        #expect(Scenario.replies(refused).first?.reason == "reservation R1 at \((t + minutes(120)).milliseconds)")
        #expect(machine.snapshot.sideOffer == nil)
    }

    @Test func theDispatcherCancelsAndUpdatesUpcomingAndStackedJobs() {
        var machine = booked(in: .onBoard)
        _ = machine.handle(.inbound(.offer(nextOffer("N1")), receivedAt: t))
        _ = machine.handle(.driver(.accept, at: t))

        let updated = machine.handle(.inbound(.update(JobUpdate(job: "R1", passengers: 3, note: "two cases", update: "U1")), receivedAt: t + .seconds(1)))
        #expect(Scenario.replies(updated).map(\.reply) == [.shown])
        #expect(machine.snapshot.upcoming.first?.job.passengers == 3 && machine.snapshot.upcoming.first?.job.note == "two cases")
        #expect(machine.state.job?.id == "J1" && machine.state.job?.passengers == 1, "the job in hand is untouched")
        let updatedNext = machine.handle(.inbound(.update(JobUpdate(job: "N1", note: "gate B", update: "U2")), receivedAt: t + .seconds(2)))
        #expect(Scenario.replies(updatedNext).map(\.reply) == [.shown])
        #expect(machine.snapshot.next?.note == "gate B")

        let cancelled = machine.handle(.inbound(.cancel(JobCancel(job: "R1", reason: "customer")), receivedAt: t + .seconds(3)))
        #expect(machine.snapshot.upcoming.isEmpty)
        #expect(cancelled.timers.contains(.cancel(.reservationWindow(job: "R1"))))
        #expect(Scenario.told(cancelled) == ["Reservation R1 cancelled by dispatch: customer"])
        let cancelledNext = machine.handle(.inbound(.cancel(JobCancel(job: "N1")), receivedAt: t + .seconds(4)))
        #expect(machine.snapshot.next == nil && cancelledNext.status?.next == nil)
        #expect(machine.state.name == .onBoard && machine.state.job?.id == "J1")
        // Cleared with nothing stacked, the taxi is free.
        _ = machine.handle(.driver(.clear, at: t + .seconds(5)))
        #expect(machine.state == .available)
    }

    @Test func aRestartKeepsThePreBookingsTheStackedJobAndTheOfferBeside() throws {
        var machine = booked(in: .onBoard)
        _ = machine.handle(.inbound(.offer(nextOffer("N1")), receivedAt: t))
        _ = machine.handle(.driver(.accept, at: t))
        _ = machine.handle(.inbound(.offer(reservation("R2", meetsIn: 600)), receivedAt: t + .seconds(1)))
        #expect(machine.snapshot.sideOffer?.job.id == "R2")

        let stored = try JSONEncoder().encode(machine.snapshot)
        let restored = try JSONDecoder().decode(UnitSnapshot.self, from: stored)
        #expect(restored == machine.snapshot)

        var again = UnitStateMachine(restoring: restored, settings: settings)
        let resumed = again.handle(.resumed(at: t + .seconds(2)))
        #expect(resumed.timers.contains(.start(.reservationWindow(job: "R1"), fireAt: t + minutes(90))))
        #expect(resumed.timers.contains(.start(.offerDeadline(job: "R2"), fireAt: t + .seconds(61))))
        _ = again.handle(.driver(.accept, at: t + .seconds(3)))
        #expect(again.snapshot.upcoming.map(\.job.id) == ["R1", "R2"])
        _ = again.handle(.driver(.clear, at: t + .seconds(4)))
        #expect(again.state.name == .enRoute && again.state.job?.id == "N1")

        // Down past the answer window: the offer beside the job is answered timeout on the way up.
        var late = UnitStateMachine(restoring: restored, settings: settings)
        let lateResume = late.handle(.resumed(at: t + .seconds(120)))
        #expect(Scenario.replies(lateResume).map(\.reply) == [.timeout])
    }

    @Test func aSnapshotWithoutTheListsStillDecodes() throws {
        let plain = try JSONDecoder().decode(UnitSnapshot.self, from: Data(#"{"v":3,"state":{"available":{}},"answeredOffers":[]}"#.utf8))
        #expect(plain.upcoming.isEmpty && plain.next == nil && plain.sideOffer == nil)
        let written = String(decoding: try JSONEncoder().encode(plain), as: UTF8.self)
        #expect(!written.contains("upcoming") && !written.contains("next") && !written.contains("sideOffer"), "absent when empty")
    }
}
