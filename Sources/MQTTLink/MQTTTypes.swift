/// Where and how to connect. One connection per unit; the client id is the unit's, so the broker
/// keeps its session (subscriptions, queued QoS 1 messages) while the cellular link is down.
public struct MQTTEndpoint: Sendable, Equatable {
    public var host: String
    public var port: Int
    public var keepaliveS: Int
    public var clientID: String
    /// Persistent session: the broker queues QoS 1 messages for us while we are away.
    public var cleanSession: Bool

    public init(host: String, port: Int, keepaliveS: Int, clientID: String, cleanSession: Bool = false) {
        self.host = host
        self.port = port
        self.keepaliveS = keepaliveS
        self.clientID = clientID
        self.cleanSession = cleanSession
    }
}

public struct MQTTWill: Sendable, Equatable {
    public var topic: String
    public var payload: [UInt8]
    public var qos: Int32
    public var retain: Bool

    public init(topic: String, payload: [UInt8], qos: Int32, retain: Bool) {
        self.topic = topic
        self.payload = payload
        self.qos = qos
        self.retain = retain
    }
}

public struct MQTTMessage: Sendable, Equatable {
    public var topic: String
    public var payload: [UInt8]
    public var qos: Int32
    public var retained: Bool

    public init(topic: String, payload: [UInt8], qos: Int32, retained: Bool) {
        self.topic = topic
        self.payload = payload
        self.qos = qos
        self.retained = retained
    }
}

/// Identifies one TCP session with the broker; message ids are only meaningful within one.
public typealias MQTTSessionID = UInt64

/// A publish handed to libmosquitto: the PUBACK comes back as `.published` with the same pair.
public struct MQTTPublishTicket: Sendable, Hashable {
    public var session: MQTTSessionID
    public var messageID: Int32
}

public enum MQTTEvent: Sendable, Equatable {
    case connected(MQTTSessionID)
    case connectFailed(reason: String)
    case disconnected(MQTTSessionID, reason: String)
    /// PUBACK for QoS 1 (or "written" for QoS 0).
    case published(MQTTPublishTicket)
    case message(MQTTMessage)
}

public enum MQTTLinkError: Error, Sendable, Equatable, CustomStringConvertible {
    case notConnected
    case libmosquitto(code: Int32, text: String)

    public var description: String {
        switch self {
        case .notConnected: "not connected to the broker"
        case .libmosquitto(let code, let text): "libmosquitto error \(code): \(text)"
        }
    }
}

/// Capped exponential backoff with full jitter, so a fleet does not reconnect in lockstep after an
/// outage of the dispatcher's broker.
public struct ReconnectBackoff: Sendable, Equatable {
    public var minimumS: Double
    public var maximumS: Double

    public init(minimumS: Double, maximumS: Double) {
        self.minimumS = minimumS
        self.maximumS = max(minimumS, maximumS)
    }

    /// The ceiling for the `attempt`th consecutive failure (0-based); the delay is uniform below it.
    public func ceiling(attempt: Int) -> Double {
        min(maximumS, minimumS * pow2(min(attempt, 30)))
    }

    public func delay<R: RandomNumberGenerator>(attempt: Int, using generator: inout R) -> Double {
        Double.random(in: 0...ceiling(attempt: attempt), using: &generator)
    }

    private func pow2(_ exponent: Int) -> Double { Double(1 << exponent) }
}
