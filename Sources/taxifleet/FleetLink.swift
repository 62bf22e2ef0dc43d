import FleetConsole
import Foundation
import Logging
import MQTTLink

/// One session with the fleet's broker through the project's libmosquitto adapter. Events are
/// taken one at a time by the command's own loop (`next(before:)`); subscriptions are made again
/// after a reconnect, as the session is clean.
final class FleetLink: @unchecked Sendable {
    private let connection: MQTTConnection
    private let lock = NSLock()
    private var pending: [MQTTEvent] = []
    private var filters: [String] = []

    private init(endpoint: MQTTEndpoint) {
        var logger = Logger(label: "taxifleet")
        logger.logLevel = .critical
        connection = MQTTConnection(endpoint: endpoint, will: nil, backoff: ReconnectBackoff(minimumS: 0.5, maximumS: 5), logger: logger)
        connection.deliverEvents { [weak self] event in
            guard let self else { return }
            lock.withLock { pending.append(event) }
        }
    }

    /// Connected, or a `Failure` naming why not within `timeoutS`.
    static func open(_ settings: BrokerSettings, timeoutS: Double) async throws -> FleetLink {
        let link = FleetLink(endpoint: settings.endpoint)
        link.connection.start()
        let deadline = ContinuousClock.now + .milliseconds(Int(timeoutS * 1000))
        var lastProblem = "no answer"
        while let event = await link.next(before: deadline) {
            switch event {
            case .connected:
                return link
            case .connectFailed(let reason), .disconnected(_, let reason):
                lastProblem = reason
            case .published, .refused, .message, .oversized:
                break
            }
        }
        link.close()
        let node = settings.endpoint.nodes[0]
        throw Failure("cannot connect to the broker \(node) within \(timeoutS) s: \(lastProblem)", exitCode: Failure.unreachable)
    }

    func close() { connection.stop() }

    /// Subscribes now and after every reconnect.
    func subscribe(_ patterns: [String]) throws {
        filters += patterns
        for pattern in patterns {
            do {
                try connection.subscribe(pattern, qos: 1)
            } catch {
                throw Failure("cannot subscribe to \(pattern): \(error)", exitCode: Failure.unreachable)
            }
        }
    }

    /// The next event, or nil once `deadline` passed. A new session gets the subscriptions again.
    func next(before deadline: ContinuousClock.Instant) async -> MQTTEvent? {
        while true {
            if let event = lock.withLock({ pending.isEmpty ? nil : pending.removeFirst() }) {
                if case .connected = event {
                    for pattern in filters { try? connection.subscribe(pattern, qos: 1) }
                }
                return event
            }
            guard ContinuousClock.now < deadline else { return nil }
            try? await Task.sleep(for: .milliseconds(10))
        }
    }

    func publish(_ topic: String, _ payload: [UInt8], retain: Bool) throws -> MQTTPublishTicket {
        do {
            return try connection.publish(topic: topic, payload: payload, qos: 1, retain: retain)
        } catch {
            throw Failure("cannot publish on \(topic): \(error)", exitCode: Failure.unreachable)
        }
    }

    /// The retained messages of `patterns`: subscribes and takes messages until no retained one
    /// came for `quietS` (the broker sends a subscription's retained messages at once, and MQTTLink
    /// does not report the SUBACK that would mark their end). Live messages on the way are taken
    /// too, but do not prolong the wait: a moving fleet never goes quiet.
    func retained(_ patterns: [String], quietS: Double = 0.5, limitS: Double = 30, take: (MQTTMessage) -> Void) async throws {
        try subscribe(patterns)
        let limit = ContinuousClock.now + .milliseconds(Int(limitS * 1000))
        var quietUntil = ContinuousClock.now + .milliseconds(Int(quietS * 1000))
        while let event = await next(before: min(quietUntil, limit)) {
            if case .message(let message) = event {
                take(message)
                if message.retained { quietUntil = ContinuousClock.now + .milliseconds(Int(quietS * 1000)) }
            }
        }
    }
}
