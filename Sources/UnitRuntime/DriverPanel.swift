import DriverDisplay
import TaxiProtocol
import UnitCore

/// What the driver's screen shows, derived from the engine's state after each step. The engine
/// performs this as an observer: the core knows nothing of screens.
struct DriverPanel {
    private(set) var notice: DriverView.Notice?
    private(set) var noticeDetail: String?
    private(set) var noticeSerial = 0
    /// Set by the dispatcher's `sos/ack`, cleared by the driver's next input.
    private(set) var sosAcknowledged = false
    /// The job detail page shown instead of the job's screen; nil: the job's screen.
    private(set) var page: Int?
    /// The shift's history page shown instead of the job's screen; nil: not shown.
    private(set) var historyPage: Int?
    /// The pre-booking shown instead of the job's screen; nil: not shown.
    private(set) var preBookingPage: Int?

    /// Notes what one step means for the driver: `event` was handled in `before` and produced `step`.
    /// `seatsLeft`: the free seats after the step; `stored`: its messages are in the store.
    /// `historyPages`: the history's pages when `event` is the history key; `preBookings`: how many
    /// the unit holds when it is the pre-bookings key.
    mutating func stepped(
        _ event: UnitEvent, before: DriverState, after: DriverState, step: Step, seatsLeft: Int, stored: Bool = true, historyPages: Int = 0,
        preBookings: Int = 0
    ) {
        // Pages belong to one job in one state: anything else starts from the job's screen again.
        if before.name != after.name || before.job?.id != after.job?.id {
            page = nil
            historyPage = nil
            preBookingPage = nil
        }
        // Mostly with a fix; a notice the driver's own input raises below replaces it.
        if let warning = step.shiftWarnings.last { raise(.shiftWarning(warning)) }
        switch event {
        case .driver(let input, _):
            sosAcknowledged = false
            // SOS says nothing on the screen, whatever the state machine tells the log.
            if case .sos = input { return }
            if case .history = input {
                // The next page, and after the totals the job's screen again.
                let next = (historyPage ?? -1) + 1
                historyPage = next < historyPages ? next : nil
                page = nil
                preBookingPage = nil
                notice = nil
                noticeDetail = nil
                return
            }
            historyPage = nil
            if case .preBookings = input {
                // The next one, and after the last (or the page saying there are none) the job's screen again.
                let next = (preBookingPage ?? -1) + 1
                preBookingPage = next < max(1, preBookings) ? next : nil
                page = nil
                notice = nil
                noticeDetail = nil
                return
            }
            preBookingPage = nil
            if case .details = input, let job = after.job, step.refusals.isEmpty {
                // The next page, and after the last one the job's screen again.
                let count = DriverView.detailPages(of: job, distance: { _ in nil }).count
                let next = (page ?? -1) + 1
                page = next < count ? next : nil
                // The driver is reading: a notice would hide the page's last row.
                notice = nil
                noticeDetail = nil
                return
            }
            page = nil
            if !step.replies.isEmpty || step.messages.contains(where: \.isAnswer) {
                raise(stored ? .sent : .notStored)
            } else if let refusal = step.refusals.first {
                raise(.refused(refusal))
            } else if case .seats = input {
                raise(.freeSeats(seatsLeft))
            }
        case .inbound(.sosAck, _):
            sosAcknowledged = true
        case .inbound(.cancel(let cancel), _):
            if let answer = step.cancelAnswer, answer.confirmed {
                raise(.cancelConfirmed(answer.request.reason))
            } else if before.job != nil, after.job == nil {
                raise(.cancelled, detail: cancel.reason)
            }
        case .inbound(.update(let update), _):
            if let answer = step.cancelAnswer, !answer.confirmed {
                // The dispatcher's note says why, when it gave one.
                raise(.cancelRefused, detail: update.note)
            } else if before.job != after.job, after.job != nil {
                // The added pickup's address is what the driver must act on; else the note.
                raise(.updated, detail: update.addPickup.map { "+ " + $0.place.label } ?? update.note)
            } else if let held = step.heldJobChanged {
                // A held job changed (a pre-booking, the next job): its `shown` answer needs the
                // driver shown which one; the pre-bookings page has the rest.
                raise(.updated, detail: ([held] + [update.addPickup.map { "+ " + $0.place.label } ?? update.note].compactMap { $0 }).joined(separator: " "))
            }
        case .timerFired(.heartbeat, _), .timerFired(.reminder, _), .timerFired(.offerDeadline, _), .resumed:
            if step.reminded, let meeting = after.job?.meetingTime {
                raise(.reminder(meetingTime: meeting))
            } else if step.replies.contains(where: { $0.reply == .timeout }) {
                raise(.timedOut)
            }
        case .inbound(.message, _), .broadcast:
            if !step.inbox.isEmpty { raise(.newMessage) }
        case .ignition(on: false, _):
            if step.suggestsOffDuty { raise(.ignitionOff) }
        case .ignition(on: true, _):
            // The question is moot once the engine runs again.
            if notice == .ignitionOff { clearNotice() }
        case .timerFired(.reservationWindow, _):
            // The window opened while the driver is busy: the pre-booking waits for them.
            if step.reminded { raise(.reservationDue) }
        case .timerFired(.ignitionOffDuty, _):
            break
        case .jobDropped:
            // The job is gone from the unit as if cancelled; the row holds 20 characters.
            raise(.cancelled, detail: "Crash: call dispatch")
        case .inbound(.offer, _):
            // Beside the job in hand: the job's screen stays, the notice rings with the pickup above it.
            if let beside = step.offeredBeside { raise(.offerBeside(preBooking: beside.preBooking), detail: beside.job.pickup.label) }
        case .meterFound:
            if let hired = step.meterDisagreement { raise(.meterDisagrees(hired: hired)) }
        case .gps, .inbound(.queue, _), .malformed, .meterFare, .meter:
            break
        }
    }

    /// A login, logout or preference was refused (`DriverSession`: outside the state machine).
    mutating func sessionRefused(_ refusal: DriverRefusal) {
        raise(.refused(refusal))
    }

    /// The driver chose how alerts get attention; nothing else shows it until the next alert.
    mutating func alertStyleChosen(_ style: AlertStyle) {
        raise(.alertStyle(style))
    }

    /// The dispatcher says the driver logged in on `unit`.
    mutating func loggedInElsewhere(unit: String) {
        raise(.loggedInElsewhere(unit: unit))
    }

    /// The serial terminal dropped keys with a burst of line noise.
    mutating func inputDiscarded() {
        raise(.inputDiscarded)
    }

    private mutating func clearNotice() {
        notice = nil
        noticeDetail = nil
    }

    private mutating func raise(_ notice: DriverView.Notice, detail: String? = nil) {
        self.notice = notice
        noticeDetail = detail
        noticeSerial += 1
    }

    /// `distance`: metres from the taxi's last fix, nil without one. `unitClockAhead`: the unit
    /// clock minus the system clock, which the terminal counts down on.
    /// `login`: the id and PIN being typed, shown instead of the off-duty screen.
    func view(
        state: DriverState, seatsLeft: Int, zone: String?, online: Bool, waiting: Int, unitClockAhead: Duration,
        login: LoginEntry? = nil, fare: FareEntry? = nil, paymentRequired: Bool = false, distance: (Place) -> Double?
    ) -> DriverView {
        func pickup(_ job: Job) -> DriverView.Pickup {
            DriverView.Pickup(
                address: job.pickup.label, distanceM: distance(job.pickup), passengers: job.passengers, meetingTime: job.meetingTime,
                passengerName: job.passenger?.name, pickupCode: job.passenger?.pickupCode, stops: job.addedPickups.count)
        }
        let mode: DriverView.Mode
        switch state {
        case .offDuty: mode = .offDuty
        case .available: mode = .available
        case .paused(let reason): mode = .paused(reason: reason.rawValue)
        case .offered(let offer): mode = .offered(pickup(offer.job), deadline: offer.deadline - unitClockAhead)
        case .enRoute(let job): mode = .enRoute(pickup(job))
        case .atPickup(let job, _): mode = .atPickup(pickup(job))
        case .onBoard(let job, _):
            mode = .onBoard(passengers: job.passengers, dropoff: job.dropoff.map { DriverView.Stop(address: $0.label, distanceM: distance($0)) })
        }
        let fareShown = fare.map { entry in
            DriverView.Mode.fare(DriverView.FareScreen(
                fare: entry.fare, currency: entry.currency, typing: !entry.choosingPayment, payments: entry.payments, skippable: !paymentRequired))
        }
        let shown = login.map { DriverView.Mode.login(driver: $0.driver, pinLength: $0.pin.count, onPIN: $0.onPIN) } ?? fareShown ?? mode
        return DriverView(
            mode: shown, zone: zone, seatsLeft: seatsLeft, online: online, waiting: waiting, notice: notice, noticeDetail: noticeDetail,
            noticeSerial: noticeSerial, sosAcknowledged: sosAcknowledged,
            details: state.job.map { DriverView.detailPages(of: $0, distance: distance) } ?? [], page: page)
    }
}
