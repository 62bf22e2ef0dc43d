/// Every topic of the contract (docs/protocol.md, "Topics"), once: who publishes it, who reads it,
/// its QoS and whether it is retained. The docs' table, the example broker ACL and the ACL matrix
/// test are held to this list; the topics of each role (`UnitTopic`, `InboundTopic`, `MessageTopic`,
/// `RideMessage.topic`) are named by their entry here, so a topic's name is spelled only here.
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
    /// `{prefix}/{fleet}/msg`: a message for the driver of every unit of the fleet.
    case fleetMsg = "fleet msg"
    /// `{prefix}/{fleet}/zone/{zone}/msg`: a message for the driver of every unit in the zone.
    case zoneMsg = "zone msg"
    case queue
    /// The dispatcher logs the unit's driver out: logged in on another unit.
    case driverLogout = "driver/logout"
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
    /// fleet-wide ones (`zone/{zone}/msg` for a zone's broadcasts).
    public var suffix: String {
        switch self {
        case .fleetConfig: "config"
        case .fleetMsg: "msg"
        case .zoneMsg: "zone/{zone}/msg"
        default: rawValue
        }
    }

    /// True for the topics below `{prefix}/{fleet}/` that are not below a unit: the fleet's config
    /// and the broadcasts.
    public var isFleetWide: Bool { self == .fleetConfig || self == .fleetMsg || self == .zoneMsg }

    /// True for the topics below `{prefix}/{fleet}/{unit}/`.
    public var isUnitTopic: Bool { !isFleetWide && self != .ownTracks }

    /// `{prefix}/{fleet}/{unit}/{suffix}`, `{prefix}/{fleet}/config`, `{prefix}/{fleet}/msg`,
    /// `{prefix}/{fleet}/zone/{zone}/msg`, or the OwnTracks feed's. `zone`: for the zone broadcasts
    /// only; `+`, every zone, makes a subscription filter.
    public func topic(prefix: String, fleet: String, unit: String, zone: String = "+") -> String {
        switch self {
        case .fleetConfig, .fleetMsg: "\(prefix)/\(fleet)/\(suffix)"
        case .zoneMsg: "\(prefix)/\(fleet)/\(suffix.replacing("{zone}", with: zone))"
        case .ownTracks: OwnTracksFeedAccount.topicTemplate.replacing("{fleet}", with: fleet).replacing("{unit}", with: unit)
        default: "\(prefix)/\(fleet)/\(unit)/\(suffix)"
        }
    }

    /// Whether a zone's id can be a level of its broadcast topic: MQTT gives `/` a meaning in a
    /// name, and `+` and `#` in a filter. A zone whose id cannot has no broadcast topic.
    public static func isBroadcastZone(_ id: String) -> Bool {
        !id.isEmpty && !id.unicodeScalars.contains { $0 == "/" || $0 == "+" || $0 == "#" || $0 == "\u{0}" }
    }

    public var publisher: Party {
        switch self {
        case .status, .pos, .posLast, .jobReply, .event, .sos, .ride, .msgReply, .msgRead, .configAck, .cmdReply, .telemetry: .unit
        case .jobOffer, .jobCancel, .jobUpdate, .sosAck, .msg, .fleetMsg, .zoneMsg, .queue, .driverLogout: .dispatcher
        case .fleetConfig, .config, .cmd: .fleet
        case .ownTracks: .ownTracksFeed
        }
    }

    /// Who may read it. A unit reads only its own topics and the fleet-wide ones. The fleet-wide
    /// ones are readable by every account: mosquitto's `pattern` rules apply to every login; the
    /// config document is signed, not secret, and a broadcast is meant for every driver. The
    /// fleet's console (`taxifleet`) shows every unit from its status and positions, and finds a
    /// unit document's next version from the retained one.
    public var readers: Set<Party> {
        switch self {
        case .status, .pos, .posLast: [.dispatcher, .fleet]
        case .jobReply, .event, .sos, .ride, .msgReply, .msgRead: [.dispatcher]
        case .configAck, .cmdReply, .telemetry: [.fleet]
        case .config: [.unit, .fleet]
        case .jobOffer, .jobCancel, .jobUpdate, .sosAck, .msg, .queue, .cmd, .driverLogout: [.unit]
        case .fleetConfig, .fleetMsg, .zoneMsg: Set(Party.allCases)
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

/// Some topics of the catalogue, one role's, as a type of their own so a switch over them is
/// exhaustive. A case is its `ContractTopic`: its name on the wire is the catalogue's.
public protocol ContractTopicSubset: RawRepresentable, CaseIterable, Codable, Sendable where RawValue == String {
    var contract: ContractTopic { get }
}

extension ContractTopicSubset {
    public var rawValue: String { contract.rawValue }

    public init?(rawValue: String) {
        guard let topic = Self.allCases.first(where: { $0.contract.rawValue == rawValue }) else { return nil }
        self = topic
    }

    public init(from decoder: any Decoder) throws {
        let name = try decoder.singleValueContainer().decode(String.self)
        guard let topic = Self(rawValue: name) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not a topic: \(name)"))
        }
        self = topic
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

/// Topics below `{prefix}/{fleet}/{unit}/` that the unit publishes, and the fleet's two it reads.
public enum UnitTopic: ContractTopicSubset {
    case status
    case pos
    /// The newest fix, retained (QoS 0), so a dispatcher that starts sees every unit at once.
    case posLast
    /// Fleet → unit: this unit's configuration document (retained), and commands.
    case config
    case cmd
    /// Unit → fleet: the answers to those.
    case configAck
    case cmdReply
    case jobReply
    case event
    case sos
    /// The unit's counters and gauges (retained, QoS 0).
    case telemetry

    public var contract: ContractTopic {
        switch self {
        case .status: .status
        case .pos: .pos
        case .posLast: .posLast
        case .config: .config
        case .cmd: .cmd
        case .configAck: .configAck
        case .cmdReply: .cmdReply
        case .jobReply: .jobReply
        case .event: .event
        case .sos: .sos
        case .telemetry: .telemetry
        }
    }
}

/// Topics below `{prefix}/{fleet}/{unit}/` that the unit reads from the dispatcher.
public enum InboundTopic: ContractTopicSubset {
    case jobOffer
    case jobCancel
    case jobUpdate
    case sosAck
    /// A message for the driver.
    case msg
    /// The taxi's place in its zone's queue.
    case queue

    public var contract: ContractTopic {
        switch self {
        case .jobOffer: .jobOffer
        case .jobCancel: .jobCancel
        case .jobUpdate: .jobUpdate
        case .sosAck: .sosAck
        case .msg: .msg
        case .queue: .queue
        }
    }
}

/// The driver's messages to the dispatcher, below `{prefix}/{fleet}/{unit}/`.
public enum MessageTopic: ContractTopicSubset {
    case reply
    case read

    public var contract: ContractTopic {
        switch self {
        case .reply: .msgReply
        case .read: .msgRead
        }
    }
}
