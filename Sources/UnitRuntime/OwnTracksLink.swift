import Foundation
import Logging
import MQTTLink
import Platform
import Synchronization
import TaxiProtocol
import UnitConfig
import UnitCore

/// The OwnTracks feed's own broker connection (docs/protocol.md, "OwnTracks"). Its will is OwnTracks'
/// `lwt` on the feed's topic, so the broker says the taxi is gone however the unit went (killed, power
/// cut, link lost), and a clean stop has the broker say it too, once. The unit's own connection keeps
/// its `status` will. The feed logs in with an account of its own (`OwnTracksFeedAccount`): under the
/// unit's login it would take the unit's session over. Clean session, QoS 0, nothing subscribed.
///
/// It follows the broker the unit's link is on (`BrokerLink.connect`). Nothing it meets reaches the
/// unit's link: a refused login or a broker that drops it is logged once, and it retries with the
/// link's backoff.
public final class OwnTracksLink: BackgroundAdapter, Sendable {
    private let logger: Logger
    private struct State {
        var connection: MQTTConnection?
        var endpoint: MQTTEndpoint?
        var topic = ""
        /// The engine's unit clock as of the last location (`[gps] trust_system_clock` with it): the
        /// will's `tst` is read from it, so a board without a synchronised clock still says when its
        /// connection began in GPS time.
        var clock = UnitClock()
        var trustSystemClock = false
        var stopped = false
        /// The failures logged since the feed was last connected, so that one that keeps failing
        /// (on each node of a cluster, each in its own words) is logged once.
        var problemsLogged: Set<String> = []
    }

    private let state = Mutex(State())

    public init(logger: Logger) {
        self.logger = logger
    }

    /// The connection starts when the engine knows which configuration is in force.
    public func start() {}

    public func stop() {
        let connection = state.withLock {
            $0.stopped = true
            $0.endpoint = nil
            return $0.connection.take()
        }
        connection?.stop(publishingWill: true)
    }

    /// Opens the feed's connection for `configuration` (the one in force), or replaces it when the
    /// broker or login changed: the replaced one ends with its will, as the taxi leaves that broker.
    func connect(_ configuration: UnitConfiguration) {
        let endpoint = endpoint(configuration)
        let topic = OwnTracksLocation.topic(configuration.ownTracks.topic, fleet: configuration.unit.fleet, unit: configuration.unit.id)
        // nil: nothing to do (stopped, or connected to that endpoint already); else the connection it replaces, if any.
        let replacing: MQTTConnection?? = state.withLock { state in
            state.topic = topic
            state.trustSystemClock = configuration.gps.trustSystemClock
            guard !state.stopped, state.endpoint != endpoint || state.connection == nil else { return nil }
            state.endpoint = endpoint
            return .some(state.connection.take())
        }
        guard let replacing else { return }
        // Stopping joins the old loop thread, which may sit in a TCP connect for minutes: not here.
        if let previous = replacing { detachThread { previous.stop(publishingWill: true) } }
        let connection = MQTTConnection(
            endpoint: endpoint, will: nil,
            backoff: ReconnectBackoff(minimumS: configuration.mqtt.reconnectMinS, maximumS: configuration.mqtt.reconnectMaxS),
            logger: logger, threadName: "mqtt-owntracks"
        ) { [weak self] in
            self?.lastWill() ?? Self.lastWill(topic: topic, connectedAtMs: EngineClock.systemTime().milliseconds)
        }
        connection.deliverEvents { [weak self] event in self?.handle(event) }
        let current = state.withLock { state -> Bool in
            guard !state.stopped, state.endpoint == endpoint else { return false }
            state.connection = connection
            return true
        }
        guard current else { return }
        connection.start()
    }

    /// OwnTracks' `lwt` for a connection attempt beginning now, by the unit clock.
    private func lastWill() -> MQTTWill {
        let (topic, clock, trustSystemClock) = state.withLock { ($0.topic, $0.clock, $0.trustSystemClock) }
        return Self.lastWill(topic: topic, connectedAtMs: clock.reading(at: SystemClock.sample(trustSystem: trustSystemClock)).time.milliseconds)
    }

    private static func lastWill(topic: String, connectedAtMs: Int64) -> MQTTWill {
        let payload = (try? OwnTracksLastWill(connectedAtMs: connectedAtMs).json()) ?? []
        return MQTTWill(topic: topic, payload: payload, qos: 0, retain: false)
    }

    /// The newest reported fix, retained on the feed's topic while connected; `clock` is the unit's.
    func publish(_ location: OwnTracksLocation, clock: UnitClock, trustSystemClock: Bool) {
        let (connection, topic) = state.withLock { state in
            (state.clock, state.trustSystemClock) = (clock, trustSystemClock)
            return (state.connection, state.topic)
        }
        guard let connection, connection.connected else { return }
        do {
            _ = try connection.publish(topic: topic, payload: try location.json(), qos: 0, retain: true)
        } catch {
            logger.debug("OwnTracks location not published now", metadata: ["error": "\(error)"])
        }
    }

    /// Replaces the feed's libmosquitto loop thread if it stopped coming round.
    func restartLoopIfSilent(longerThan limit: Duration) {
        state.withLock { $0.connection }?.restartLoopIfSilent(longerThan: limit)
    }

    /// On the feed's loop thread: only logged, never passed to the engine.
    private func handle(_ event: MQTTEvent) {
        switch event {
        case .connected:
            let recovered = state.withLock { state in
                defer { state.problemsLogged = [] }
                return !state.problemsLogged.isEmpty
            }
            if recovered { logger.notice("OwnTracks feed connected") } else { logger.info("OwnTracks feed connected") }
        case .connectFailed(let reason):
            // A bound on what a failing feed can make the unit keep, whatever words its failures come in.
            let isNew = state.withLock { $0.problemsLogged.count < 16 && $0.problemsLogged.insert(reason).inserted }
            if isNew { logger.warning("OwnTracks feed cannot connect; retrying (the unit's own link is not affected)", metadata: ["reason": "\(reason)"]) }
        case .disconnected(_, let reason):
            logger.debug("OwnTracks feed disconnected", metadata: ["reason": "\(reason)"])
        case .published, .refused, .message, .oversized:
            break
        }
    }

    /// The unit's broker nodes, keepalive, protocol and TLS (its CA), with the feed's own login,
    /// client certificate and client id.
    private func endpoint(_ configuration: UnitConfiguration) -> MQTTEndpoint {
        let mqtt = configuration.mqtt
        let ownTracks = configuration.ownTracks
        let (fleet, unit) = (configuration.unit.fleet, configuration.unit.id)
        let credentials: MQTTCredentials
        do {
            let login = try ownTracks.login(fleet: fleet, unit: unit)
            credentials = MQTTCredentials(username: login.username, password: login.password)
        } catch {
            // The daemon checked the files at start; the broker now hears no password and refuses.
            logger.error("cannot use the OwnTracks feed's credentials", metadata: ["problem": "\(error.problems.joined(separator: "; "))"])
            credentials = MQTTCredentials(username: ownTracks.username(fleet: fleet, unit: unit), password: nil)
        }
        let tls = mqtt.tls.map { unitTLS in
            var tls = BrokerLink.tls(unitTLS)
            (tls.certFile, tls.keyFile) = (ownTracks.certFile, ownTracks.keyFile)
            return tls
        }
        return MQTTEndpoint(
            host: mqtt.host, port: mqtt.port, keepaliveS: mqtt.keepaliveS,
            clientID: mqtt.clientID(fleet: fleet, unit: unit) + "-owntracks", cleanSession: true,
            tls: tls, credentials: credentials, protocolVersion: BrokerLink.protocolVersion(mqtt),
            otherNodes: mqtt.nodes.dropFirst().map { MQTTNode(host: $0.host, port: $0.port) })
    }
}
