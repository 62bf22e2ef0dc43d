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
        #expect(updated.heldJobChanged == "R1", "the driver is shown which held job changed")
        let updatedNext = machine.handle(.inbound(.update(JobUpdate(job: "N1", note: "gate B", update: "U2")), receivedAt: t + .seconds(2)))
        #expect(Scenario.replies(updatedNext).map(\.reply) == [.shown])
        #expect(machine.snapshot.next?.note == "gate B")
        #expect(updatedNext.heldJobChanged == "N1")

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

/// A `job/update` delivered again is applied once to every job the unit holds: a pre-booking and the
/// stacked next job as well as the job in hand, also after the job moved between them.
@Suite struct RedeliveredQueuedUpdateTests {
    let t = Scenario.t0
    let base = PreBookingTests()
    let added = JobUpdate.AddedPickup(lat: 46.51, lon: 7.5, address: "Markt 3", passengers: 1)

    @Test(arguments: ["R-1-joined", nil] as [String?])
    func aPreBookingGetsTheAddedPickupOnceWhileTheDriverWorksAndOnceItStarts(_ id: String?) {
        var machine = base.booked()
        let update = JobUpdate(job: "R1", addPickup: added, update: id)
        let first = machine.handle(.inbound(.update(update), receivedAt: t + .seconds(1)))
        #expect(Scenario.replies(first).map(\.reply) == [.shown])
        // An immediate job meanwhile: the job in hand changes, the pre-booking is still held.
        _ = machine.handle(.inbound(.offer(Scenario.offer("J2")), receivedAt: t + .seconds(2)))
        _ = machine.handle(.driver(.accept, at: t + .seconds(3)))
        let again = machine.handle(.inbound(.update(update), receivedAt: t + .seconds(60)))
        #expect(machine.snapshot.upcoming.first?.job.addedPickups.count == 1, "not applied twice")
        #expect(machine.snapshot.upcoming.first?.job.passengers == 2)
        #expect(again.replies == first.replies, "answered as the first one was")
        #expect(again.driver.isEmpty)
        _ = machine.handle(.inbound(.cancel(JobCancel(job: "J2")), receivedAt: t + .seconds(61)))
        // The window opens: the pre-booking is the job in hand, and a copy still changes nothing.
        _ = machine.handle(.timerFired(.reservationWindow(job: "R1"), at: t + base.minutes(90)))
        #expect(machine.state.job?.id == "R1")
        let late = machine.handle(.inbound(.update(update), receivedAt: t + base.minutes(90) + .seconds(1)))
        #expect(machine.state.job?.addedPickups.count == 1 && machine.state.job?.passengers == 2)
        #expect(late.replies == first.replies)
    }

    @Test(arguments: ["N-1-joined", nil] as [String?])
    func theStackedJobGetsTheAddedPickupOnceAlsoAfterItStarted(_ id: String?) {
        var machine = Scenario.machine(in: .onBoard, settings: base.settings)
        _ = machine.handle(.inbound(.offer(base.nextOffer("N1")), receivedAt: t))
        _ = machine.handle(.driver(.accept, at: t))
        let update = JobUpdate(job: "N1", addPickup: added, update: id)
        let first = machine.handle(.inbound(.update(update), receivedAt: t + .seconds(1)))
        #expect(machine.snapshot.next?.addedPickups.count == 1)
        let again = machine.handle(.inbound(.update(update), receivedAt: t + .seconds(40)))
        #expect(machine.snapshot.next?.addedPickups.count == 1 && machine.snapshot.next?.passengers == 2)
        #expect(again.replies == first.replies)
        // Cleared: the stacked job is the job in hand.
        _ = machine.handle(.driver(.clear, at: t + .seconds(50)))
        #expect(machine.state.name == .enRoute && machine.state.job?.id == "N1")
        let late = machine.handle(.inbound(.update(update), receivedAt: t + .seconds(100)))
        #expect(machine.state.job?.addedPickups.count == 1 && machine.state.job?.passengers == 2, "not applied twice")
        #expect(late.replies == first.replies)
    }

    @Test func theJobInHandKeepsItsMemoryWhenAPreBookingIsAddedOrCancelled() {
        var machine = Scenario.machine(in: .enRoute, settings: base.settings)
        let update = JobUpdate(job: "J1", addPickup: added)
        let first = machine.handle(.inbound(.update(update), receivedAt: t))
        _ = machine.handle(.inbound(.offer(base.reservation("R1", meetsIn: 120)), receivedAt: t + .seconds(1)))
        _ = machine.handle(.driver(.accept, at: t + .seconds(2)))
        _ = machine.handle(.inbound(.cancel(JobCancel(job: "R1")), receivedAt: t + .seconds(3)))
        let again = machine.handle(.inbound(.update(update), receivedAt: t + .seconds(40)))
        #expect(machine.state.job?.addedPickups.count == 1)
        #expect(again.replies == first.replies)
    }

    @Test func theMemoryOfAJobEndsWhenTheUnitLetsItGo() {
        var machine = base.booked(in: .onBoard)
        _ = machine.handle(.inbound(.offer(base.nextOffer("N1")), receivedAt: t))
        _ = machine.handle(.driver(.accept, at: t))
        for job in ["R1", "N1", "J1"] {
            _ = machine.handle(.inbound(.update(JobUpdate(job: job, note: "gate B")), receivedAt: t + .seconds(1)))
        }
        #expect(Set(machine.snapshot.appliedUpdates.map(\.reply.job)) == ["R1", "N1", "J1"])
        _ = machine.handle(.inbound(.cancel(JobCancel(job: "R1")), receivedAt: t + .seconds(2)))
        #expect(Set(machine.snapshot.appliedUpdates.map(\.reply.job)) == ["N1", "J1"])
        _ = machine.handle(.driver(.clear, at: t + .seconds(3)))
        #expect(machine.snapshot.appliedUpdates.map(\.reply.job) == ["N1"], "J1 is done; N1 is the job in hand")
    }
}

/// `job/update` with `meeting_time` moves a pre-booking: checked against the other held jobs as an
/// offer is, its window timer and reminder follow the new time; refused, it changes nothing.
@Suite struct MeetingTimeUpdateTests {
    let t = Scenario.t0
    let base = PreBookingTests()

    func move(_ job: String, to minutes: Int64, note: String? = nil, id: String? = nil) -> JobUpdate {
        JobUpdate(job: job, note: note, update: id, meetingTime: (t + base.minutes(minutes)).milliseconds)
    }

    @Test func aLaterMeetingMovesThePreBookingItsWindowAndItsReminder() {
        var machine = base.booked()
        let at = t + .seconds(10)
        let moved = machine.handle(.inbound(.update(move("R1", to: 240, id: "U1")), receivedAt: at))
        #expect(Scenario.replies(moved) == [JobReply(job: "R1", re: .jobUpdate, reply: .shown, t: at, update: "U1")])
        let meeting = t + base.minutes(240)
        #expect(machine.snapshot.upcoming.map(\.meetingTime) == [meeting] && machine.snapshot.upcoming.first?.job.meetingTime == meeting)
        #expect(moved.timers == [.start(.reservationWindow(job: "R1"), fireAt: t + base.minutes(210))])
        #expect(moved.status?.upcoming == [UpcomingJob(job: "R1", meetingTime: meeting)])
        #expect(moved.snapshot == machine.snapshot, "stored with the answer")
        // The old window's time comes: the timer armed for it was replaced; a firing then only re-arms.
        let early = machine.handle(.timerFired(.reservationWindow(job: "R1"), at: t + base.minutes(90)))
        #expect(machine.state == .available && early.timers == [.start(.reservationWindow(job: "R1"), fireAt: t + base.minutes(210))])
        let started = machine.handle(.timerFired(.reservationWindow(job: "R1"), at: t + base.minutes(210)))
        #expect(machine.state.name == .enRoute && machine.state.job?.meetingTime == meeting)
        #expect(started.timers.contains(.start(.reminder(job: "R1"), fireAt: t + base.minutes(230))), "the reminder rings before the new time")
    }

    @Test func thePreBookingsStayInMeetingTimeOrder() {
        var machine = base.booked()
        _ = machine.handle(.inbound(.offer(base.reservation("R3", meetsIn: 300)), receivedAt: t))
        _ = machine.handle(.driver(.accept, at: t))
        _ = machine.handle(.inbound(.update(move("R1", to: 400)), receivedAt: t + .seconds(1)))
        #expect(machine.snapshot.upcoming.map(\.job.id) == ["R3", "R1"])
    }

    @Test func anEarlierMeetingWhoseWindowIsOpenStartsThePreBookingWhenTheTimerFires() {
        var machine = base.booked()
        let at = t + .seconds(10)
        let moved = machine.handle(.inbound(.update(move("R1", to: 25)), receivedAt: at))
        #expect(moved.timers == [.start(.reservationWindow(job: "R1"), fireAt: t - base.minutes(5))], "already due: the engine fires it at once")
        _ = machine.handle(.timerFired(.reservationWindow(job: "R1"), at: at))
        #expect(machine.state.name == .enRoute && machine.state.job?.id == "R1")
    }

    @Test func aMeetingThatWouldRunIntoAnotherPreBookingIsRefusedAndChangesNothing() {
        var machine = base.booked()
        _ = machine.handle(.inbound(.offer(base.reservation("R3", meetsIn: 300)), receivedAt: t))
        _ = machine.handle(.driver(.accept, at: t))
        let before = machine.snapshot
        let refused = machine.handle(.inbound(.update(move("R1", to: 310, note: "gate B", id: "U2")), receivedAt: t + .seconds(1)))
        let reason = "reservation R3 at \((t + base.minutes(300)).milliseconds)"
        #expect(Scenario.replies(refused) == [JobReply(job: "R1", re: .jobUpdate, reply: .invalid, reason: reason, t: t + .seconds(1), update: "U2")])
        #expect(machine.snapshot == before, "the note came with the refused time: not applied either")
        #expect(refused.timers.isEmpty && refused.driver.isEmpty)
    }

    @Test func aMeetingInThePastIsRefused() {
        var machine = base.booked()
        let before = machine.snapshot
        let refused = machine.handle(.inbound(.update(move("R1", to: 0)), receivedAt: t + .seconds(1)))
        #expect(Scenario.replies(refused).map(\.reason) == ["meeting_time has passed"])
        #expect(machine.snapshot == before)
    }

    @Test func aWindowOpeningBeforeTheJobsInHandAreDoneIsRefusedWithTheirEnd() {
        // On board with a stacked job: both are assumed to take 20 minutes from now.
        var machine = base.booked(in: .onBoard)
        _ = machine.handle(.inbound(.offer(base.nextOffer("N1")), receivedAt: t))
        _ = machine.handle(.driver(.accept, at: t))
        let at = t + .seconds(5)
        // The window would open at t + 40 min, before t + 5 s + 40 min.
        let refused = machine.handle(.inbound(.update(move("R1", to: 70)), receivedAt: at))
        #expect(Scenario.replies(refused).map(\.reason) == ["job N1 until \((at + base.minutes(40)).milliseconds)"])
        #expect(machine.snapshot.upcoming.first?.meetingTime == t + base.minutes(120))
        // Late enough, it moves.
        let moved = machine.handle(.inbound(.update(move("R1", to: 71)), receivedAt: at))
        #expect(Scenario.replies(moved).map(\.reply) == [.shown])
    }

    @Test func theJobInHandAndTheStackedJobKeepTheirMeetingTime() {
        var machine = Scenario.machine(in: .onBoard, settings: base.settings)
        _ = machine.handle(.inbound(.offer(base.nextOffer("N1")), receivedAt: t))
        _ = machine.handle(.driver(.accept, at: t))
        let before = machine.snapshot
        for job in ["J1", "N1"] {
            let refused = machine.handle(.inbound(.update(move(job, to: 300, note: "later")), receivedAt: t + .seconds(1)))
            #expect(Scenario.replies(refused).map(\.reason) == ["meeting_time moves only a pre-booking"], "\(job)")
        }
        #expect(machine.snapshot == before)
    }

    @Test func aMovedMeetingDeliveredAgainIsAnsweredAlikeAndAnotherMoveIsApplied() {
        var machine = base.booked()
        let update = move("R1", to: 240)
        let first = machine.handle(.inbound(.update(update), receivedAt: t + .seconds(1)))
        _ = machine.handle(.inbound(.update(move("R1", to: 200)), receivedAt: t + .seconds(2)))
        #expect(machine.snapshot.upcoming.first?.meetingTime == t + base.minutes(200), "a new time is a new update")
        let again = machine.handle(.inbound(.update(update), receivedAt: t + .seconds(40)))
        #expect(machine.snapshot.upcoming.first?.meetingTime == t + base.minutes(200), "the copy of the first move is not applied again")
        #expect(again.replies == first.replies && again.timers.isEmpty)
    }
}
