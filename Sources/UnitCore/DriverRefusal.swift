/// Why the state machine refused a driver input. The core gives the reason, not the words: the
/// terminal shows it from the driver's language catalogue (`refusal.*`); logs and
/// `taxiunitctl press` use `description`, in English.
public enum DriverRefusal: Sendable, Hashable, CustomStringConvertible {
    /// Going off duty with a job under way.
    case finishJobFirst
    /// Accept or reject with no offer pending.
    case noOffer
    /// Arrived while not on the way to a pickup.
    case notOnTheWay
    /// More passengers on board than the taxi has seats.
    case notEnoughSeats(seats: Int)
    /// Passengers on board or no-show away from a pickup.
    case notAtPickup
    /// No-show before the configured wait is over.
    case noShowTooEarly(secondsLeft: Int)
    /// No-show without a fix to show the taxi is at the pickup.
    case noPosition
    /// No-show farther from the pickup than the configured radius.
    case tooFarForNoShow
    /// Clear with nobody on board.
    case noPassenger
    case alreadyPaused
    case pauseOnlyWhenAvailable
    case notPaused
    /// Job details asked for with no job.
    case noJob
    /// `[driver] require_login`: on duty only with a driver logged in.
    case loginRequired
    /// Login while a driver is logged in.
    case alreadyLoggedIn
    /// Login or logout while on duty: a shift starts and ends off duty.
    case offDutyFirst
    /// Unknown driver or wrong PIN (the same refusal for both).
    case wrongLogin
    /// Too many wrong logins: none are tried for this long.
    case loginLocked(secondsLeft: Int)
    /// Logout or a preference with nobody logged in.
    case notLoggedIn
    /// A language with no catalogue installed.
    case unknownLanguage
    /// Read with no message kept.
    case noMessages
    /// Reply to a message that offers no canned answers (or no canned messages configured).
    case noReplies
    /// `reply N` beyond the `count` answers offered.
    case noSuchReply(count: Int)
    /// Send with no reply or canned message chosen.
    case nothingToSend
    /// A message key while an offer waits for its answer.
    case answerOfferFirst
    /// A cancel request while the one for the same job waits for the dispatcher's answer.
    case dropAlreadyAsked
    /// A cancel request with passengers on board: the ride is ended with clear instead.
    case dropNotOnBoard
    /// A cancel request with no job under way (an offer is answered with reject).
    case noJobToDrop
    /// Clear without a payment under `[job] payment_required`.
    case paymentRequired
    /// A payment that is not one of `[job] payments`.
    case unknownPayment
    /// A typed fare beyond `FareLimits.amount`.
    case fareOutOfRange
    /// `shift start` with a shift open.
    case shiftAlreadyStarted
    /// `shift end` without a shift open.
    case noShift

    public var description: String {
        switch self {
        case .finishJobFirst: "Finish the job first"
        case .noOffer: "No offer to answer"
        case .notOnTheWay: "Not on the way to a pickup"
        case .notEnoughSeats(let seats): "Only \(seats) seats"
        case .notAtPickup: "Not at a pickup"
        case .noShowTooEarly(let secondsLeft): "Wait \(secondsLeft) s more before a no-show"
        case .noPosition: "No position to show you are at the pickup"
        case .tooFarForNoShow: "Too far from the pickup for a no-show"
        case .noPassenger: "No passenger on board"
        case .alreadyPaused: "Already paused"
        case .pauseOnlyWhenAvailable: "Pause only when available"
        case .notPaused: "Not paused"
        case .noJob: "No job to show"
        case .loginRequired: "Log in first"
        case .alreadyLoggedIn: "A driver is logged in; log out first"
        case .offDutyFirst: "Go off duty first"
        case .wrongLogin: "Wrong driver or PIN"
        case .loginLocked(let secondsLeft): "Too many wrong logins; wait \(secondsLeft) s"
        case .notLoggedIn: "Nobody logged in"
        case .unknownLanguage: "No such language installed"
        case .noMessages: "No messages"
        case .noReplies: "No replies to choose from"
        case .noSuchReply(let count): "Choose a reply from 1 to \(count)"
        case .nothingToSend: "Choose a reply first"
        case .answerOfferFirst: "Answer the offer first"
        case .dropAlreadyAsked: "Drop already asked; waiting for dispatch"
        case .dropNotOnBoard: "Passengers on board: clear the ride instead"
        case .noJobToDrop: "No job to drop"
        case .paymentRequired: "Pick the payment first"
        case .unknownPayment: "No such payment method"
        case .fareOutOfRange: "Fare too large"
        case .shiftAlreadyStarted: "Shift already started"
        case .noShift: "No shift started"
        }
    }
}
