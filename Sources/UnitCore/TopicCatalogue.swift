/// Every topic of the contract (docs/protocol.md, "Topics"), once: who publishes it, who reads it,
/// its QoS and whether it is retained. The docs' table, the example broker ACL and the ACL matrix
/// test are held to this list; the suffixes the unit uses (`UnitTopic`, `InboundTopic`,
/// `MessageTopic`, `RideMessage.topic`) are all in it.
public enum ContractTopic: String, Sendable, CaseIterable {
    case status
    case pos
    case posLast = "pos/last"
    case jobOffer = "job/offer"
    case jobCancel = "job/cancel"
    case jobUpdate = "job/update"
    case jobReply = "job/reply"
    case event
    case sos
    case sosAck = "sos/ack"
    case ride
    case msg
    case msgReply = "msg/reply"
    case msgRead = "msg/read"
    case queue
    /// `{prefix}/{fleet}/config`: the fleet scope's document, for every unit of the fleet.
    case fleetConfig = "fleet config"
    /// `{prefix}/{fleet}/{unit}/config`: the unit scope's document.
    case config
    case configAck = "config/ack"
    case cmd
    case cmdReply = "cmd/reply"
    case telemetry
    /// `owntracks/{fleet}/{unit}` (`[owntracks] topic`'s default): a unit's OwnTracks feed, outside
    /// the prefix, on a connection and login of its own (`OwnTracksFeedAccount`).
    case ownTracks = "owntracks"

    /// The kinds of broker account (etc/mosquitto-acl.example).
    public enum Party: String, Sendable, CaseIterable {
        case unit
        case dispatcher
        case fleet
        /// A unit's OwnTracks feed connection.
        case ownTracksFeed = "owntracks feed"
    }

    /// The topic's name below `{prefix}/{fleet}/{unit}/`, or below `{prefix}/{fleet}/` for the
    /// fleet-wide config.
    public var suffix: String { isFleetWide ? "config" : rawValue }

    /// True for the one topic that is not below a unit.
    public var isFleetWide: Bool { self == .fleetConfig }

    /// True for the topics below `{prefix}/{fleet}/{unit}/`.
    public var isUnitTopic: Bool { self != .fleetConfig && self != .ownTracks }

    /// `{prefix}/{fleet}/{unit}/{suffix}`, `{prefix}/{fleet}/config`, or the OwnTracks feed's.
    public func topic(prefix: String, fleet: String, unit: String) -> String {
        switch self {
        case .fleetConfig: "\(prefix)/\(fleet)/\(suffix)"
        case .ownTracks: OwnTracksFeedAccount.topicTemplate.replacing("{fleet}", with: fleet).replacing("{unit}", with: unit)
        default: "\(prefix)/\(fleet)/\(unit)/\(suffix)"
        }
    }

    public var publisher: Party {
        switch self {
        case .status, .pos, .posLast, .jobReply, .event, .sos, .ride, .msgReply, .msgRead, .configAck, .cmdReply, .telemetry: .unit
        case .jobOffer, .jobCancel, .jobUpdate, .sosAck, .msg, .queue: .dispatcher
        case .fleetConfig, .config, .cmd: .fleet
        case .ownTracks: .ownTracksFeed
        }
    }

    /// Who may read it. A unit reads only its own topics and the fleet-wide config. The fleet-wide
    /// config is readable by every account: mosquitto's `pattern` rules apply to every login, and
    /// the document is signed, not secret. The fleet's console (`taxifleet`) shows every unit from
    /// its status and positions, and finds a unit document's next version from the retained one.
    public var readers: Set<Party> {
        switch self {
        case .status, .pos, .posLast: [.dispatcher, .fleet]
        case .jobReply, .event, .sos, .ride, .msgReply, .msgRead: [.dispatcher]
        case .configAck, .cmdReply, .telemetry: [.fleet]
        case .config: [.unit, .fleet]
        case .jobOffer, .jobCancel, .jobUpdate, .sosAck, .msg, .queue, .cmd: [.unit]
        case .fleetConfig: Set(Party.allCases)
        // Map tools (OwnTracks Recorder, Home Assistant) log in with accounts of their own.
        case .ownTracks: []
        }
    }

    public var qos: Int {
        switch self {
        case .posLast, .telemetry, .ownTracks: 0
        default: 1
        }
    }

    public var retained: Bool {
        switch self {
        case .status, .posLast, .fleetConfig, .config, .telemetry, .ownTracks: true
        default: false
        }
    }
}

/// The login of a unit's OwnTracks feed connection. Its own account, because the feed's connection
/// carries OwnTracks' `lwt` as its will and a second connection under the unit's login would take the
/// unit's session over. `{fleet}/{unit}` makes the default topic `owntracks/` + the username, so one
/// mosquitto rule, `pattern write owntracks/%u`, gives each feed its own topic and nothing else.
public enum OwnTracksFeedAccount {
    public static let usernameTemplate = "{fleet}/{unit}"
    public static let topicTemplate = "owntracks/{fleet}/{unit}"
}
