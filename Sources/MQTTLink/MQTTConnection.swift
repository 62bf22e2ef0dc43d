import CMosquitto
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import Liveness
import Logging
import Platform
import Synchronization

/// The libmosquitto adapter. All unsafe code for the broker lives in this file.
///
/// One dedicated thread (a `BlockingWorker`) runs `mosquitto_loop` (libmosquitto in threaded mode,
/// so `publish` may be called from any thread). Each TCP session gets a fresh `mosquitto` handle, so
/// that nothing from a dead session (its in-memory queue, its message ids) can leak into the next
/// one: our SQLite outbox is the queue, not libmosquitto's. Callbacks only enqueue into `events`.
///
/// Unchecked because of `handle`, a C pointer that `state` guards.
public final class MQTTConnection: BackgroundAdapter, @unchecked Sendable {
    struct HandleSetupFailure: Error {
        let reason: String
        init(_ reason: String) { self.reason = reason }
    }

    public typealias EventHandler = @Sendable (MQTTEvent) -> Void

    /// The events, unless `deliverEvents(to:)` sends them elsewhere.
    public let events: AsyncStream<MQTTEvent>
    private let eventSink: AsyncStream<MQTTEvent>.Continuation
    private let eventHandler: Platform.EventHandler<MQTTEvent>

    private let endpoint: MQTTEndpoint
    private let will: MQTTWill?
    /// Asked before every connection attempt, for a will that names the attempt (`conn`).
    private let willForAttempt: (@Sendable () -> MQTTWill)?
    private let backoff: ReconnectBackoff
    private let logger: Logger

    /// Guards `handle`, `sessionID`, `isStopping`, `worker`; the loop thread only swaps the handle
    /// while holding it, so a concurrent `publish` never sees a destroyed one.
    private let state = POSIXMutex()
    private var handle: OpaquePointer?
    private var sessionID: MQTTSessionID = 0
    private var isStopping = false
    /// The current loop thread. A stalled one is abandoned (it exits as soon as it gets control
    /// back) and replaced by a fresh worker.
    private var worker: BlockingWorker?
    /// Set from libmosquitto callbacks, which run with libmosquitto's own mutexes held: they take
    /// only this lock, never `state`, so the two orders cannot deadlock.
    private let sessions = Mutex(Sessions())

    private struct Sessions {
        var connected: MQTTSessionID?
        /// The session of the current handle: an abandoned loop thread's late CONNACK is ignored.
        var latest: MQTTSessionID = 0
        /// The node the current handle connects to, and so the one in use once it is connected.
        var node: MQTTNode?
    }

    /// The broker node of the connection in use; nil while not connected.
    public var nodeInUse: MQTTNode? {
        sessions.withLock { $0.connected == nil ? nil : $0.node }
    }
    /// When the current loop thread last came round. The systemd watchdog reads it too, allowing
    /// `Liveness.blockingConnectS`: longer than the engine waits before replacing a silent loop, so
    /// systemd restarts the daemon only if even a fresh loop thread stays silent.
    public let heartbeat: Heartbeat
    /// The loop thread's name, as `top -H` shows it: "mqtt-loop" unless a second connection is told apart.
    private let threadName: String

    private static let libraryInitialised: Void = { mosquitto_lib_init() }()

    /// `willForAttempt`, when given, replaces `will` with one made for each connection attempt.
    public init(
        endpoint: MQTTEndpoint, will: MQTTWill?, backoff: ReconnectBackoff, logger: Logger, threadName: String = "mqtt-loop",
        willForAttempt: (@Sendable () -> MQTTWill)? = nil
    ) {
        _ = Self.libraryInitialised
        self.threadName = threadName
        heartbeat = Heartbeat(name: threadName, allowingSilenceS: Liveness.blockingConnectS)
        self.endpoint = endpoint
        self.will = will
        self.willForAttempt = willForAttempt
        self.backoff = backoff
        self.logger = logger
        let (events, eventSink) = AsyncStream.makeStream(of: MQTTEvent.self, bufferingPolicy: .unbounded)
        (self.events, self.eventSink) = (events, eventSink)
        eventHandler = Platform.EventHandler { eventSink.yield($0) }
    }

    /// Hands every event to `handler` on the thread that has it (the loop thread, in libmosquitto's
    /// callbacks) instead of to `events`: for a consumer with a queue of its own (the engine), which
    /// spares each PUBACK a hop through a task. Call before `start()`.
    public func deliverEvents(to handler: @escaping EventHandler) {
        eventHandler.replace(with: handler)
    }

    public func start() {
        state.lock()
        defer { state.unlock() }
        guard !isStopping, worker == nil else { return }
        startLoopThread()
    }

    /// Caller holds `state`.
    private func startLoopThread() {
        let worker = BlockingWorker(name: threadName, heartbeat: heartbeat)
        self.worker = worker
        beat()
        worker.start { [self] in runLoop(on: worker) }
    }

    /// Disconnects cleanly (no last will) and waits for the loop thread to end.
    public func stop() {
        stop(publishingWill: false)
    }

    /// `publishingWill`: the broker publishes the will as it would for a connection that died, so a
    /// clean stop says it exactly once (MQTT 5: DISCONNECT with reason 0x04; 3.1.1 has no such
    /// DISCONNECT, and the connection is closed without one).
    public func stop(publishingWill: Bool) {
        state.lock()
        let running = isStopping ? nil : worker
        isStopping = true
        if let handle {
            if !publishingWill {
                mosquitto_disconnect(handle)
            } else if endpoint.protocolVersion == .v5 {
                mosquitto_disconnect_v5(handle, Int32(MQTT_RC_DISCONNECT_WITH_WILL_MSG.rawValue), nil)
            }
        }
        state.unlock()
        running?.stop()
        eventSink.finish()
    }

    /// How long ago the loop thread last came round; it does at least once a second when healthy.
    public var loopSilence: Duration {
        ContinuousClock.now - heartbeat.current.lastBeat
    }

    /// A loop thread that stopped coming round (stuck in a blocking call, or gone) is abandoned
    /// and a fresh one started, with a fresh handle and session. Returns true if it restarted.
    @discardableResult
    public func restartLoopIfSilent(longerThan limit: Duration) -> Bool {
        state.lock()
        defer { state.unlock() }
        guard !isStopping, let stalled = worker, loopSilence > limit else { return false }
        logger.error("the MQTT loop thread stopped responding; starting a new one", metadata: ["silent_for": "\(loopSilence)"])
        if let session = sessions.withLock({ $0.connected.take() }) {
            yield(.disconnected(session, reason: "loop thread stalled"))
        }
        handle = nil
        stalled.abandon()
        startLoopThread()
        return true
    }

    private func beat() {
        heartbeat.beat(allowingSilenceS: Liveness.blockingConnectS)
    }

    fileprivate var maximumPayloadBytes: Int? { endpoint.maximumPayloadBytes }

    public var connected: Bool {
        sessions.withLock { $0.connected != nil }
    }

    /// Hands one message to libmosquitto. Refuses while disconnected, so nothing piles up in
    /// libmosquitto's unbounded in-memory queue.
    /// `messageExpiryS` (MQTT 5 only, ignored on 3.1.1): the broker drops the message if it cannot
    /// deliver it to a subscriber within that many seconds (an offer nobody can answer in time).
    public func publish(
        topic: String, payload: [UInt8], qos: Int32, retain: Bool, messageExpiryS: UInt32? = nil
    ) throws(MQTTLinkError) -> MQTTPublishTicket {
        var properties: OpaquePointer?
        defer { mosquitto_property_free_all(&properties) }
        if let messageExpiryS, endpoint.protocolVersion == .v5 {
            let rc = mosquitto_property_add_int32(&properties, Int32(MQTT_PROP_MESSAGE_EXPIRY_INTERVAL.rawValue), messageExpiryS)
            guard rc == MOSQ_ERR_SUCCESS.rawValue else { throw Self.error(rc) }
        }
        state.lock()
        defer { state.unlock() }
        guard let handle, connected else { throw .notConnected }
        var messageID: Int32 = 0
        let rc = payload.withUnsafeBytes { bytes in
            mosquitto_publish_v5(handle, &messageID, topic, Int32(bytes.count), bytes.baseAddress, qos, retain, properties)
        }
        guard rc == MOSQ_ERR_SUCCESS.rawValue else { throw Self.error(rc) }
        return MQTTPublishTicket(session: sessionID, messageID: messageID)
    }

    public func subscribe(_ pattern: String, qos: Int32) throws(MQTTLinkError) {
        state.lock()
        defer { state.unlock() }
        guard let handle, connected else { throw .notConnected }
        let rc = mosquitto_subscribe(handle, nil, pattern, qos)
        guard rc == MOSQ_ERR_SUCCESS.rawValue else { throw Self.error(rc) }
    }

    public func unsubscribe(_ pattern: String) throws(MQTTLinkError) {
        state.lock()
        defer { state.unlock() }
        guard let handle, connected else { throw .notConnected }
        let rc = mosquitto_unsubscribe(handle, nil, pattern)
        guard rc == MOSQ_ERR_SUCCESS.rawValue else { throw Self.error(rc) }
    }

    /// Drops the current session; the loop reconnects after the usual backoff.
    public func dropConnection() {
        state.lock()
        if let handle { mosquitto_disconnect(handle) }
        state.unlock()
    }

    // MARK: - Loop thread

    private func runLoop(on worker: BlockingWorker) {
        var rotation = NodeRotation(count: endpoint.nodes.count)
        var random = SystemRandomNumberGenerator()
        while !worker.isStopping {
            beat()
            let node = endpoint.nodes[rotation.index]
            // With several nodes the reason says which one failed.
            let failedAt = endpoint.nodes.count > 1 ? "\(node): " : ""
            let handle: OpaquePointer
            switch makeHandle() {
            case .success(let created):
                handle = created
            case .failure(let failure):
                yield(.connectFailed(reason: failedAt + failure.reason))
                waitBeforeRetry(backoff.delay(attempt: rotation.moveOn(), using: &random), on: worker)
                continue
            }
            sessions.withLock { $0.node = node }
            let rc = connect(handle, to: node)
            if rc != MOSQ_ERR_SUCCESS.rawValue {
                yield(.connectFailed(reason: failedAt + Self.failureReason(rc, handle)))
            } else {
                var everConnected = false
                while !worker.isStopping {
                    beat()
                    let loopRC = mosquitto_loop(handle, 1000, 1)
                    if connected, !everConnected {
                        rotation.connected()
                        everConnected = true
                        if endpoint.nodes.count > 1 { logger.info("connected to broker node", metadata: ["node": "\(node)"]) }
                    }
                    if loopRC != MOSQ_ERR_SUCCESS.rawValue {
                        // A TLS handshake the broker rejects (our certificate) fails here, before any
                        // CONNACK; a CONNACK that refused us was reported already, with its reason.
                        if !everConnected, !CallbackSink.refusedConnection(handle) { yield(.connectFailed(reason: failedAt + Self.failureReason(loopRC, handle))) }
                        break
                    }
                }
            }
            destroy(handle)
            if !worker.isStopping {
                waitBeforeRetry(backoff.delay(attempt: rotation.moveOn(), using: &random), on: worker)
            }
        }
    }

    /// MQTT 5 asks for the session expiry interval in the CONNECT packet: without it a broker ends
    /// a persistent session (and drops what it queued for us) as soon as we go.
    private func connect(_ handle: OpaquePointer, to node: MQTTNode) -> Int32 {
        var properties: OpaquePointer?
        defer { mosquitto_property_free_all(&properties) }
        if endpoint.protocolVersion == .v5, !endpoint.cleanSession {
            let rc = mosquitto_property_add_int32(&properties, Int32(MQTT_PROP_SESSION_EXPIRY_INTERVAL.rawValue), endpoint.sessionExpiryS)
            if rc != MOSQ_ERR_SUCCESS.rawValue { return rc }
        }
        // A broker then drops what is larger instead of sending it: it never reaches our memory.
        if endpoint.protocolVersion == .v5, let maximum = endpoint.maximumPacketSize {
            let rc = mosquitto_property_add_int32(&properties, Int32(MQTT_PROP_MAXIMUM_PACKET_SIZE.rawValue), maximum)
            if rc != MOSQ_ERR_SUCCESS.rawValue { return rc }
        }
        return mosquitto_connect_bind_v5(handle, node.host, Int32(node.port), Int32(endpoint.keepaliveS), nil, properties)
    }

    /// The heartbeat keeps going during a long backoff (the worker beats at least once a second).
    private func waitBeforeRetry(_ seconds: Double, on worker: BlockingWorker) {
        worker.sleep(seconds, beatAllowingSilenceS: Liveness.blockingConnectS)
    }

    private func makeHandle() -> Result<OpaquePointer, HandleSetupFailure> {
        state.lock()
        sessionID += 1
        let sink = CallbackSink(session: sessionID, connection: self)
        let session = sessionID
        state.unlock()
        sessions.withLock { $0.latest = session }
        let context = Unmanaged.passRetained(sink).toOpaque()
        guard let handle = mosquitto_new(endpoint.clientID, endpoint.cleanSession, context) else {
            Unmanaged<CallbackSink>.fromOpaque(context).release()
            return .failure(HandleSetupFailure("cannot create a libmosquitto handle"))
        }
        mosquitto_threaded_set(handle, true)
        let version: Int32 =
            switch endpoint.protocolVersion {
            case .v5: MQTT_PROTOCOL_V5
            case .v311: MQTT_PROTOCOL_V311
            }
        _ = mosquitto_int_option(handle, MOSQ_OPT_PROTOCOL_VERSION, version)
        if endpoint.protocolVersion == .v5 { _ = mosquitto_int_option(handle, MOSQ_OPT_RECEIVE_MAXIMUM, Int32(endpoint.receiveMaximum)) }
        // Small packets (a reply, a PUBACK) must not wait for the broker's delayed ACK: Nagle would add ~40 ms.
        _ = mosquitto_int_option(handle, MOSQ_OPT_TCP_NODELAY, 1)
        // libmosquitto explains TLS failures (OpenSSL's reasons) only through its log.
        mosquitto_log_callback_set(handle) { _, context, level, text in
            guard let text, level & (MOSQ_LOG_ERR | MOSQ_LOG_WARNING) != 0 else { return }
            CallbackSink.from(context).libraryLogged(String(cString: text))
        }
        if let failure = configureSecurity(handle) {
            destroy(handle)
            return .failure(failure)
        }
        if let will = willForAttempt?() ?? will {
            _ = will.payload.withUnsafeBytes { bytes in
                mosquitto_will_set(handle, will.topic, Int32(bytes.count), bytes.baseAddress, will.qos, will.retain)
            }
        }
        mosquitto_connect_callback_set(handle) { mosq, context, rc in
            // libmosquitto formats a line for every packet while a log callback is set; what it logs
            // is only wanted to explain a failed connect, so a connected session stops listening.
            if rc == 0 { mosquitto_log_callback_set(mosq, nil) }
            CallbackSink.from(context).connected(rc: rc)
        }
        mosquitto_disconnect_callback_set(handle) { _, context, rc in
            CallbackSink.from(context).disconnected(rc: rc)
        }
        // The v5 callback serves both versions: on 3.1.1 the reason code is always 0.
        mosquitto_publish_v5_callback_set(handle) { _, context, mid, reasonCode, _ in
            CallbackSink.from(context).published(mid: mid, reasonCode: reasonCode)
        }
        mosquitto_message_callback_set(handle) { _, context, message in
            guard let message else { return }
            CallbackSink.from(context).received(message.pointee)
        }
        state.lock()
        self.handle = handle
        state.unlock()
        return .success(handle)
    }

    /// TLS with client certificates and username/password, as the endpoint asks. Any failure is
    /// reported with what libmosquitto logged about it.
    private func configureSecurity(_ handle: OpaquePointer) -> HandleSetupFailure? {
        if let credentials = endpoint.credentials {
            let rc = mosquitto_username_pw_set(handle, credentials.username, credentials.password)
            if rc != MOSQ_ERR_SUCCESS.rawValue { return HandleSetupFailure("credentials: \(Self.describe(rc))") }
        }
        guard let tls = endpoint.tls else { return nil }
        // Without a CA file, OpenSSL's default verify paths (which SSL_CERT_FILE and SSL_CERT_DIR
        // override). mosquitto_tls_set still insists on a cafile or capath: the OS's CA directory.
        var rc = mosquitto_int_option(handle, MOSQ_OPT_TLS_USE_OS_CERTS, tls.caFile == nil ? 1 : 0)
        if rc != MOSQ_ERR_SUCCESS.rawValue { return HandleSetupFailure("TLS with the system's CAs: \(Self.describe(rc))") }
        rc = mosquitto_tls_set(handle, tls.caFile, tls.caFile == nil ? MQTTTLS.systemCADirectory : nil, tls.certFile, tls.keyFile, nil)
        if rc != MOSQ_ERR_SUCCESS.rawValue {
            return HandleSetupFailure("TLS setup (cafile \(tls.caFile ?? "system"), certfile \(tls.certFile ?? "-"), keyfile \(tls.keyFile ?? "-")): \(Self.failureReason(rc, handle))")
        }
        // Verify the broker's certificate, and speak at least `tls_version`.
        rc = mosquitto_tls_opts_set(handle, 1, tls.version, nil)
        if rc != MOSQ_ERR_SUCCESS.rawValue { return HandleSetupFailure("TLS options: \(Self.describe(rc))") }
        if let alpn = tls.alpn {
            rc = mosquitto_string_option(handle, MOSQ_OPT_TLS_ALPN, alpn)
            if rc != MOSQ_ERR_SUCCESS.rawValue { return HandleSetupFailure("TLS ALPN \(alpn): \(Self.describe(rc))") }
        }
        return nil
    }

    private func destroy(_ handle: OpaquePointer) {
        state.lock()
        // An abandoned loop thread must not take the current thread's handle away.
        let wasCurrent = self.handle == handle
        if wasCurrent { self.handle = nil }
        state.unlock()
        if wasCurrent, let session = sessions.withLock({ $0.connected.take() }) {
            yield(.disconnected(session, reason: "connection lost"))
        }
        let context = mosquitto_userdata(handle)
        mosquitto_destroy(handle)
        if let context { Unmanaged<CallbackSink>.fromOpaque(context).release() }
    }

    fileprivate func markConnected(_ session: MQTTSessionID) {
        let isLatest = sessions.withLock {
            guard session == $0.latest else { return false }
            $0.connected = session
            return true
        }
        if isLatest { yield(.connected(session)) }
    }

    fileprivate func markDisconnected(_ session: MQTTSessionID, reason: String) {
        let wasConnected = sessions.withLock {
            guard $0.connected == session else { return false }
            $0.connected = nil
            return true
        }
        if wasConnected { yield(.disconnected(session, reason: reason)) }
    }

    fileprivate func yield(_ event: MQTTEvent) {
        eventHandler.deliver(event)
    }

    static func describe(_ rc: Int32) -> String {
        if rc == MOSQ_ERR_ERRNO.rawValue { return String(cString: strerror(errno)) }
        return String(cString: mosquitto_strerror(rc))
    }

    /// The return code's text, with what libmosquitto logged (OpenSSL's reason) and a hint.
    private static func failureReason(_ rc: Int32, _ handle: OpaquePointer) -> String {
        // Without its final '.', libmosquitto's text reads on into OpenSSL's reason after a colon.
        var reason = describe(rc)
        while reason.hasSuffix(".") { reason.removeLast() }
        if let context = mosquitto_userdata(handle) {
            let logged = CallbackSink.from(context).takeLibraryLog()
            if !logged.isEmpty { reason += ": " + logged.joined(separator: "; ") }
        }
        if let hint = TLSFailureHint.explain(reason) { reason += " (\(hint))" }
        return reason
    }

    private static func error(_ rc: Int32) -> MQTTLinkError {
        .libmosquitto(code: rc, text: describe(rc))
    }
}

/// The per-session context libmosquitto hands back to the C callbacks.
private final class CallbackSink {
    let session: MQTTSessionID
    unowned let connection: MQTTConnection

    init(session: MQTTSessionID, connection: MQTTConnection) {
        self.session = session
        self.connection = connection
    }

    /// Error and warning lines libmosquitto logged since the last failure was reported.
    private var libraryLog: [String] = []

    func libraryLogged(_ line: String) {
        // A broken handshake can log many lines; the first few say why.
        if libraryLog.count < 4 { libraryLog.append(line) }
    }

    func takeLibraryLog() -> [String] {
        defer { libraryLog = [] }
        return libraryLog
    }

    static func from(_ context: UnsafeMutableRawPointer?) -> CallbackSink {
        Unmanaged<CallbackSink>.fromOpaque(context!).takeUnretainedValue()
    }

    /// Set when the broker's CONNACK refused the connection.
    private(set) var refused = false

    static func refusedConnection(_ handle: OpaquePointer) -> Bool {
        mosquitto_userdata(handle).map { from($0).refused } ?? false
    }

    /// MQTT 5 CONNACK reason codes that mean what a 3.1.1 return code meant: the same words in the
    /// log whichever the protocol (bad protocol version, client id, server unavailable, login, authorisation).
    private static let connackOf311: [Int32: Int32] = [0x84: 1, 0x85: 2, 0x88: 3, 0x86: 4, 0x87: 5]

    func connected(rc: Int32) {
        if rc == 0 {
            connection.markConnected(session)
            return
        }
        refused = true
        // On MQTT 5 the CONNACK carries a reason code (0x80 and above), on 3.1.1 a return code (1-5).
        let text: String
        if rc < 0x80 {
            text = String(cString: mosquitto_connack_string(rc))
        } else if let old = Self.connackOf311[rc] {
            text = String(cString: mosquitto_connack_string(old)) + " (reason code 0x\(String(rc, radix: 16)))"
        } else {
            text = String(cString: mosquitto_reason_string(rc)) + " (reason code 0x\(String(rc, radix: 16)))"
        }
        connection.yield(.connectFailed(reason: text))
    }

    func disconnected(rc: Int32) {
        connection.markDisconnected(session, reason: rc == 0 ? "disconnected" : MQTTConnection.describe(rc))
    }

    func published(mid: Int32, reasonCode: Int32) {
        let ticket = MQTTPublishTicket(session: session, messageID: mid)
        // 0x80 and above are failures (MQTT 5, 2.4); 0x10 "no matching subscribers" is a success.
        connection.yield(reasonCode >= 0x80 ? .refused(ticket, reasonCode: reasonCode) : .published(ticket))
    }

    func received(_ message: mosquitto_message) {
        // libmosquitto has read the packet; no copy of a payload over the limit is made.
        if let limit = connection.maximumPayloadBytes, Int(message.payloadlen) > limit {
            connection.yield(.oversized(topic: String(cString: message.topic), bytes: Int(message.payloadlen), retained: message.retain))
            return
        }
        let payload: [UInt8] =
            if let bytes = message.payload, message.payloadlen > 0 {
                Array(UnsafeRawBufferPointer(start: bytes, count: Int(message.payloadlen)))
            } else {
                []
            }
        connection.yield(
            .message(MQTTMessage(topic: String(cString: message.topic), payload: payload, qos: message.qos, retained: message.retain))
        )
    }
}
