/// What travels over the control socket, as JSON lines. Shared by the daemon and `taxiunitctl`.
public struct ControlRequest: Sendable, Equatable, Codable {
    public enum Command: String, Sendable, Codable {
        case status
        case press
        /// The ride history, newest first.
        case jobs
        /// The messages waiting in the outbox, per class.
        case outbox
        /// The fleet's documents in force, per scope (`taxiunitctl config` adds the local files).
        case config
        /// The log level in force; with `input`, first sets it (until the next start).
        case logLevel = "log_level"
    }

    public var cmd: Command
    /// For `press`: the driver input as words, e.g. `duty`, `pob 2`, `reject too far`. For
    /// `log_level`: the level to set.
    public var input: String?
    /// For `jobs` and `outbox`: at most this many entries (per class for `outbox`).
    public var limit: Int?

    public init(cmd: Command, input: String? = nil, limit: Int? = nil) {
        self.cmd = cmd
        self.input = input
        self.limit = limit
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
        /// While disconnected: seconds since the link went down, or since the start if it never
        /// came up (monotonic, unlike `since`, which GPS time may move).
        public var downForS: Double?

        public init(connected: Bool, since: Int64?, lastError: String?, downForS: Double? = nil) {
            self.connected = connected
            self.since = since
            self.lastError = lastError
            self.downForS = downForS
        }
    }

    public struct Outbox: Sendable, Equatable, Codable {
        /// Messages stored and not yet acknowledged by the broker (positions count points).
        public var depth: Int
        public var inFlight: Int
        public var alarm: Int
        public var reply: Int
        public var event: Int
        public var position: Int
        /// Positions the bounded store thinned away or dropped, since the store was created.
        public var positionsThinned: Int
        public var positionsDropped: Int

        public init(
            depth: Int, inFlight: Int, alarm: Int, reply: Int, event: Int, position: Int, positionsThinned: Int, positionsDropped: Int
        ) {
            self.depth = depth
            self.inFlight = inFlight
            self.alarm = alarm
            self.reply = reply
            self.event = event
            self.position = position
            self.positionsThinned = positionsThinned
            self.positionsDropped = positionsDropped
        }
    }

    /// The store's disk: what it takes, the room it keeps within (the smaller of `[store] max_mb`
    /// and what its filesystem holds), and whether it can be written.
    public struct Store: Sendable, Equatable, Codable {
        /// The database, its WAL and shared-memory file, in bytes.
        public var bytes: Int64
        /// What they may take (`StoreBudget.footprintBytes`).
        public var limitBytes: Int64
        /// What the daemon may still fill of the store's filesystem; nil when statvfs failed.
        public var filesystemFreeBytes: Int64?
        /// The filesystem has no room left beyond what the store leaves free for others, and the
        /// store is below `[store] max_mb`: it keeps within the room it has, positions giving way.
        public var filesystemFull: Bool
        /// Why the last write failed, while writes fail.
        public var writeError: String?
        /// Messages the store refused, kept in memory (lost on restart).
        public var inMemory: Int

        public init(bytes: Int64, limitBytes: Int64, filesystemFreeBytes: Int64?, filesystemFull: Bool, writeError: String?, inMemory: Int) {
            self.bytes = bytes
            self.limitBytes = limitBytes
            self.filesystemFreeBytes = filesystemFreeBytes
            self.filesystemFull = filesystemFull
            self.writeError = writeError
            self.inMemory = inMemory
        }
    }

    /// The configuration in force and where it came from.
    public struct Config: Sendable, Equatable, Codable {
        /// Version of the fleet's document in force per scope (`fleet`, `unit`); absent: none.
        public var versions: [String: Int]
        /// The scope whose [mqtt] change is still on trial (rolled back unless the new broker
        /// brings the fleet's retained, signed config).
        public var onTrial: String?
        /// `host:port` of the broker node the unit is connected to; while not connected, the nodes it
        /// tries, in order.
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
        /// The driver asked the dispatcher to drop the job, for this reason, and has no answer yet.
        public var cancelRequested: String?

        public init(
            id: String, pickup: String, passengers: Int, offerSecondsLeft: Int?, meetingTime: Int64?, meetingInS: Int?, shared: Bool,
            note: String?, cancelRequested: String? = nil
        ) {
            self.cancelRequested = cancelRequested
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

    /// The driver's shift as counted now (docs/protocol.md, "Shift"), in whole seconds.
    public struct Shift: Sendable, Equatable, Codable {
        /// Unit clock, ms since the epoch.
        public var startedAt: Int64
        public var onDutyS: Int64
        public var drivingS: Int64
        public var continuousDrivingS: Int64

        public init(startedAt: Int64, onDutyS: Int64, drivingS: Int64, continuousDrivingS: Int64) {
            self.startedAt = startedAt
            self.onDutyS = onDutyS
            self.drivingS = drivingS
            self.continuousDrivingS = continuousDrivingS
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
    /// `on` or `off`, as the ignition input last said; absent without one (or while off duty and private).
    public var ignition: String?
    /// With a taximeter configured: `hired` or `vacant` as it last said, `unknown` before it said
    /// anything. Absent without one.
    public var meter: String?
    public var broker: Broker
    public var outbox: Outbox
    public var storedPositions: Int
    public var config: Config?
    /// What the unit could not use and set aside (docs/protocol.md, "status"): kind → entries since
    /// the store was created. Empty when nothing was.
    public var aside: [String: Int]?
    /// What the unit refused at its entrances since it started: `fixes_out_of_range` (gpsd reports
    /// of impossible values), `inbound_over_rate` (MQTT messages over the rate limit), `inbox_full`
    /// (fixes and messages dropped because the engine fell 10,000 inputs behind), and with a serial
    /// taximeter `meter_lines_dropped` (lines its decoder could not use).
    public var refused: [String: Int]?
    /// Seconds since the daemon started.
    public var runningForS: Double?
    /// The store could not be opened: the volatile store in use instead (lost on restart).
    public var volatileStore: String?
    /// The store's disk; absent from daemons that do not report it, and before the first upkeep.
    public var store: Store?
    /// The accepted pre-bookings not yet started, by meeting time; absent when there are none.
    public var upcoming: [Job]?
    /// The job stacked to start after the ride on board.
    public var next: Job?
    /// Absent while no shift is open.
    public var shift: Shift?

    public init(
        unit: String, state: String, gps: GPS, broker: Broker, outbox: Outbox, storedPositions: Int, pauseReason: String? = nil,
        job: Job? = nil, seatsLeft: Int? = nil, sosPending: Bool = false, config: Config? = nil, clock: String? = nil, zone: String? = nil,
        aside: [String: Int]? = nil, refused: [String: Int]? = nil, runningForS: Double? = nil, volatileStore: String? = nil,
        store: Store? = nil, ignition: String? = nil, meter: String? = nil
    ) {
        self.meter = meter
        self.ignition = ignition
        self.store = store
        self.runningForS = runningForS
        self.volatileStore = volatileStore
        self.aside = aside
        self.refused = refused
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

/// One message waiting in the outbox (its payload stays in the daemon).
public struct ControlOutboxEntry: Sendable, Equatable, Codable {
    public var messageClass: String
    public var topic: String
    public var id: String
    /// Unit clock, ms since the epoch, when it was stored.
    public var createdAt: Int64
    /// Handed to the broker, PUBACK not yet received.
    public var inFlight: Bool

    public init(messageClass: String, topic: String, id: String, createdAt: Int64, inFlight: Bool) {
        self.messageClass = messageClass
        self.topic = topic
        self.id = id
        self.createdAt = createdAt
        self.inFlight = inFlight
    }
}

public struct ControlOutboxListing: Sendable, Equatable, Codable {
    /// Waiting messages per class, all of them.
    public var depthByClass: [String: Int]
    /// The oldest waiting messages of each class, up to the request's limit per class.
    public var oldest: [ControlOutboxEntry]

    public init(depthByClass: [String: Int], oldest: [ControlOutboxEntry]) {
        self.depthByClass = depthByClass
        self.oldest = oldest
    }
}

/// A finished ride from the unit's history.
public struct ControlRide: Sendable, Equatable, Codable {
    public struct Position: Sendable, Equatable, Codable {
        public var lat: Double
        public var lon: Double

        public init(lat: Double, lon: Double) {
            self.lat = lat
            self.lon = lon
        }
    }

    public var job: String
    public var passengers: Int
    /// Unit clock, ms since the epoch.
    public var pickupTime: Int64
    public var dropTime: Int64
    /// The last fix when the passengers got in and out; nil without a fix.
    public var pickupPosition: Position?
    public var dropPosition: Position?
    /// Driven between pickup and drop, over the stored fixes.
    public var distanceM: Double
    /// The fare in minor units of `currency`, and where it came from (`quoted`, `typed`, `meter`);
    /// nil without a fare.
    public var fare: Int64?
    public var currency: String?
    public var fareSource: String?
    /// How the passenger paid; nil when the driver did not say.
    public var payment: String?
    /// The job's pickup address; nil when the job gave none.
    public var pickupAddress: String?

    public init(
        job: String, passengers: Int, pickupTime: Int64, dropTime: Int64, pickupPosition: Position?, dropPosition: Position?,
        distanceM: Double, fare: Int64? = nil, currency: String? = nil, fareSource: String? = nil, payment: String? = nil, pickupAddress: String? = nil
    ) {
        self.pickupAddress = pickupAddress
        self.fare = fare
        self.currency = currency
        self.fareSource = fareSource
        self.payment = payment
        self.job = job
        self.passengers = passengers
        self.pickupTime = pickupTime
        self.dropTime = dropTime
        self.pickupPosition = pickupPosition
        self.dropPosition = dropPosition
        self.distanceM = distanceM
    }
}

/// One fleet document in force (`config`).
public struct ControlConfigLayer: Sendable, Equatable, Codable {
    /// `fleet` or `unit`, in the order they are laid over the local files.
    public var scope: String
    public var version: Int
    /// Its settings as canonical JSON.
    public var settings: String

    public init(scope: String, version: Int, settings: String) {
        self.scope = scope
        self.version = version
        self.settings = settings
    }
}

/// A job that ended without a ride, from the unit's history.
public struct ControlJobOutcome: Sendable, Equatable, Codable {
    public var job: String
    /// Unit clock, ms since the epoch.
    public var endedAt: Int64
    /// `rejected`, `timed_out` (the offer was not answered in time), `no_show` or `cancelled`.
    public var outcome: String

    public init(job: String, endedAt: Int64, outcome: String) {
        self.job = job
        self.endedAt = endedAt
        self.outcome = outcome
    }
}

public struct ControlResponse: Sendable, Equatable, Codable {
    public var ok: Bool
    public var error: String?
    public var status: ControlStatus?
    /// For `press`: what the driver is told. For `log_level`: the level in force.
    public var message: String?
    public var outbox: ControlOutboxListing?
    public var rides: [ControlRide]?
    /// For `jobs`: the jobs that ended without a ride, newest first.
    public var jobOutcomes: [ControlJobOutcome]?
    /// For `config`: the fleet's documents in force, fleet scope first.
    public var layers: [ControlConfigLayer]?

    public init(
        ok: Bool, error: String? = nil, status: ControlStatus? = nil, message: String? = nil,
        outbox: ControlOutboxListing? = nil, rides: [ControlRide]? = nil, jobOutcomes: [ControlJobOutcome]? = nil, layers: [ControlConfigLayer]? = nil
    ) {
        self.jobOutcomes = jobOutcomes
        self.layers = layers
        self.ok = ok
        self.error = error
        self.status = status
        self.message = message
        self.outbox = outbox
        self.rides = rides
    }

    public static func failure(_ error: String) -> ControlResponse { ControlResponse(ok: false, error: error) }
}
