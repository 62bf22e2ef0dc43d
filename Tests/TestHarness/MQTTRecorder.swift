import Foundation
import Logging
import MQTTLink

/// A subscriber made of the project's own libmosquitto adapter: records every message it sees.
public final class MQTTRecorder: @unchecked Sendable {
    private let connection: MQTTConnection
    private let lock = NSLock()
    private var received: [MQTTMessage] = []
    /// When each of `received` arrived.
    private var arrived: [ContinuousClock.Instant] = []
    private var pump: Task<Void, Never>?

    /// `persistentSession`: the broker queues QoS 1 messages for this recorder while it reconnects.
    /// `receiveMaximum`: how many messages the broker may have in flight to it, all of which it sends
    /// again after a broker restart (MQTT 5).
    public init(
        port: Int, subscribe patterns: [String], clientID: String = "recorder-\(UUID().uuidString.prefix(8))",
        persistentSession: Bool = false, protocolVersion: MQTTProtocolVersion = .v5, receiveMaximum: UInt16 = 20
    ) async throws {
        connection = MQTTConnection(
            endpoint: MQTTEndpoint(
                host: "127.0.0.1", port: port, keepaliveS: 10, clientID: clientID, cleanSession: !persistentSession,
                protocolVersion: protocolVersion, receiveMaximum: receiveMaximum),
            will: nil, backoff: ReconnectBackoff(minimumS: 0.1, maximumS: 0.5), logger: Logger(label: "recorder"))
        // Outside taxi/, where only a "#" subscriber would see it (an ACL's "#" does not match "$" topics).
        let probeTopic = "recorder-probe/" + clientID
        pump = Task { [connection, weak self] in
            for await event in connection.events {
                switch event {
                case .connected:
                    for pattern in patterns + [probeTopic] { try? connection.subscribe(pattern, qos: 1) }
                    self?.lock.withLock { self?.connections += 1 }
                case .message(let message) where message.topic == probeTopic:
                    self?.lock.withLock { self?.probed = true }
                case .message(let message):
                    self?.lock.withLock {
                        self?.received.append(message)
                        self?.arrived.append(.now)
                    }
                default:
                    break
                }
            }
        }
        connection.start()
        try await waitUntil("recorder connected to :\(port)", timeoutS: 10) { lock.withLock { connections > 0 } }
        // SUBACK is not reported, but the broker handles a client's packets in order: the probe,
        // published after the subscriptions were sent, comes back once all of them are in place.
        try publish(probeTopic, "")
        try await waitUntil("the recorder's probe back from :\(port) (an ACL may deny \(probeTopic))", timeoutS: 20) {
            lock.withLock { probed }
        }
    }

    private var connections = 0
    private var probed = false

    public var messages: [MQTTMessage] { lock.withLock { received } }

    /// Every message with when it arrived here.
    public var arrivals: [(message: MQTTMessage, at: ContinuousClock.Instant)] {
        lock.withLock { Array(zip(received, arrived)) }
    }

    public func messages(onTopic topic: String) -> [MQTTMessage] { messages.filter { $0.topic == topic } }

    /// Waits until `condition` holds over everything recorded so far.
    @discardableResult
    public func waitFor(_ what: String, timeoutS: Double = 20, _ condition: ([MQTTMessage]) -> Bool) async throws -> [MQTTMessage] {
        try await waitUntil(what, timeoutS: timeoutS, detail: { "\(self.messages.count) messages recorded" }) { condition(messages) }
        return messages
    }

    public func publish(_ topic: String, _ payload: String, retain: Bool = false) throws {
        try publish(topic, bytes: Array(payload.utf8), retain: retain)
    }

    /// `messageExpiryS`: MQTT 5's message expiry interval.
    public func publish(_ topic: String, bytes: [UInt8], retain: Bool = false, messageExpiryS: UInt32? = nil) throws {
        _ = try connection.publish(topic: topic, payload: bytes, qos: 1, retain: retain, messageExpiryS: messageExpiryS)
    }

    public func stop() {
        connection.stop()
        pump?.cancel()
    }

    deinit { stop() }
}

extension MQTTMessage {
    public var json: [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(payload))) as? [String: Any]
    }

    public var text: String { String(decoding: payload, as: UTF8.self) }
}
