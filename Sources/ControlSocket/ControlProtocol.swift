/// What travels over the control socket, as JSON lines. Shared by the daemon and `taxiunitctl`.
public struct ControlRequest: Sendable, Equatable, Codable {
    public enum Command: String, Sendable, Codable {
        case status
        case press
    }

    public var cmd: Command
    /// For `press`: the driver input, e.g. `duty`.
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

    public var unit: String
    public var state: String
    public var gps: GPS
    /// Where the unit clock comes from: `system` (synchronised), `gps` (last fix + monotonic time),
    /// `unsynchronised` (system clock, nothing better yet).
    public var clock: String?
    /// The zone the taxi is in, if any.
    public var zone: String?
    public var broker: Broker
    public var outbox: Outbox
    public var storedPositions: Int

    public init(unit: String, state: String, gps: GPS, clock: String?, zone: String?, broker: Broker, outbox: Outbox, storedPositions: Int) {
        self.unit = unit
        self.state = state
        self.gps = gps
        self.clock = clock
        self.zone = zone
        self.broker = broker
        self.outbox = outbox
        self.storedPositions = storedPositions
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
