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
        public var meetingTime: Int64?

        public init(address: String, distanceM: Double?, passengers: Int, meetingTime: Int64?) {
            self.address = address
            self.distanceM = distanceM
            self.passengers = passengers
            self.meetingTime = meetingTime
        }
    }

    public enum Mode: Sendable, Equatable {
        case offDuty
        case available
        /// `reason`: break, refuel, personal or other.
        case paused(reason: String)
        /// Waiting for accept or reject until `deadline` (ms on the system clock, which the
        /// terminal counts down on).
        case offered(Pickup, deadline: Int64)
        case enRoute(Pickup)
        /// Arrived: the driver is asked how many passengers boarded.
        case atPickup(Pickup)
        case onBoard(passengers: Int)
    }

    /// Something the driver must notice, shown on the bottom row for a few seconds.
    public enum Notice: Sendable, Equatable {
        case cancelled
        case updated
        /// A reply is stored and will reach the dispatcher.
        case sent
        /// The offer was not answered in time: refused.
        case timedOut
        /// The input made no sense now, for this reason (shown in the driver's language).
        case refused(DriverRefusal)
        /// A message from the dispatcher arrived (MessageScreens.swift).
        case newMessage

        /// Cancellations and shared-ride updates ring and blink; the rest is information.
        public var alerts: Bool {
            switch self {
            case .cancelled, .updated, .newMessage: true
            case .sent, .timedOut, .refused: false
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
    /// Changes whenever a notice is raised, so the same notice twice alerts twice.
    public var noticeSerial: Int
    /// The dispatcher acknowledged an SOS: shown as one discreet mark, never as words.
    public var sosAcknowledged: Bool
    /// The dispatcher's messages (MessageScreens.swift).
    public var inbox = Inbox()
    /// The taxi's place in its zone's queue, shown while available.
    public var queue: QueuePosition?

    public init(
        mode: Mode = .offDuty, zone: String? = nil, seatsLeft: Int = 0, online: Bool = false, waiting: Int = 0,
        notice: Notice? = nil, noticeSerial: Int = 0, sosAcknowledged: Bool = false
    ) {
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
