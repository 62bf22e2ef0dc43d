/// Where and how to connect. One connection per unit; the client id is the unit's, so the broker
/// keeps its session (subscriptions, queued QoS 1 messages) while the cellular link is down.
public struct MQTTEndpoint: Sendable, Equatable {
    /// The broker nodes of one cluster, tried in turn (`NodeRotation`); one for a single broker.
    /// Every node gets the same client id, TLS and credentials.
    public var nodes: [MQTTNode]
    public var host: String { nodes[0].host }
    public var port: Int { nodes[0].port }
    public var keepaliveS: Int
    public var clientID: String
    /// Persistent session: the broker queues QoS 1 messages for us while we are away.
    public var cleanSession: Bool
    public var tls: MQTTTLS?
    public var credentials: MQTTCredentials?
    public var protocolVersion: MQTTProtocolVersion
    /// MQTT 5's session expiry interval: how long the broker keeps a persistent session (its
    /// subscriptions and queued QoS 1 messages) after we went away. `UInt32.max`: never expires.
    /// Unused on 3.1.1, where a persistent session lasts as long as the broker keeps it.
    public var sessionExpiryS: UInt32
    /// MQTT 5's Receive Maximum: how many QoS 1 messages the broker may have in flight to us, and
    /// so how many it sends again when a connection breaks (libmosquitto's default is 20).
    public var receiveMaximum: UInt16
    /// The largest payload this client takes; nil: any. On MQTT 5 it is announced in CONNECT as the
    /// Maximum Packet Size (with `packetOverheadBytes` for the topic and headers), so the broker
    /// drops a larger message rather than sending it. A larger payload that arrives anyway (MQTT
    /// 3.1.1, or a broker that ignores the limit) is reported as `.oversized`, never copied.
    public var maximumPayloadBytes: Int?

    /// Room in a packet beside its payload: fixed header, topic, packet id and properties.
    public static let packetOverheadBytes = 1024

    /// The Maximum Packet Size announced in CONNECT for `maximumPayloadBytes`.
    public var maximumPacketSize: UInt32? {
        maximumPayloadBytes.map { UInt32(clamping: $0 + Self.packetOverheadBytes) }
    }

    public init(
        host: String, port: Int, keepaliveS: Int, clientID: String, cleanSession: Bool = false,
        tls: MQTTTLS? = nil, credentials: MQTTCredentials? = nil, protocolVersion: MQTTProtocolVersion = .v5,
        sessionExpiryS: UInt32 = 86_400, receiveMaximum: UInt16 = 20, otherNodes: [MQTTNode] = [],
        maximumPayloadBytes: Int? = nil
    ) {
        nodes = [MQTTNode(host: host, port: port)] + otherNodes
        self.keepaliveS = keepaliveS
        self.clientID = clientID
        self.cleanSession = cleanSession
        self.tls = tls
        self.credentials = credentials
        self.protocolVersion = protocolVersion
        self.sessionExpiryS = sessionExpiryS
        self.receiveMaximum = max(1, receiveMaximum)
        self.maximumPayloadBytes = maximumPayloadBytes
    }
}

public struct MQTTNode: Sendable, Equatable, CustomStringConvertible {
    public var host: String
    public var port: Int

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

/// Which broker node the next connection attempt goes to, and the backoff's attempt number.
///
/// Every attempt that ends (it failed, or its session was lost) moves on to the next node, after
/// the last back to the first: a node that just failed is not tried again while another may be up,
/// and a healthy session on a later node is never dropped to go back (that would cost a reconnect
/// and a re-send of what is in flight); the unit returns to the first node when it next has to
/// reconnect from the last one. The backoff grows with failed attempts in a row, whatever the
/// node, so a cluster sees no more reconnects than a single broker would; a session that came up
/// resets it. Pure: tested without a broker.
public struct NodeRotation: Sendable, Equatable {
    public let count: Int
    /// The node the next attempt goes to.
    public private(set) var index = 0
    /// Attempts ended in a row without a session that came up; the backoff's `attempt`.
    public private(set) var failures = 0

    public init(count: Int) {
        self.count = max(1, count)
    }

    /// A session came up on the current node.
    public mutating func connected() {
        failures = 0
    }

    /// The attempt ended: failed, or its session was lost. Returns the backoff attempt to wait for
    /// before the next one, which goes to the next node.
    public mutating func moveOn() -> Int {
        defer {
            failures = min(failures + 1, 1000)
            index = (index + 1) % count
        }
        return failures
    }
}

/// The MQTT version spoken to the broker.
public enum MQTTProtocolVersion: String, Sendable, Equatable, CaseIterable {
    /// Reason codes on PUBACK (a publish the broker refuses is told apart from one it took),
    /// session and message expiry, shared subscriptions.
    case v5 = "5"
    /// For brokers without MQTT 5: a refused publish is acknowledged like an accepted one.
    case v311 = "3.1.1"
}

/// TLS towards the broker: its CA, and optionally our client certificate and key (PEM files).
public struct MQTTTLS: Sendable, Equatable {
    /// nil: the operating system's CA store (OpenSSL's default paths, SSL_CERT_FILE/SSL_CERT_DIR).
    public var caFile: String?
    public var certFile: String?
    public var keyFile: String?
    /// The oldest protocol accepted: "tlsv1.2" or "tlsv1.3".
    public var version: String
    /// The protocol named in the handshake (ALPN), for brokers that serve several on one port.
    public var alpn: String?
    /// Where Debian (and most Linux systems) keep the operating system's CA certificates, by hash.
    public static let systemCADirectory = "/etc/ssl/certs"

    public init(caFile: String?, certFile: String?, keyFile: String?, version: String, alpn: String? = nil) {
        self.caFile = caFile
        self.certFile = certFile
        self.keyFile = keyFile
        self.version = version
        self.alpn = alpn
    }
}

public struct MQTTCredentials: Sendable, Equatable, CustomStringConvertible {
    public var username: String
    public var password: String?

    public init(username: String, password: String?) {
        self.username = username
        self.password = password
    }

    /// Never the password: endpoints end up in log lines.
    public var description: String { "\(username) (password \(password == nil ? "none" : "set"))" }
}

/// Turns OpenSSL's terse reasons into what an operator should check.
public enum TLSFailureHint {
    static let hints: [(symptom: String, hint: String)] = [
        ("certificate verify failed", "the broker's certificate is not signed by cafile, has expired, or does not name the host"),
        ("certificate expired", "the broker rejected our client certificate: it has expired"),
        ("unknown ca", "the broker does not trust the CA that signed our client certificate"),
        ("bad certificate", "the broker rejected our client certificate"),
        ("certificate required", "the broker requires a client certificate: set certfile and keyfile"),
        ("inconsistent", "certfile and keyfile do not belong together"),
        ("key values mismatch", "certfile and keyfile do not belong together"),
        ("wrong version number", "the broker's port does not speak TLS, or tls_version does not match"),
    ]

    public static func explain(_ reason: String) -> String? {
        let lowered = reason.lowercased()
        return hints.first { lowered.contains($0.symptom) }?.hint
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
    /// A PUBACK with a reason code of 0x80 or more (MQTT 5 only): the broker did not take the
    /// message (0x87 not authorised, 0x97 quota exceeded, ...). It must be sent again later.
    case refused(MQTTPublishTicket, reasonCode: Int32)
    case message(MQTTMessage)
    /// A message larger than the endpoint's `maximumPayloadBytes`: refused unread, only its size kept.
    case oversized(topic: String, bytes: Int, retained: Bool)
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
