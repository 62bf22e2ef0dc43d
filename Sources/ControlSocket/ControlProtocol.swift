/// What travels over the control socket, as JSON lines. Shared by the daemon and `taxiunitctl`.
public struct ControlRequest: Sendable, Equatable, Codable {
    public enum Command: String, Sendable, Codable {
        case status
        case press
    }

    public var cmd: Command
    /// For `press`: the driver input as words, e.g. `duty`, `pob 2`, `reject too far`.
    public var input: String?

    public init(cmd: Command, input: String? = nil) {
        self.cmd = cmd
        self.input = input
    }
}

public struct ControlStatus: Sendable, Equatable, Codable {
    public struct GPS: Sendable, Equatable, Codable {
        public var connected: Bool
        /// Seconds since the last valid fix was received, nil before the first.
        public var lastFixAgeS: Double?
        public var lastFixTime: Int64?

        public init(connected: Bool, lastFixAgeS: Double?, lastFixTime: Int64?) {
            self.connected = connected
            self.lastFixAgeS = lastFixAgeS
            self.lastFixTime = lastFixTime
        }
    }

    public struct Broker: Sendable, Equatable, Codable {
        public var connected: Bool
        /// Unit clock (ms) when the current connection came up, or the last one went down.
        public var since: Int64?
        public var lastError: String?

        public init(connected: Bool, since: Int64?, lastError: String?) {
            self.connected = connected
            self.since = since
            self.lastError = lastError
        }
    }

    public struct Outbox: Sendable, Equatable, Codable {
        /// Messages stored and not yet acknowledged by the broker.
        public var depth: Int
        public var inFlight: Int

        public init(depth: Int, inFlight: Int) {
            self.depth = depth
            self.inFlight = inFlight
        }
    }

    /// The configuration in force and where it came from.
    public struct Config: Sendable, Equatable, Codable {
        /// Version of the fleet's document in force per scope (`fleet`, `unit`); absent: none.
        public var versions: [String: Int]
        /// The scope whose [mqtt] change is still on trial (rolled back unless a broker is reached).
        public var onTrial: String?
        /// `host:port` of the broker the unit uses now.
        public var broker: String
        /// The fleet's settings in force, both scopes merged, as canonical JSON.
        public var remoteSettings: String

        public init(versions: [String: Int], onTrial: String?, broker: String, remoteSettings: String) {
            self.versions = versions
            self.onTrial = onTrial
            self.broker = broker
            self.remoteSettings = remoteSettings
        }
    }

    /// The offered or open job, as the terminal shows it.
    public struct Job: Sendable, Equatable, Codable {
        public var id: String
        public var pickup: String
        public var passengers: Int
        /// While offered: whole seconds left to answer.
        public var offerSecondsLeft: Int?
        /// Reservations: when the customer expects the taxi (ms since the epoch) and seconds until then.
        public var meetingTime: Int64?
        public var meetingInS: Int?
        public var shared: Bool
        public var note: String?

        public init(
            id: String, pickup: String, passengers: Int, offerSecondsLeft: Int?, meetingTime: Int64?, meetingInS: Int?, shared: Bool,
            note: String?
        ) {
            self.id = id
            self.pickup = pickup
            self.passengers = passengers
            self.offerSecondsLeft = offerSecondsLeft
            self.meetingTime = meetingTime
            self.meetingInS = meetingInS
            self.shared = shared
            self.note = note
        }
    }

    public var unit: String
    public var state: String
    public var pauseReason: String?
    public var job: Job?
    public var seatsLeft: Int?
    /// An SOS is waiting for the dispatcher's acknowledgement.
    public var sosPending: Bool
    public var gps: GPS
    /// Where the unit clock comes from: `system` (synchronised), `gps` (last fix + monotonic time),
    /// `unsynchronised` (system clock, nothing better yet).
    public var clock: String?
    /// The zone the taxi is in, if any.
    public var zone: String?
    public var broker: Broker
    public var outbox: Outbox
    public var storedPositions: Int
    public var config: Config?

    public init(
        unit: String, state: String, gps: GPS, broker: Broker, outbox: Outbox, storedPositions: Int, pauseReason: String? = nil,
        job: Job? = nil, seatsLeft: Int? = nil, sosPending: Bool = false, config: Config? = nil, clock: String? = nil, zone: String? = nil
    ) {
        self.unit = unit
        self.state = state
        self.gps = gps
        self.clock = clock
        self.zone = zone
        self.broker = broker
        self.outbox = outbox
        self.storedPositions = storedPositions
        self.pauseReason = pauseReason
        self.job = job
        self.seatsLeft = seatsLeft
        self.sosPending = sosPending
        self.config = config
    }
}

public struct ControlResponse: Sendable, Equatable, Codable {
    public var ok: Bool
    public var error: String?
    public var status: ControlStatus?
    /// For `press`: what the driver is told.
    public var message: String?

    public init(ok: Bool, error: String? = nil, status: ControlStatus? = nil, message: String? = nil) {
        self.ok = ok
        self.error = error
        self.status = status
        self.message = message
    }

    public static func failure(_ error: String) -> ControlResponse { ControlResponse(ok: false, error: error) }
}
