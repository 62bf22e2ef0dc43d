import TaxiProtocol
import UnitCore

/// What the driver's screen shows, as plain values: the engine builds it from the state machine
/// after every event, and the terminal draws it. Times are unit clock ms since the Unix epoch.
public struct DriverView: Sendable, Equatable {
    public struct Pickup: Sendable, Equatable {
        public var address: String
        /// From the last fix to the pickup; nil without a fix.
        public var distanceM: Double?
        public var passengers: Int
        /// A reservation's meeting time.
        public var meetingTime: UnitTime?
        /// Who to pick up, for the driver to find them: the booking's name and pickup code.
        public var passengerName: String?
        public var pickupCode: String?
        /// Further pickups of a shared ride, after this one.
        public var stops: Int

        public init(
            address: String, distanceM: Double?, passengers: Int, meetingTime: UnitTime?, passengerName: String? = nil, pickupCode: String? = nil,
            stops: Int = 0
        ) {
            self.address = address
            self.distanceM = distanceM
            self.passengers = passengers
            self.meetingTime = meetingTime
            self.passengerName = passengerName
            self.pickupCode = pickupCode
            self.stops = stops
        }
    }

    /// A place the job goes to other than its pickup.
    public struct Stop: Sendable, Equatable {
        public var address: String
        /// From the last fix; nil without a fix.
        public var distanceM: Double?

        public init(address: String, distanceM: Double?) {
            self.address = address
            self.distanceM = distanceM
        }
    }

    /// One page of the job's details, paged through with the details key.
    public enum DetailPage: Sendable, Equatable {
        case passenger(name: String?, phone: String?, pickupCode: String?)
        case dropoff(Stop)
        case note(String)
        /// A shared ride's added pickup; `number` 2, 3, … in the order they were added.
        case pickup(number: Int, Stop)
    }

    /// The pages for `job`, in the order shown: passenger, added pickups in order, drop-off, note.
    /// `distance`: metres from the last fix, nil without one.
    public static func detailPages(of job: Job, distance: (Place) -> Double?) -> [DetailPage] {
        func stop(_ place: Place) -> Stop { Stop(address: place.address ?? "\(place.lat), \(place.lon)", distanceM: distance(place)) }
        var pages: [DetailPage] = []
        if let passenger = job.passenger, passenger.name != nil || passenger.phone != nil || passenger.pickupCode != nil {
            pages.append(.passenger(name: passenger.name, phone: passenger.phone, pickupCode: passenger.pickupCode))
        }
        for (index, place) in job.addedPickups.enumerated() { pages.append(.pickup(number: index + 2, stop(place))) }
        if let dropoff = job.dropoff { pages.append(.dropoff(stop(dropoff))) }
        if let note = job.note { pages.append(.note(note)) }
        return pages
    }

    /// A finished ride of the shift on the history pages.
    public struct HistoryRide: Sendable, Equatable {
        /// When the passengers got out; unit clock.
        public var dropTime: UnitTime
        /// What names the ride for the driver: its pickup (`pickupLabel`).
        public var label: String
        public var fare: Fare?
        public var payment: String?

        public init(dropTime: UnitTime, label: String, fare: Fare?, payment: String?) {
            self.dropTime = dropTime
            self.label = label
            self.fare = fare
            self.payment = payment
        }

        /// The pickup as the driver knows it: the job's address, else where the passengers got in
        /// (`46.94800,7.43950`), else, with neither (a street hail before the first fix), the job's id.
        public static func pickupLabel(address: String?, position: Coordinate?, job: String) -> String {
            if let address { return address }
            guard let position else { return job }
            return "\(degrees(position.lat)),\(degrees(position.lon))"
        }

        /// Five decimals, about a metre: a coordinate pair fits the screen's 20 columns.
        static func degrees(_ value: Double) -> String {
            guard value.isFinite, abs(value) <= 180 else { return "?" }
            let units = Int64((abs(value) * 100_000).rounded())
            let fraction = String(units % 100_000)
            return (value < 0 && units > 0 ? "-" : "") + "\(units / 100_000)." + String(repeating: "0", count: 5 - fraction.count) + fraction
        }
    }

    /// The fares of one currency and payment (nil: not said) summed over the shift's rides.
    public struct HistoryTotal: Sendable, Equatable {
        public var currency: String
        public var payment: String?
        public var amount: Int64

        public init(currency: String, payment: String?, amount: Int64) {
            self.currency = currency
            self.payment = payment
            self.amount = amount
        }
    }

    /// The shift's history: a page per ride, newest first, then the totals over as many pages as
    /// the sums need.
    public struct History: Sendable, Equatable {
        /// The rides that have a page, newest first.
        public private(set) var rides: [HistoryRide]
        /// Every ride of the shift, those without a page of their own included.
        public private(set) var rideCount: Int
        /// Fares summed per currency and payment, in the order the shift first took them.
        public private(set) var totals: [HistoryTotal]
        /// The shift's driving time; nil without an open shift.
        public var driving: Duration?

        /// `rides`: newest first, each with its page.
        public init(rides: [HistoryRide], driving: Duration?) {
            self.rides = []
            rideCount = 0
            totals = []
            self.driving = driving
            for ride in rides.reversed() { add(ride, pagesKept: rides.count) }
        }

        /// A ride that has just ended: it gets the first page (the oldest beyond `pagesKept` loses
        /// its own) and counts in the totals.
        public mutating func add(_ ride: HistoryRide, pagesKept: Int) {
            rides.insert(ride, at: 0)
            if rides.count > max(0, pagesKept) { rides.removeLast(rides.count - max(0, pagesKept)) }
            rideCount = rideCount.saturatingAdd(1)
            guard let fare = ride.fare else { return }
            if let index = totals.firstIndex(where: { $0.currency == fare.currency && $0.payment == ride.payment }) {
                let (sum, overflow) = totals[index].amount.addingReportingOverflow(fare.amount)
                totals[index].amount = overflow ? .max : sum
            } else {
                totals.append(HistoryTotal(currency: fare.currency, payment: ride.payment, amount: fare.amount))
            }
        }

        /// The totals on a screen of `rows` rows: the first page's heading and driving time leave
        /// `rows - 2` for the sums, every further page's heading `rows - 1`.
        public func totalsPages(rows: Int) -> [ArraySlice<HistoryTotal>] {
            let first = max(1, rows - 2), further = max(1, rows - 1)
            var pages = [totals.prefix(first)]
            var rest = totals.dropFirst(first)
            while !rest.isEmpty {
                pages.append(rest.prefix(further))
                rest = rest.dropFirst(further)
            }
            return pages
        }

        public func pageCount(rows: Int) -> Int { rides.count + totalsPages(rows: rows).count }
    }

    /// An accepted pre-booking, a page of its own on the pre-bookings page.
    public struct PreBooking: Sendable, Equatable {
        public var job: String
        /// Unit clock.
        public var meetingTime: UnitTime
        /// The pickup's address, else its coordinates.
        public var pickup: String
        public var passengers: Int

        public init(job: String, meetingTime: UnitTime, pickup: String, passengers: Int) {
            self.job = job
            self.meetingTime = meetingTime
            self.pickup = pickup
            self.passengers = passengers
        }

        /// What the core holds of a pre-booking, as the page shows it.
        public init(_ reservation: Reservation) {
            self.init(
                job: reservation.job.id, meetingTime: reservation.meetingTime, pickup: reservation.job.pickup.label,
                passengers: reservation.job.passengers)
        }
    }

    public enum Mode: Sendable, Equatable {
        case offDuty
        case available
        /// `reason`: break, refuel, personal or other.
        case paused(reason: String)
        /// Waiting for accept or reject until `deadline` (ms on the system clock, which the
        /// terminal counts down on).
        case offered(Pickup, deadline: UnitTime)
        case enRoute(Pickup)
        /// Arrived: the driver is asked how many passengers boarded.
        case atPickup(Pickup)
        /// `dropoff`: where the ride goes, when the booking said.
        case onBoard(passengers: Int, dropoff: Stop? = nil)
        /// A driver types the id, then the PIN (shown as one `*` per digit).
        case login(driver: String, pinLength: Int, onPIN: Bool)
        /// On board, after the clear key: the fare, then the payment pick.
        case fare(FareScreen)
    }

    /// The fare and payment screen (`UnitCore.FareEntry` as the terminal shows it).
    public struct FareScreen: Sendable, Equatable {
        /// The fare shown: the one typed so far (while typing, nil before the first digit), else the job's.
        public var fare: Fare?
        /// The currency a typed fare is in.
        public var currency: String
        /// The driver is typing the fare; otherwise picking the payment.
        public var typing: Bool
        /// `[job] payments`, the first on digit key 1.
        public var payments: [String]
        /// The clear key skips the pick (`[job] payment_required` is off).
        public var skippable: Bool

        public init(fare: Fare?, currency: String, typing: Bool, payments: [String], skippable: Bool) {
            self.fare = fare
            self.currency = currency
            self.typing = typing
            self.payments = payments
            self.skippable = skippable
        }
    }

    /// Something the driver must notice, shown on the bottom row for a few seconds.
    public enum Notice: Sendable, Equatable {
        case cancelled
        case updated
        /// A reply is stored and will reach the dispatcher.
        case sent
        /// A reply could not be stored (the store cannot be written): it waits in memory and goes to
        /// the dispatcher when the broker is reachable, but a restart loses it.
        case notStored
        /// The offer was not answered in time: refused.
        case timedOut
        /// The input made no sense now, for this reason (shown in the driver's language).
        case refused(DriverRefusal)
        /// An accepted reservation's meeting time is near.
        case reminder(meetingTime: UnitTime)
        /// The driver set the free seats: the count now, on every screen.
        case freeSeats(Int)
        /// A message from the dispatcher arrived (MessageScreens.swift).
        case newMessage
        /// Line noise on the serial terminal dropped keys: the driver types them again.
        case inputDiscarded
        /// The driver chose how alerts get attention.
        case alertStyle(AlertStyle)
        /// The ignition went off while available: the driver may go off duty.
        case ignitionOff
        /// The dispatcher confirmed the driver's cancel request: the job is cancelled, for this reason.
        case cancelConfirmed(CancelReason)
        /// The dispatcher refused the driver's cancel request: the job goes on.
        case cancelRefused
        /// The dispatcher says the driver logged in on this other unit: logged out here, or (on
        /// duty) to log out once off duty.
        case loggedInElsewhere(unit: String)
        /// An offer beside the job in hand (a pre-booking, or the next job), answered with the offer keys.
        case offerBeside(preBooking: Bool)
        /// A pre-booking's window opened while the driver is busy: it starts when they are free.
        case reservationDue
        /// A `[shift]` limit is near or reached.
        case shiftWarning(ShiftWarning)
        /// The meter was found hired while the taxi is free (`hired`), or vacant with passengers
        /// on board, and the job was left as it is.
        case meterDisagrees(hired: Bool)

        /// Cancellations, shared-ride updates and reminders ring and blink; the rest is information.
        public var alerts: Bool {
            switch self {
            case .cancelled, .updated, .reminder, .newMessage, .notStored, .ignitionOff, .cancelConfirmed, .cancelRefused, .loggedInElsewhere, .offerBeside, .reservationDue, .shiftWarning,
                .meterDisagrees: true
            case .sent, .timedOut, .refused, .freeSeats, .inputDiscarded, .alertStyle: false
            }
        }
    }

    public var mode: Mode
    public var zone: String?
    public var seatsLeft: Int
    public var online: Bool
    /// Messages stored and not yet acknowledged by the broker.
    public var waiting: Int
    public var notice: Notice?
    /// The dispatcher's words with the notice (a cancel's reason, an update's note or added
    /// pickup), shown on the row above it.
    public var noticeDetail: String?
    /// Changes whenever a notice is raised, so the same notice twice alerts twice.
    public var noticeSerial: Int
    /// The dispatcher acknowledged an SOS: shown as one discreet mark, never as words.
    public var sosAcknowledged: Bool
    /// The job's details, and the page shown instead of the job's screen (nil: the job's screen).
    public var details: [DetailPage]
    public var page: Int?
    /// The dispatcher's messages (MessageScreens.swift).
    public var inbox = Inbox()
    /// The shift's history and the page of it shown instead of the job's screen (nil: not shown).
    public var history = History(rides: [], driving: nil)
    public var historyPage: Int?
    /// The pre-bookings, by meeting time, and the one shown instead of the job's screen (nil: not
    /// shown). Page 0 of an empty list says there are none.
    public var preBookings: [PreBooking] = []
    public var preBookingPage: Int?
    /// The taxi's place in its zone's queue, shown while available.
    public var queue: QueuePosition?
    /// The logged-in driver, shown on the idle screens.
    public var driver: String?
    /// The driver asked to drop the job and the dispatcher has not answered: said on the job's screen.
    public var cancelAsked = false

    public init(
        mode: Mode = .offDuty, zone: String? = nil, seatsLeft: Int = 0, online: Bool = false, waiting: Int = 0,
        notice: Notice? = nil, noticeDetail: String? = nil, noticeSerial: Int = 0, sosAcknowledged: Bool = false, details: [DetailPage] = [],
        page: Int? = nil
    ) {
        self.noticeDetail = noticeDetail
        self.details = details
        self.page = page
        self.mode = mode
        self.zone = zone
        self.seatsLeft = seatsLeft
        self.online = online
        self.waiting = waiting
        self.notice = notice
        self.noticeSerial = noticeSerial
        self.sosAcknowledged = sosAcknowledged
    }
}

