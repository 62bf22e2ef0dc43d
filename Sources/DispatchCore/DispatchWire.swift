/// The dispatcher's side of docs/protocol.md: what it reads from units and what it sends them.
/// Decoding is lenient on purpose: unknown keys are ignored and most fields are optional, so a unit
/// that adds fields, or an older one, is still understood.

/// Topic suffixes below `{prefix}/{fleet}/{unit}/`.
public enum DispatchTopic: String, Sendable, CaseIterable {
    // unit → dispatcher
    case status
    case event
    case jobReply = "job/reply"
    case sos
    case pos
    // dispatcher → unit
    case jobOffer = "job/offer"
    case jobCancel = "job/cancel"
    case jobUpdate = "job/update"
    case sosAck = "sos/ack"
}

/// The retained `status`: `{"online":false}` alone is the last will.
public struct UnitStatusReport: Sendable, Equatable, Codable {
    public var online: Bool
    public var state: String?
    public var zone: String?
    public var job: String?
    public var t: Int64?

    public init(online: Bool, state: String? = nil, zone: String? = nil, job: String? = nil, t: Int64? = nil) {
        self.online = online
        self.state = state
        self.zone = zone
        self.job = job
        self.t = t
    }
}

/// One state transition or zone change on `event`.
public struct UnitEventReport: Sendable, Equatable, Codable {
    public var id: String
    public var t: Int64
    public var from: String?
    public var to: String?
    public var job: String?
    public var zone: String?

    public init(id: String, t: Int64, from: String? = nil, to: String? = nil, job: String? = nil, zone: String? = nil) {
        self.id = id
        self.t = t
        self.from = from
        self.to = to
        self.job = job
        self.zone = zone
    }
}

/// Positions on `pos`; only used to place taxis that do not report a zone themselves.
public struct PositionReport: Sendable, Equatable, Codable {
    public struct Point: Sendable, Equatable, Codable {
        public var lat: Double
        public var lon: Double

        public init(lat: Double, lon: Double) {
            self.lat = lat
            self.lon = lon
        }
    }

    public var id: String
    public var points: [Point]

    public init(id: String, points: [Point]) {
        self.id = id
        self.points = points
    }
}

public enum ReplyKind: String, Sendable, Codable, CaseIterable {
    case accept, reject, timeout, busy, expired, invalid
}

/// The driver's (or the unit's own) answer on `job/reply`.
public struct JobReplyReport: Sendable, Equatable, Codable {
    public var id: String
    public var job: String
    /// What is answered: `job/offer`, or `job/update` / `job/cancel` for an `invalid` answer.
    public var re: String?
    public var reply: ReplyKind
    public var reason: String?
    /// Unit clock when the answer was made (the driver's key press).
    public var t: Int64

    public init(id: String, job: String, re: String? = "job/offer", reply: ReplyKind, reason: String? = nil, t: Int64) {
        self.id = id
        self.job = job
        self.re = re
        self.reply = reply
        self.reason = reason
        self.t = t
    }

    public var answersOffer: Bool { re == nil || re == DispatchTopic.jobOffer.rawValue }
}

public struct SOSReport: Sendable, Equatable, Codable {
    public struct LastFix: Sendable, Equatable, Codable {
        public var lat: Double
        public var lon: Double

        public init(lat: Double, lon: Double) {
            self.lat = lat
            self.lon = lon
        }
    }

    public var id: String
    public var t: Int64?
    public var state: String?
    public var job: String?
    /// The unit's last fix, when it had one.
    public var fix: LastFix?

    public init(id: String, t: Int64? = nil, state: String? = nil, job: String? = nil, fix: LastFix? = nil) {
        self.id = id
        self.t = t
        self.state = state
        self.job = job
        self.fix = fix
    }
}

public struct PickupPlace: Sendable, Equatable, Codable {
    public var lat: Double
    public var lon: Double
    public var address: String?

    public init(_ point: GeoPoint, address: String?) {
        lat = point.lat
        lon = point.lon
        self.address = address
    }
}

public struct JobOfferMessage: Sendable, Equatable, Codable {
    public var job: String
    public var pickup: PickupPlace
    public var respondWithinS: Int
    public var passengers: Int
    public var meetingTime: Int64?
    public var shared: Bool
    public var note: String?
    /// Dispatcher clock when the offer was made: lets a unit that was offline answer `expired`.
    public var t: Int64

    enum CodingKeys: String, CodingKey {
        case job, pickup, passengers, shared, note, t
        case respondWithinS = "respond_within_s"
        case meetingTime = "meeting_time"
    }
}

public struct JobCancelMessage: Sendable, Equatable, Codable {
    public var job: String
    public var reason: String

    public init(job: String, reason: String) {
        self.job = job
        self.reason = reason
    }
}

/// Shared rides: one more pickup for the taxi's current job (its passengers add to the job's), or
/// the job's new passenger total when a sharing passenger withdraws.
public struct JobUpdateMessage: Sendable, Equatable, Codable {
    public struct AddedPickup: Sendable, Equatable, Codable {
        public var lat: Double
        public var lon: Double
        public var address: String?
        public var passengers: Int

        public init(_ point: GeoPoint, address: String?, passengers: Int) {
            lat = point.lat
            lon = point.lon
            self.address = address
            self.passengers = passengers
        }
    }

    public var job: String
    public var addPickup: AddedPickup?
    public var passengers: Int?

    enum CodingKeys: String, CodingKey {
        case job, passengers
        case addPickup = "add_pickup"
    }

    public init(job: String, addPickup: AddedPickup? = nil, passengers: Int? = nil) {
        self.job = job
        self.addPickup = addPickup
        self.passengers = passengers
    }
}

public struct SOSAckMessage: Sendable, Equatable, Codable {
    /// The `id` of the `sos` message acknowledged.
    public var id: String
    public var t: Int64

    public init(id: String, t: Int64) {
        self.id = id
        self.t = t
    }
}

/// Everything the dispatcher sends, one case per topic.
public enum DispatchMessage: Sendable, Equatable {
    case offer(JobOfferMessage)
    case cancel(JobCancelMessage)
    case update(JobUpdateMessage)
    case sosAck(SOSAckMessage)

    public var topic: DispatchTopic {
        switch self {
        case .offer: .jobOffer
        case .cancel: .jobCancel
        case .update: .jobUpdate
        case .sosAck: .sosAck
        }
    }
}

/// A decoded message from one unit.
public enum UnitReport: Sendable, Equatable {
    case status(UnitStatusReport)
    case event(UnitEventReport)
    case reply(JobReplyReport)
    case sos(SOSReport)
    case position(PositionReport)
}
