import DriverDisplay
import TaxiProtocol
import TestHarness
import Testing
import UnitCore
@testable import UnitRuntime

/// What the engine hands the terminal after each step: detail pages, the dispatcher's words with a
/// notice, reminders and seats.
@Suite struct DriverPanelTests {
    let t = TestClock.now()
    var job: Job {
        var job = Job(id: "J1", pickup: Place(lat: 46.5, lon: 7.5), note: "ring twice", dropoff: Place(lat: 46.6, lon: 7.6, address: "Airport"))
        job.passenger = Passenger(name: "Anna")
        return job
    }

    func view(_ panel: DriverPanel, _ state: DriverState) -> DriverView {
        panel.view(state: state, seatsLeft: 4, zone: nil, online: true, waiting: 0, unitClockAhead: .zero, distance: { _ in 100 })
    }

    /// The machine's own steps: an offer beside the ride on board, and a pre-booking falling due
    /// while the driver is busy, each ring with the job's screen left in place.
    @Test func offersBesideTheJobAndADuePreBookingRingOverTheJobScreen() {
        var machine = UnitStateMachine(settings: UnitSettings(reservationLeadMin: 30))
        var panel = DriverPanel()
        func feed(_ event: UnitEvent) {
            let before = machine.state
            let step = machine.handle(event)
            panel.stepped(event, before: before, after: machine.state, step: step, seatsLeft: machine.seatsLeft)
        }
        let meeting = t + .seconds(7_200)
        feed(.driver(.duty, at: t))
        feed(.inbound(.offer(JobOffer(job: "R1", pickup: Place(lat: 46.5, lon: 7.5), meetingTime: meeting.milliseconds)), receivedAt: t))
        feed(.driver(.accept, at: t))
        for event: UnitEvent in [
            .inbound(.offer(JobOffer(job: "J1", pickup: Place(lat: 46.5, lon: 7.5))), receivedAt: t), .driver(.accept, at: t),
            .driver(.arrived, at: t), .driver(.passengersOnBoard(1), at: t),
        ] { feed(event) }
        #expect(machine.state.name == .onBoard)

        feed(.inbound(.offer(JobOffer(job: "N1", pickup: Place(lat: 46.6, lon: 7.6, address: "Markt 3"), next: true)), receivedAt: t))
        let offered = view(panel, machine.state)
        #expect(offered.notice == .offerBeside(preBooking: false) && offered.noticeDetail == "Markt 3")
        #expect(offered.mode == .onBoard(passengers: 1), "the ride's screen stays")

        feed(.timerFired(.reservationWindow(job: "R1"), at: meeting - .seconds(1_800)))
        #expect(view(panel, machine.state).notice == .reservationDue)
    }

    @Test func oneKeyPagesThroughTheDetailsAndBackToTheJobScreen() {
        var panel = DriverPanel()
        let state = DriverState.enRoute(job)
        let press = UnitEvent.driver(.details, at: t)
        panel.stepped(.driver(.seats(3), at: t), before: state, after: state, step: Step(), seatsLeft: 3)
        #expect(view(panel, state).notice == .freeSeats(3))
        var pages: [Int?] = []
        for _ in 0..<4 {
            panel.stepped(press, before: state, after: state, step: Step(), seatsLeft: 4)
            pages.append(view(panel, state).page)
        }
        #expect(pages == [0, 1, 2, nil])
        #expect(view(panel, state).details.count == 3)
        #expect(view(panel, state).notice == nil, "paging put the notice away")
        // A change of state starts from the job's screen.
        panel.stepped(press, before: state, after: state, step: Step(), seatsLeft: 4)
        let arrived = DriverState.atPickup(job, arrivedAt: t)
        panel.stepped(.driver(.arrived, at: t), before: state, after: arrived, step: Step(), seatsLeft: 4)
        #expect(view(panel, arrived).page == nil)
        // Refused (no job): no page.
        panel.stepped(press, before: .available, after: .available, step: Step(driver: [.refused(.noJob)]), seatsLeft: 4)
        #expect(view(panel, .available).page == nil && view(panel, .available).notice == .refused(.noJob))
    }

    @Test func theHistoryKeyPagesThroughTheRidesAndTotalsAndBack() {
        var panel = DriverPanel()
        let press = UnitEvent.driver(.history, at: t)
        panel.stepped(.driver(.seats(3), at: t), before: .available, after: .available, step: Step(), seatsLeft: 3)
        var pages: [Int?] = []
        for _ in 0..<4 {
            panel.stepped(press, before: .available, after: .available, step: Step(), seatsLeft: 3, historyPages: 3)
            pages.append(panel.historyPage)
        }
        #expect(pages == [0, 1, 2, nil])
        #expect(panel.notice == nil, "paging put the notice away")
        // Any other key, or a change of state, leaves the history.
        panel.stepped(press, before: .available, after: .available, step: Step(), seatsLeft: 3, historyPages: 3)
        panel.stepped(.driver(.seats(2), at: t), before: .available, after: .available, step: Step(), seatsLeft: 2)
        #expect(panel.historyPage == nil)
        panel.stepped(press, before: .available, after: .available, step: Step(), seatsLeft: 2, historyPages: 3)
        panel.stepped(.driver(.duty, at: t), before: .available, after: .offDuty, step: Step(), seatsLeft: 2)
        #expect(panel.historyPage == nil)
    }

    @Test func thePreBookingsKeyPagesThroughThemAndAnyOtherKeyReturns() {
        var panel = DriverPanel()
        let press = UnitEvent.driver(.preBookings, at: t)
        var pages: [Int?] = []
        for _ in 0..<3 {
            panel.stepped(press, before: .available, after: .available, step: Step(), seatsLeft: 4, preBookings: 2)
            pages.append(panel.preBookingPage)
        }
        #expect(pages == [0, 1, nil])
        // None held: one page saying so, then back.
        panel.stepped(press, before: .available, after: .available, step: Step(), seatsLeft: 4)
        #expect(panel.preBookingPage == 0)
        panel.stepped(press, before: .available, after: .available, step: Step(), seatsLeft: 4)
        #expect(panel.preBookingPage == nil)
        // Any other key, the history key included, or a change of state, leaves the page.
        for other: UnitEvent in [.driver(.seats(2), at: t), .driver(.history, at: t), .driver(.details, at: t)] {
            panel.stepped(press, before: .available, after: .available, step: Step(), seatsLeft: 4, preBookings: 2)
            panel.stepped(other, before: .available, after: .available, step: Step(), seatsLeft: 4, historyPages: 1)
            #expect(panel.preBookingPage == nil, "\(other)")
        }
        panel.stepped(press, before: .available, after: .available, step: Step(), seatsLeft: 4, preBookings: 2)
        panel.stepped(.inbound(.offer(JobOffer(job: "J2", pickup: Place(lat: 1, lon: 2))), receivedAt: t), before: .available,
            after: .offered(PendingOffer(job: job, receivedAt: t, deadline: t + .seconds(60))), step: Step(), seatsLeft: 4)
        #expect(panel.preBookingPage == nil)
    }

    @Test func theCancelsReasonAndTheUpdatesPickupOrNoteGoWithTheNotice() {
        var panel = DriverPanel()
        var updated = job
        updated.addedPickups = [Place(lat: 1, lon: 2, address: "Market 3")]
        let added = JobUpdate(job: "J1", addPickup: .init(lat: 1, lon: 2, address: "Market 3"), note: "second passenger")
        panel.stepped(.inbound(.update(added), receivedAt: t), before: .enRoute(job), after: .enRoute(updated), step: Step(), seatsLeft: 4)
        #expect(view(panel, .enRoute(updated)).noticeDetail == "+ Market 3")
        var noted = job
        noted.note = "gate B"
        panel.stepped(.inbound(.update(JobUpdate(job: "J1", note: "gate B")), receivedAt: t), before: .enRoute(job), after: .enRoute(noted), step: Step(), seatsLeft: 4)
        #expect(view(panel, .enRoute(noted)).noticeDetail == "gate B")
        // A held pre-booking changed, the job in hand did not: the notice names the booking.
        let held = Step(driver: [.heldJobChanged(job: "P1", text: "Job P1 changed: meeting time moved")])
        panel.stepped(.inbound(.update(JobUpdate(job: "P1", meetingTime: 9)), receivedAt: t), before: .enRoute(job), after: .enRoute(job), step: held, seatsLeft: 4)
        #expect(view(panel, .enRoute(job)).notice == .updated && view(panel, .enRoute(job)).noticeDetail == "P1")
        panel.stepped(.inbound(.update(JobUpdate(job: "P1", note: "gate C")), receivedAt: t), before: .available, after: .available, step: held, seatsLeft: 4)
        #expect(view(panel, .available).noticeDetail == "P1 gate C")
        panel.stepped(.inbound(.cancel(JobCancel(job: "J1", reason: "passenger withdrew")), receivedAt: t), before: .enRoute(job), after: .available, step: Step(), seatsLeft: 4)
        #expect(view(panel, .available).notice == .cancelled && view(panel, .available).noticeDetail == "passenger withdrew")
        // A notice without words clears the last ones.
        panel.stepped(.driver(.accept, at: t), before: .available, after: .available, step: Step(driver: [.refused(.noOffer)]), seatsLeft: 4)
        #expect(view(panel, .available).noticeDetail == nil)
    }

    @Test func aReminderRaisesItsNoticeWithTheMeetingTime() {
        var panel = DriverPanel()
        var reservation = job
        reservation.meetingTime = t + .seconds(600)
        let state = DriverState.enRoute(reservation)
        panel.stepped(.timerFired(.reminder(job: "J1"), at: t), before: state, after: state, step: Step(driver: [.reminder("r")]), seatsLeft: 4)
        #expect(view(panel, state).notice == .reminder(meetingTime: t + .seconds(600)))
        // After a restart, from `resumed`, the same.
        var restarted = DriverPanel()
        restarted.stepped(.resumed(at: t), before: state, after: state, step: Step(driver: [.reminder("r")]), seatsLeft: 4)
        #expect(view(restarted, state).notice == .reminder(meetingTime: t + .seconds(600)))
    }

    @Test func theIgnitionOffAsksUntilItComesBackOn() {
        var panel = DriverPanel()
        var machine = UnitStateMachine()
        _ = machine.handle(.driver(.duty, at: t))
        let off = machine.handle(.ignition(on: false, at: t))
        panel.stepped(.ignition(on: false, at: t), before: .available, after: .available, step: off, seatsLeft: 4)
        #expect(view(panel, .available).notice == .ignitionOff)
        #expect(DriverView.Notice.ignitionOff.alerts)
        let on = machine.handle(.ignition(on: true, at: t + .seconds(1)))
        panel.stepped(.ignition(on: true, at: t + .seconds(1)), before: .available, after: .available, step: on, seatsLeft: 4)
        #expect(view(panel, .available).notice == nil)
    }

    /// The meter found disagreeing with the state rings once with what it says; found agreeing, nothing.
    @Test func theMeterFoundAgainstTheStateIsANotice() {
        var machine = UnitStateMachine()
        _ = machine.handle(.driver(.duty, at: t))
        var panel = DriverPanel()
        let found = machine.handle(.meterFound(hired: true, at: t))
        panel.stepped(.meterFound(hired: true, at: t), before: .available, after: .available, step: found, seatsLeft: 4)
        #expect(view(panel, .available).notice == .meterDisagrees(hired: true))
        #expect(DriverView.Notice.meterDisagrees(hired: true).alerts)
        var quiet = DriverPanel()
        var agreeing = UnitStateMachine()
        _ = agreeing.handle(.driver(.duty, at: t))
        let vacant = agreeing.handle(.meterFound(hired: false, at: t))
        quiet.stepped(.meterFound(hired: false, at: t), before: .available, after: .available, step: vacant, seatsLeft: 4)
        #expect(view(quiet, .available).notice == nil)
    }

    /// A broadcast kept rings like a message of the unit's own; one the core did not keep (a copy,
    /// another zone's, a retained one) says nothing.
    @Test func aKeptBroadcastIsANewMessageAndAnIgnoredOneIsNothing() {
        var panel = DriverPanel()
        let message = TextMessage(id: "b1", text: "Fleet news")
        let event = UnitEvent.broadcast(message, zone: nil, retained: false, receivedAt: t)
        panel.stepped(event, before: .available, after: .available, step: .note("fleet broadcast b1 ignored"), seatsLeft: 4)
        #expect(view(panel, .available).notice == nil)
        var kept = Step()
        kept.inbox = [.save(InboxMessage(message: message, receivedAt: t))]
        panel.stepped(event, before: .available, after: .available, step: kept, seatsLeft: 4)
        #expect(view(panel, .available).notice == .newMessage)
    }
}

