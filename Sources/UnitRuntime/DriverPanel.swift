import DriverDisplay
import UnitCore

/// What the driver's screen shows, derived from the engine's state after each step. The engine
/// performs this as an observer: the core knows nothing of screens.
struct DriverPanel {
    private(set) var notice: DriverView.Notice?
    private(set) var noticeSerial = 0
    /// Set by the dispatcher's `sos/ack`, cleared by the driver's next input.
    private(set) var sosAcknowledged = false

    /// Notes what one step means for the driver: `event` was handled in `before` and produced `step`.
    mutating func stepped(_ event: UnitEvent, before: DriverState, after: DriverState, step: Step) {
        switch event {
        case .driver(let input, _):
            sosAcknowledged = false
            // SOS says nothing on the screen, whatever the state machine tells the log.
            if case .sos = input { return }
            if !step.replies.isEmpty || step.messages.contains(where: { if case .messageReply = $0 { true } else { false } }) {
                raise(.sent)
            } else if let refusal = step.refusals.first {
                raise(.refused(refusal))
            }
        case .inbound(.sosAck, _):
            sosAcknowledged = true
        case .inbound(.cancel, _):
            if before.job != nil, after.job == nil { raise(.cancelled) }
        case .inbound(.update, _):
            if before.job != after.job, after.job != nil { raise(.updated) }
        case .timerFired, .resumed:
            if step.replies.contains(where: { $0.reply == .timeout }) {
                raise(.timedOut)
            }
        case .inbound(.message, _):
            if !step.inbox.isEmpty { raise(.newMessage) }
        case .gps, .inbound(.offer, _), .inbound(.queue, _), .malformed:
            break
        }
    }

    private mutating func raise(_ notice: DriverView.Notice) {
        self.notice = notice
        noticeSerial += 1
    }

    /// `distance`: metres from the taxi's last fix, nil without one. `unitClockAheadMs`: the unit
    /// clock minus the system clock, which the terminal counts down on.
    func view(
        state: DriverState, seatsLeft: Int, zone: String?, online: Bool, waiting: Int, unitClockAheadMs: Int64,
        distance: (Place) -> Double?
    ) -> DriverView {
        func pickup(_ job: Job) -> DriverView.Pickup {
            DriverView.Pickup(
                address: job.pickup.address ?? "\(job.pickup.lat), \(job.pickup.lon)", distanceM: distance(job.pickup),
                passengers: job.passengers, meetingTime: job.meetingTime)
        }
        let mode: DriverView.Mode
        switch state {
        case .offDuty: mode = .offDuty
        case .available: mode = .available
        case .paused(let reason): mode = .paused(reason: reason.rawValue)
        case .offered(let offer): mode = .offered(pickup(offer.job), deadline: offer.deadline.saturatingSubtract(unitClockAheadMs))
        case .enRoute(let job): mode = .enRoute(pickup(job))
        case .atPickup(let job, _): mode = .atPickup(pickup(job))
        case .onBoard(let job, _): mode = .onBoard(passengers: job.passengers)
        }
        return DriverView(
            mode: mode, zone: zone, seatsLeft: seatsLeft, online: online, waiting: waiting, notice: notice,
            noticeSerial: noticeSerial, sosAcknowledged: sosAcknowledged)
    }
}
