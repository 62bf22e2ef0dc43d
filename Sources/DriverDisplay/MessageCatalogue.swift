#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import TaxiProtocol
import UnitConfig
import UnitCore

/// Every text the terminal shows, by key. A catalogue file gives each key a translation; `{name}`
/// placeholders are filled in when the screen is drawn.
public enum MessageKey: String, Sendable, CaseIterable {
    case stateOffDuty = "state.off_duty"
    case stateAvailable = "state.available"
    /// `{reason}`: one of the `pause.*` words.
    case statePaused = "state.paused"
    case stateOffered = "state.offered"
    case stateEnRoute = "state.en_route"
    case stateAtPickup = "state.at_pickup"
    case stateOnBoard = "state.on_board"

    case pauseBreak = "pause.break"
    case pauseRefuel = "pause.refuel"
    case pausePersonal = "pause.personal"
    case pauseOther = "pause.other"

    /// `{zone}`
    case statusZone = "status.zone"
    /// `{n}` seats left
    case statusSeats = "status.seats"
    case statusOnline = "status.online"
    /// `{n}` messages waiting
    case statusOffline = "status.offline"
    /// `{n}`: the short form on screens that have no row for the link.
    case statusOfflineShort = "status.offline_short"

    /// `{n}`: passengers on board, with room to spell it out.
    case jobPassengers = "job.passengers"
    /// `{n}`: passengers of an offer or a pickup, beside the distance: keep it short.
    case pickupPassengers = "pickup.passengers"
    /// `{time}`: a reservation's meeting time, on the offer.
    case offerMeeting = "offer.meeting"
    /// `{time}`, `{left}`: time to the meeting, `25m` or `3h`.
    case jobMeeting = "job.meeting"
    /// `{time}`: the meeting time has come.
    case jobMeetingNow = "job.meeting_now"
    case promptOnBoard = "prompt.on_board"

    /// Headings of the job's detail pages (the page number takes 4 columns on the right).
    case detailsPassenger = "details.passenger"
    case detailsDropoff = "details.dropoff"
    case detailsNote = "details.note"
    /// `{n}`: an added pickup's number, 2 for the first one added.
    case detailsPickup = "details.pickup"
    /// `{code}`: the passenger's pickup code.
    case detailsCode = "details.code"

    /// Headings of the shift's history pages (the page number takes up to 6 columns on the right):
    /// a ride's page, and the totals page with `{n}` the rides counted.
    case historyRide = "history.ride"
    case historyJobs = "history.jobs"
    /// A ride without a fare.
    case historyNoFare = "history.no_fare"
    /// `{time}`: the shift's driving time, `2h05`.
    case historyDriving = "history.driving"

    /// The pre-bookings page's heading (the page number takes up to 6 columns on the right), and
    /// what it says when the unit holds none.
    case preBookingTitle = "prebooking.title"
    case preBookingNone = "prebooking.none"

    case hintAccept = "hint.accept"
    case hintReject = "hint.reject"
    case hintArrived = "hint.arrived"
    case hintOnBoard = "hint.on_board"
    case hintNoShow = "hint.noshow"
    case hintClear = "hint.clear"

    case noticeCancelled = "notice.cancelled"
    case noticeUpdated = "notice.updated"
    case noticeSent = "notice.sent"
    /// A reply the store refused: kept in memory and retried.
    case noticeNotStored = "notice.not_stored"
    case noticeTimedOut = "notice.timeout"
    /// Line noise dropped keys on the serial terminal.
    case noticeInputDiscarded = "notice.input_discarded"
    /// The driver chose the bell, or blinking, for alerts.
    case noticeAlertBell = "notice.alert_bell"
    case noticeAlertBlink = "notice.alert_blink"
    /// The ignition went off while available: off duty?
    case noticeIgnitionOff = "notice.ignition_off"
    /// `{unit}`: the unit the driver logged in on, says the dispatcher.
    case noticeLoggedInElsewhere = "notice.logged_in_elsewhere"
    /// The meter was found hired while the taxi is free: no hail was made.
    case noticeMeterHired = "notice.meter_hired"
    /// The meter was found vacant with passengers on board: the ride was not cleared.
    case noticeMeterVacant = "notice.meter_vacant"
    /// `{time}`: an accepted reservation's meeting time.
    case noticeReminder = "notice.reminder"
    case noticeNewMessage = "notice.new_message"

    /// `{n}` unread messages, on the idle screens' last row beside the read hint.
    case inboxUnread = "inbox.unread"
    /// `{n}` unread messages, in the corner of job screens.
    case inboxBadge = "inbox.badge"
    /// An unread urgent message, on the last row beside the read hint.
    case inboxUrgent = "inbox.urgent"
    /// `{i}` of `{n}` messages kept, beside the time it came.
    case messageTitle = "message.title"
    case messageTitleUrgent = "message.title_urgent"
    /// `{n}` of `{of}`: the taxi's place in its zone's queue, beside the zone.
    case queuePosition = "queue.position"
    case hintRead = "hint.read"
    case hintNext = "hint.next"
    case hintMore = "hint.more"
    case hintReply = "hint.reply"
    case hintSend = "hint.send"

    /// Why an input was refused, one text per `DriverRefusal`, on the notice row.
    case refusalFinishJobFirst = "refusal.finish_job_first"
    case refusalNoOffer = "refusal.no_offer"
    case refusalNotOnTheWay = "refusal.not_on_the_way"
    /// `{seats}`: the taxi's seats.
    case refusalNotEnoughSeats = "refusal.not_enough_seats"
    case refusalNotAtPickup = "refusal.not_at_pickup"
    /// `{s}`: seconds left before a no-show may be recorded.
    case refusalNoShowTooEarly = "refusal.no_show_too_early"
    case refusalNoPosition = "refusal.no_position"
    case refusalTooFarForNoShow = "refusal.too_far_for_no_show"
    case refusalNoPassenger = "refusal.no_passenger"
    case refusalAlreadyPaused = "refusal.already_paused"
    case refusalPauseOnlyWhenAvailable = "refusal.pause_only_when_available"
    case refusalNotPaused = "refusal.not_paused"
    case refusalNoJob = "refusal.no_job"
    case refusalLoginRequired = "refusal.login_required"
    case refusalAlreadyLoggedIn = "refusal.already_logged_in"
    case refusalOffDutyFirst = "refusal.off_duty_first"
    case refusalWrongLogin = "refusal.wrong_login"
    /// `{s}`: seconds before another login may be tried.
    case refusalLoginLocked = "refusal.login_locked"
    case refusalNotLoggedIn = "refusal.not_logged_in"
    case refusalUnknownLanguage = "refusal.unknown_language"

    /// The login screen (docs/terminal.md, "Logging in"). `{id}`: the driver id as typed;
    /// `{pin}`: a `*` per digit.
    case loginTitle = "login.title"
    case loginDriver = "login.driver"
    case loginPIN = "login.pin"
    case loginHint = "login.hint"
    case refusalNoMessages = "refusal.no_messages"
    case refusalNoReplies = "refusal.no_replies"
    /// `{count}`: the replies offered (up to 9).
    case refusalNoSuchReply = "refusal.no_such_reply"
    case refusalNothingToSend = "refusal.nothing_to_send"
    case refusalAnswerOfferFirst = "refusal.answer_offer_first"
    case refusalDropAlreadyAsked = "refusal.drop_already_asked"
    case refusalDropNotOnBoard = "refusal.drop_not_on_board"
    case refusalNoJobToDrop = "refusal.no_job_to_drop"

    /// The driver's cancel request waits for the dispatcher's answer (the job screen's last row).
    case jobDropAsked = "job.drop_asked"
    /// The dispatcher refused the driver's cancel request: the job goes on.
    case noticeCancelRefused = "notice.cancel_refused"
    /// A pre-booking offered beside the job in hand: the offer keys answer it.
    case noticePreBookingOffer = "notice.prebooking_offer"
    /// The next job offered while on board: the offer keys answer it.
    case noticeNextJobOffer = "notice.next_job_offer"
    /// A pre-booking is due while the driver is busy: it starts when they are free.
    case noticeReservationDue = "notice.reservation_due"
    /// Why the driver asked to drop the job, shown with the cancellation that confirms it.
    case cancelReasonPassengerUnreachable = "cancel_reason.passenger_unreachable"
    case cancelReasonVehicleProblem = "cancel_reason.vehicle_problem"
    case cancelReasonOther = "cancel_reason.other"
    case refusalPaymentRequired = "refusal.payment_required"
    case refusalUnknownPayment = "refusal.unknown_payment"
    case refusalFareOutOfRange = "refusal.fare_out_of_range"
    case refusalShiftAlreadyStarted = "refusal.shift_already_started"
    case refusalNoShift = "refusal.no_shift"

    /// A `[shift]` limit near (`{min}`: minutes left) or reached, on the notice row.
    case shiftDrivingSoon = "shift.driving_soon"
    case shiftDrivingReached = "shift.driving_reached"
    case shiftLengthSoon = "shift.length_soon"
    case shiftLengthReached = "shift.length_reached"

    /// The fare and payment screen at clear (docs/terminal.md, "Fare and payment"): the fare being
    /// typed, then one key per payment method.
    case fareTitle = "fare.title"
    case fareHint = "fare.hint"
    /// Where the fare shown came from, beside it.
    case fareQuoted = "fare.quoted"
    case fareTyped = "fare.typed"
    case fareMeter = "fare.meter"
    case fareNone = "fare.none"
    case paymentTitle = "payment.title"
    /// The shipped payment methods' names; a method configured under another name shows that name.
    case paymentCash = "payment.cash"
    case paymentCard = "payment.card"
    case paymentAccount = "payment.account"
    /// The clear key on the payment screen: clear without a payment.
    case hintSkip = "hint.skip"

    /// Between the integer and the fraction of a distance: `.` or `,`.
    case decimalSeparator = "format.decimal_separator"

    /// The text for a refusal, and the values it may use.
    public static func refusal(_ refusal: DriverRefusal) -> (key: MessageKey, values: [String: String]) {
        switch refusal {
        case .finishJobFirst: (.refusalFinishJobFirst, [:])
        case .noOffer: (.refusalNoOffer, [:])
        case .notOnTheWay: (.refusalNotOnTheWay, [:])
        case .notEnoughSeats(let seats): (.refusalNotEnoughSeats, ["seats": "\(seats)"])
        case .notAtPickup: (.refusalNotAtPickup, [:])
        case .noShowTooEarly(let secondsLeft): (.refusalNoShowTooEarly, ["s": "\(secondsLeft)"])
        case .noPosition: (.refusalNoPosition, [:])
        case .tooFarForNoShow: (.refusalTooFarForNoShow, [:])
        case .noPassenger: (.refusalNoPassenger, [:])
        case .alreadyPaused: (.refusalAlreadyPaused, [:])
        case .pauseOnlyWhenAvailable: (.refusalPauseOnlyWhenAvailable, [:])
        case .notPaused: (.refusalNotPaused, [:])
        case .noJob: (.refusalNoJob, [:])
        case .loginRequired: (.refusalLoginRequired, [:])
        case .alreadyLoggedIn: (.refusalAlreadyLoggedIn, [:])
        case .offDutyFirst: (.refusalOffDutyFirst, [:])
        case .wrongLogin: (.refusalWrongLogin, [:])
        case .loginLocked(let secondsLeft): (.refusalLoginLocked, ["s": "\(secondsLeft)"])
        case .notLoggedIn: (.refusalNotLoggedIn, [:])
        case .unknownLanguage: (.refusalUnknownLanguage, [:])
        case .noMessages: (.refusalNoMessages, [:])
        case .noReplies: (.refusalNoReplies, [:])
        case .noSuchReply(let count): (.refusalNoSuchReply, ["count": "\(count)"])
        case .nothingToSend: (.refusalNothingToSend, [:])
        case .answerOfferFirst: (.refusalAnswerOfferFirst, [:])
        case .paymentRequired: (.refusalPaymentRequired, [:])
        case .unknownPayment: (.refusalUnknownPayment, [:])
        case .fareOutOfRange: (.refusalFareOutOfRange, [:])
        case .dropAlreadyAsked: (.refusalDropAlreadyAsked, [:])
        case .dropNotOnBoard: (.refusalDropNotOnBoard, [:])
        case .noJobToDrop: (.refusalNoJobToDrop, [:])
        case .shiftAlreadyStarted: (.refusalShiftAlreadyStarted, [:])
        case .noShift: (.refusalNoShift, [:])
        }
    }

    /// The warning for a `[shift]` limit, and the values it may use.
    public static func shiftWarning(_ warning: ShiftWarning) -> (key: MessageKey, values: [String: String]) {
        let key: MessageKey = switch (warning.limit, warning.reached) {
        case (.continuousDriving, false): .shiftDrivingSoon
        case (.continuousDriving, true): .shiftDrivingReached
        case (.shiftLength, false): .shiftLengthSoon
        case (.shiftLength, true): .shiftLengthReached
        }
        return (key, ["min": "\(warning.minutesLeft)"])
    }

    /// The text naming a cancel request's reason.
    public static func cancelReason(_ reason: CancelReason) -> MessageKey {
        switch reason {
        case .passengerUnreachable: .cancelReasonPassengerUnreachable
        case .vehicleProblem: .cancelReasonVehicleProblem
        case .other: .cancelReasonOther
        }
    }
}

/// One language's texts, loaded from a TOML file (`share/taxiunitd/lang/<code>.toml`). Adding a
/// language is adding a file; the code never lists languages.
public struct MessageCatalogue: Sendable, Equatable {
    public let language: String
    private let texts: [MessageKey: String]
    /// Texts the code does not know (a typo, or a catalogue for a newer version), for `--check`.
    public let unknownKeys: [String]

    /// Missing keys fall back to `fallback`'s text, then to the key itself, so a short catalogue
    /// still draws a usable screen; `missingKeys` lists them for `--check`.
    public init(language: String, texts: [MessageKey: String], fallback: MessageCatalogue? = nil, unknownKeys: [String] = []) {
        self.language = language
        var merged = fallback?.texts ?? [:]
        merged.merge(texts) { $1 }
        self.texts = merged
        self.missingKeys = MessageKey.allCases.filter { texts[$0] == nil }
        self.unknownKeys = unknownKeys
    }

    public let missingKeys: [MessageKey]

    public func text(_ key: MessageKey, _ values: [String: String] = [:]) -> String {
        var text = texts[key] ?? key.rawValue
        for (name, value) in values {
            text = text.replacing("{\(name)}", with: value)
        }
        return text
    }

    /// Why an input was refused, in this language.
    public func text(_ refusal: DriverRefusal) -> String {
        let refused = MessageKey.refusal(refusal)
        return text(refused.key, refused.values)
    }

    /// Parses a catalogue file's text: TOML tables of strings, `[state] available = "AVAILABLE"`.
    public static func parse(_ toml: String, language: String, fallback: MessageCatalogue? = nil) throws(ConfigError) -> MessageCatalogue {
        guard case .table(let root) = try ConfigValue.parseTOML(toml) else {
            throw ConfigError(problems: ["a catalogue must be a table"])
        }
        var texts: [MessageKey: String] = [:]
        var unknown: [String] = []
        var problems: [String] = []
        func walk(_ table: [String: ConfigValue], prefix: String) {
            for (name, value) in table {
                let path = prefix.isEmpty ? name : prefix + "." + name
                switch value {
                case .table(let inner): walk(inner, prefix: path)
                case .string(let text):
                    if let key = MessageKey(rawValue: path) { texts[key] = text } else { unknown.append(path) }
                default: problems.append("\(path) must be a string")
                }
            }
        }
        walk(root, prefix: "")
        guard problems.isEmpty else { throw ConfigError(problems: problems.sorted()) }
        return MessageCatalogue(language: language, texts: texts, fallback: fallback, unknownKeys: unknown.sorted())
    }

    /// Loads `<directory>/<language>.toml`, with English from the same directory for missing keys.
    public static func load(language: String, directory: String) throws(ConfigError) -> MessageCatalogue {
        let english = language == "en" ? nil : try? load(file: directory + "/en.toml", language: "en", fallback: nil)
        return try load(file: directory + "/\(language).toml", language: language, fallback: english)
    }

    static func load(file: String, language: String, fallback: MessageCatalogue?) throws(ConfigError) -> MessageCatalogue {
        let text: String
        do {
            text = try String(contentsOfFile: file, encoding: .utf8)
        } catch {
            throw ConfigError(problems: ["cannot read catalogue \(file): \(error)"])
        }
        do {
            return try parse(text, language: language, fallback: fallback)
        } catch {
            throw ConfigError(problems: error.problems.map { "\(file): \($0)" })
        }
    }
}
