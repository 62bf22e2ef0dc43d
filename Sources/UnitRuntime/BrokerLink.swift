import FleetControl
import Foundation
import Liveness
import Logging
import MQTTLink
import Platform
import Synchronization
import TaxiProtocol
import UnitConfig
import UnitCore

/// The unit's one broker connection, replaceable: a fleet config that changes [mqtt] gets a fresh
/// `MQTTConnection` for the new endpoint, and a rollback gets one for the old. Events carry the
/// generation of the connection they came from, so the engine can drop what a replaced one said.
public final class BrokerLink: BackgroundAdapter, Sendable {
    public struct Event: Sendable {
        public var generation: Int
        public var event: MQTTEvent
    }

    private let logger: Logger
    /// With `[owntracks] enabled`: the feed's own connection, which follows this link's broker.
    private let ownTracks: OwnTracksLink?
    private struct State {
        var current: MQTTConnection?
        var generation = 0
        var stopped = false
        var deliver: @Sendable (Event) -> Void = { _ in }
        /// `[mqtt] max_publish_rate`; nil: unlimited. Kept across reconnects and broker nodes.
        var rate: PublishRateLimit?
    }

    private let state = Mutex(State())
    /// Taken by the loop thread at every attempt; restored and reserved on disk by the engine.
    private let counter = Mutex(ConnectionCounter(stored: nil))

    public init(logger: Logger, ownTracks: OwnTracksLink? = nil) {
        self.logger = logger
        self.ownTracks = ownTracks
    }

    /// Where every connection's events go, on the thread that has them (the engine's inbox).
    /// Set before the first `connect`.
    func deliverEvents(to handler: @escaping @Sendable (Event) -> Void) {
        state.withLock { $0.deliver = handler }
    }

    /// Connections start when the engine knows which configuration is in force.
    public func start() {}

    public func stop() {
        let connection = state.withLock {
            $0.stopped = true
            return $0.current.take()
        }
        connection?.stop()
    }

    /// Nothing the unit reads is larger: a fleet document or command, or a dispatcher's message.
    static let largestInboundPayloadBytes = max(FleetMessage.maximumBytes, InboundTopic.largestPayloadBytes)

    /// Closes the current connection (cleanly: no last will) and opens one for `configuration`.
    /// Returns the new connection's generation.
    @discardableResult
    func connect(_ configuration: UnitConfiguration) -> Int {
        let mqtt = configuration.mqtt
        let nodes = mqtt.nodes.map { MQTTNode(host: $0.host, port: $0.port) }
        let connection = MQTTConnection(
            endpoint: MQTTEndpoint(
                host: mqtt.host, port: mqtt.port, keepaliveS: mqtt.keepaliveS,
                clientID: mqtt.clientID(fleet: configuration.unit.fleet, unit: configuration.unit.id),
                tls: mqtt.tls.map(Self.tls), credentials: credentials(mqtt), protocolVersion: Self.protocolVersion(mqtt),
                sessionExpiryS: UInt32(clamping: mqtt.sessionExpiryS), otherNodes: Array(nodes.dropFirst()),
                maximumPayloadBytes: Self.largestInboundPayloadBytes),
            will: nil,
            backoff: ReconnectBackoff(minimumS: configuration.mqtt.reconnectMinS, maximumS: configuration.mqtt.reconnectMaxS),
            logger: logger
        ) { [weak self, topic = configuration.unitTopicBase + UnitTopic.status.rawValue] in
            let conn = self?.counter.withLock { $0.next() }
            let payload = (try? Array(JSONEncoder.wire.encode(OfflineStatusMessage(conn: conn)))) ?? []
            return MQTTWill(topic: topic, payload: payload, qos: 1, retain: true)
        }
        let deliver = state.withLock {
            if mqtt.maxPublishRate <= 0 {
                $0.rate = nil
            } else if $0.rate?.ratePerS != mqtt.maxPublishRate {
                $0.rate = PublishRateLimit(ratePerS: mqtt.maxPublishRate)
            }
            return $0.deliver
        }
        let (previous, newGeneration, isStopped) = state.withLock {
            $0.generation += 1
            let previous = $0.current
            if !$0.stopped { $0.current = connection }
            return (previous, $0.generation, $0.stopped)
        }
        // Stopping joins the old loop thread, which may sit in a TCP connect to an unreachable host
        // for minutes: not on the engine's loop.
        if let previous { detachThread { previous.stop() } }
        guard !isStopped else { return newGeneration }
        connection.deliverEvents { deliver(Event(generation: newGeneration, event: $0)) }
        connection.start()
        ownTracks?.connect(configuration)
        return newGeneration
    }

    static func tls(_ tls: UnitConfiguration.TLS) -> MQTTTLS {
        MQTTTLS(caFile: tls.caFile, certFile: tls.certFile, keyFile: tls.keyFile, version: tls.version, alpn: tls.alpn)
    }

    /// Validated at load: "5" or "3.1.1".
    static func protocolVersion(_ mqtt: UnitConfiguration.MQTT) -> MQTTProtocolVersion {
        MQTTProtocolVersion(rawValue: mqtt.protocolVersion) ?? .v5
    }

    /// To the OwnTracks feed's connection, not this one (`OwnTracksLink`).
    func publishOwnTracks(_ location: OwnTracksLocation, clock: UnitClock, trustSystemClock: Bool) {
        ownTracks?.publish(location, clock: clock, trustSystemClock: trustSystemClock)
    }

    private var connection: MQTTConnection? { state.withLock { $0.current } }

    /// The current connection's loop thread, for the watchdog; nil before the first connect.
    public var heartbeat: Heartbeat? { connection?.heartbeat }

    /// The daemon checked the secret files at start; if one went bad since, the broker hears no
    /// password and refuses, and the log says why.
    private func credentials(_ mqtt: UnitConfiguration.MQTT) -> MQTTCredentials? {
        do {
            return try mqtt.login().map { MQTTCredentials(username: $0.username, password: $0.password) }
        } catch {
            logger.error("cannot use the broker credentials", metadata: ["problem": "\(error.problems.joined(separator: "; "))"])
            return mqtt.username.map { MQTTCredentials(username: $0, password: nil) }
        }
    }

    /// Spends a token of the rate limit whether or not there is one: see `PublishRateLimit`.
    func publish(topic: String, payload: [UInt8], qos: Int32, retain: Bool) throws(MQTTLinkError) -> MQTTPublishTicket {
        guard let connection else { throw .notConnected }
        let ticket = try connection.publish(topic: topic, payload: payload, qos: qos, retain: retain)
        state.withLock { $0.rate?.spend(at: .now) }
        return ticket
    }

    func restoreConnectionCounter(stored: Int64?) -> Int64? {
        counter.withLock {
            $0 = ConnectionCounter(stored: stored)
            return $0.reservation()
        }
    }

    func connectionReservation() -> Int64? {
        counter.withLock { $0.reservation() }
    }

    /// `host:port` of the broker node the unit is connected to (after a failover, not the first of
    /// `hosts`); nil while not connected.
    var nodeInUse: String? { connection?.nodeInUse?.description }

    /// The number of the latest connection attempt: the current connection's, once connected.
    var connectionNumber: Int64? {
        counter.withLock { $0.last > 0 ? $0.last : nil }
    }

    func publishAllowance() -> PublishAllowance {
        state.withLock { state in
            let now = ContinuousClock.now
            guard var rate = state.rate else { return .unlimited }
            defer { state.rate = rate }
            return .limited(count: rate.available(at: now), wait: max(rate.wait(at: now), rate.refillTime))
        }
    }

    func subscribe(_ pattern: String, qos: Int32) throws(MQTTLinkError) {
        guard let connection else { throw .notConnected }
        try connection.subscribe(pattern, qos: qos)
    }

    func unsubscribe(_ pattern: String) throws(MQTTLinkError) {
        guard let connection else { throw .notConnected }
        try connection.unsubscribe(pattern)
    }

    func dropConnection() {
        connection?.dropConnection()
    }

    /// Replaces the connection's libmosquitto loop thread if it stopped coming round.
    func restartLoopIfSilent(longerThan limit: Duration) {
        connection?.restartLoopIfSilent(longerThan: limit)
        ownTracks?.restartLoopIfSilent(longerThan: limit)
    }
}
