import CMosquitto
import Foundation
import Logging

/// The libmosquitto adapter. All unsafe code for the broker lives in this file.
///
/// One dedicated thread runs `mosquitto_loop` (libmosquitto in threaded mode, so `publish` may be
/// called from any thread). Each TCP session gets a fresh `mosquitto` handle, so that nothing from a
/// dead session (its in-memory queue, its message ids) can leak into the next one: our SQLite outbox
/// is the queue, not libmosquitto's. Callbacks only enqueue into `events`.
public final class MQTTConnection: @unchecked Sendable {
    public let events: AsyncStream<MQTTEvent>
    private let eventSink: AsyncStream<MQTTEvent>.Continuation

    private let endpoint: MQTTEndpoint
    private let will: MQTTWill?
    private let backoff: ReconnectBackoff
    private let logger: Logger

    /// Guards `handle`, `sessionID`, `isStopping`; the loop thread only swaps the handle while
    /// holding it, so a concurrent `publish` never sees a destroyed one.
    private let state = NSCondition()
    private var handle: OpaquePointer?
    private var sessionID: MQTTSessionID = 0
    private var isStopping = false
    /// Set from libmosquitto callbacks, which run with libmosquitto's own mutexes held: they take
    /// only this lock, never `state`, so the two orders cannot deadlock.
    private let connectedLock = NSLock()
    private var connectedSession: MQTTSessionID?
    private var loopThread: Thread?
    private let loopFinished = DispatchSemaphore(value: 0)

    private static let libraryInitialised: Void = { mosquitto_lib_init() }()

    public init(endpoint: MQTTEndpoint, will: MQTTWill?, backoff: ReconnectBackoff, logger: Logger) {
        _ = Self.libraryInitialised
        self.endpoint = endpoint
        self.will = will
        self.backoff = backoff
        self.logger = logger
        (events, eventSink) = AsyncStream.makeStream(of: MQTTEvent.self, bufferingPolicy: .unbounded)
    }

    public func start() {
        let thread = Thread { [self] in
            runLoop()
            loopFinished.signal()
        }
        thread.name = "mqtt-loop"
        loopThread = thread
        thread.start()
    }

    /// Disconnects cleanly (no last will) and waits for the loop thread to end.
    public func stop() {
        state.lock()
        let wasRunning = loopThread != nil && !isStopping
        isStopping = true
        if let handle { mosquitto_disconnect(handle) }
        state.broadcast()
        state.unlock()
        if wasRunning { loopFinished.wait() }
        eventSink.finish()
    }

    public var connected: Bool {
        connectedLock.withLock { connectedSession != nil }
    }

    /// Hands one message to libmosquitto. Refuses while disconnected, so nothing piles up in
    /// libmosquitto's unbounded in-memory queue.
    public func publish(topic: String, payload: [UInt8], qos: Int32, retain: Bool) throws(MQTTLinkError) -> MQTTPublishTicket {
        state.lock()
        defer { state.unlock() }
        guard let handle, connected else { throw .notConnected }
        var messageID: Int32 = 0
        let rc = payload.withUnsafeBytes { bytes in
            mosquitto_publish(handle, &messageID, topic, Int32(bytes.count), bytes.baseAddress, qos, retain)
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

    /// Drops the current session; the loop reconnects after the usual backoff.
    public func dropConnection() {
        state.lock()
        if let handle { mosquitto_disconnect(handle) }
        state.unlock()
    }

    // MARK: - Loop thread

    private func runLoop() {
        var failures = 0
        var random = SystemRandomNumberGenerator()
        while !stopping {
            guard let handle = makeHandle() else {
                eventSink.yield(.connectFailed(reason: "cannot create a libmosquitto handle"))
                waitBeforeRetry(backoff.delay(attempt: failures, using: &random))
                failures += 1
                continue
            }
            let rc = mosquitto_connect(handle, endpoint.host, Int32(endpoint.port), Int32(endpoint.keepaliveS))
            if rc != MOSQ_ERR_SUCCESS.rawValue {
                eventSink.yield(.connectFailed(reason: Self.describe(rc)))
            } else {
                while !stopping {
                    let loopRC = mosquitto_loop(handle, 1000, 1)
                    if connected { failures = 0 }
                    if loopRC != MOSQ_ERR_SUCCESS.rawValue { break }
                }
            }
            destroy(handle)
            if !stopping {
                waitBeforeRetry(backoff.delay(attempt: failures, using: &random))
                failures += 1
            }
        }
    }

    private var stopping: Bool {
        state.lock()
        defer { state.unlock() }
        return isStopping
    }

    private func waitBeforeRetry(_ seconds: Double) {
        state.lock()
        defer { state.unlock() }
        let deadline = Date(timeIntervalSinceNow: seconds)
        while !isStopping && state.wait(until: deadline) {}
    }

    private func makeHandle() -> OpaquePointer? {
        state.lock()
        sessionID += 1
        let sink = CallbackSink(session: sessionID, connection: self)
        state.unlock()
        let context = Unmanaged.passRetained(sink).toOpaque()
        guard let handle = mosquitto_new(endpoint.clientID, endpoint.cleanSession, context) else {
            Unmanaged<CallbackSink>.fromOpaque(context).release()
            return nil
        }
        mosquitto_threaded_set(handle, true)
        _ = mosquitto_int_option(handle, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V311)
        // Small packets (a reply, a PUBACK) must not wait for the broker's delayed ACK: Nagle would add ~40 ms.
        _ = mosquitto_int_option(handle, MOSQ_OPT_TCP_NODELAY, 1)
        if let will {
            _ = will.payload.withUnsafeBytes { bytes in
                mosquitto_will_set(handle, will.topic, Int32(bytes.count), bytes.baseAddress, will.qos, will.retain)
            }
        }
        mosquitto_connect_callback_set(handle) { _, context, rc in
            CallbackSink.from(context).connected(rc: rc)
        }
        mosquitto_disconnect_callback_set(handle) { _, context, rc in
            CallbackSink.from(context).disconnected(rc: rc)
        }
        mosquitto_publish_callback_set(handle) { _, context, mid in
            CallbackSink.from(context).published(mid: mid)
        }
        mosquitto_message_callback_set(handle) { _, context, message in
            guard let message else { return }
            CallbackSink.from(context).received(message.pointee)
        }
        state.lock()
        self.handle = handle
        state.unlock()
        return handle
    }

    private func destroy(_ handle: OpaquePointer) {
        state.lock()
        self.handle = nil
        state.unlock()
        if let session = connectedLock.withLock({ connectedSession.take() }) {
            eventSink.yield(.disconnected(session, reason: "connection lost"))
        }
        let context = mosquitto_userdata(handle)
        mosquitto_destroy(handle)
        if let context { Unmanaged<CallbackSink>.fromOpaque(context).release() }
    }

    fileprivate func markConnected(_ session: MQTTSessionID) {
        connectedLock.withLock { connectedSession = session }
        eventSink.yield(.connected(session))
    }

    fileprivate func markDisconnected(_ session: MQTTSessionID, reason: String) {
        let wasConnected = connectedLock.withLock {
            guard connectedSession == session else { return false }
            connectedSession = nil
            return true
        }
        if wasConnected { eventSink.yield(.disconnected(session, reason: reason)) }
    }

    fileprivate func yield(_ event: MQTTEvent) {
        eventSink.yield(event)
    }

    static func describe(_ rc: Int32) -> String {
        if rc == MOSQ_ERR_ERRNO.rawValue { return String(cString: strerror(errno)) }
        return String(cString: mosquitto_strerror(rc))
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

    static func from(_ context: UnsafeMutableRawPointer?) -> CallbackSink {
        Unmanaged<CallbackSink>.fromOpaque(context!).takeUnretainedValue()
    }

    func connected(rc: Int32) {
        if rc == 0 {
            connection.markConnected(session)
        } else {
            connection.yield(.connectFailed(reason: String(cString: mosquitto_connack_string(rc))))
        }
    }

    func disconnected(rc: Int32) {
        connection.markDisconnected(session, reason: rc == 0 ? "disconnected" : MQTTConnection.describe(rc))
    }

    func published(mid: Int32) {
        connection.yield(.published(MQTTPublishTicket(session: session, messageID: mid)))
    }

    func received(_ message: mosquitto_message) {
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
