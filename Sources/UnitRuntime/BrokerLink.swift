import Foundation
import Liveness
import Logging
import MQTTLink
import Synchronization
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
    private struct State {
        var current: MQTTConnection?
        var generation = 0
        var stopped = false
        var deliver: @Sendable (Event) -> Void = { _ in }
    }

    private let state = Mutex(State())

    public init(logger: Logger) {
        self.logger = logger
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

    /// Closes the current connection (cleanly: no last will) and opens one for `configuration`.
    /// Returns the new connection's generation.
    @discardableResult
    func connect(_ configuration: UnitConfiguration) -> Int {
        let connection = MQTTConnection(
            endpoint: MQTTEndpoint(
                host: configuration.mqtt.host, port: configuration.mqtt.port, keepaliveS: configuration.mqtt.keepaliveS,
                clientID: "taxiunitd-\(configuration.unit.fleet)-\(configuration.unit.id)",
                tls: configuration.mqtt.tls.map { MQTTTLS(caFile: $0.caFile, certFile: $0.certFile, keyFile: $0.keyFile, version: $0.version, alpn: $0.alpn) },
                credentials: credentials(configuration.mqtt)),
            will: MQTTWill(
                topic: configuration.unitTopicBase + UnitTopic.status.rawValue,
                payload: (try? Array(JSONEncoder.wire.encode(OfflineStatusMessage()))) ?? [], qos: 1, retain: true),
            backoff: ReconnectBackoff(minimumS: configuration.mqtt.reconnectMinS, maximumS: configuration.mqtt.reconnectMaxS),
            logger: logger
        )
        let deliver = state.withLock { $0.deliver }
        let (previous, newGeneration, isStopped) = state.withLock {
            $0.generation += 1
            let previous = $0.current
            if !$0.stopped { $0.current = connection }
            return (previous, $0.generation, $0.stopped)
        }
        // Stopping joins the old loop thread, which may sit in a TCP connect to an unreachable host
        // for minutes: not on the engine's loop.
        if let previous { Thread.detachNewThread { previous.stop() } }
        guard !isStopped else { return newGeneration }
        connection.deliverEvents { deliver(Event(generation: newGeneration, event: $0)) }
        connection.start()
        return newGeneration
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

    func publish(topic: String, payload: [UInt8], qos: Int32, retain: Bool) throws(MQTTLinkError) -> MQTTPublishTicket {
        guard let connection else { throw .notConnected }
        return try connection.publish(topic: topic, payload: payload, qos: qos, retain: retain)
    }

    func subscribe(_ pattern: String, qos: Int32) throws(MQTTLinkError) {
        guard let connection else { throw .notConnected }
        try connection.subscribe(pattern, qos: qos)
    }

    func dropConnection() {
        connection?.dropConnection()
    }

    /// Replaces the connection's libmosquitto loop thread if it stopped coming round.
    func restartLoopIfSilent(longerThan limit: Duration) {
        connection?.restartLoopIfSilent(longerThan: limit)
    }
}
