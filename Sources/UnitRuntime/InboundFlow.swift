#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Platform
import Synchronization
import TaxiProtocol
import UnitCore

/// Whose budget an inbound message draws on, by its topic in the catalogue: a flood on one lane
/// (offers, driver messages) never starves another (the fleet's documents and commands, alarm
/// acknowledgements and cancels).
enum InboundLane: Int, CaseIterable, Sendable {
    /// The fleet's signed config documents and commands.
    case fleet
    /// What must get through a flood of offers: `sos/ack` and `job/cancel`.
    case urgent
    /// Offers, updates, driver messages, queue places, and anything else.
    case dispatch

    init(topic: String) {
        let entry = ContractTopic.allCases.first { topic.hasSuffix("/" + $0.suffix) }
        if entry == .sosAck || entry == .jobCancel {
            self = .urgent
        } else if entry?.publisher == .fleet {
            self = .fleet
        } else {
            self = .dispatch
        }
    }
}

/// Admits inbound MQTT messages at a bounded rate (a token bucket per lane, each of
/// `[mqtt] inbound_per_s`), so that a flood from a broker or a misbehaving dispatcher cannot grow the
/// engine's inbox, the store, the WAL or the journal, nor crowd out another sender's messages: what
/// is over its lane's rate is dropped before it is parsed, and counted. A retained message is always
/// admitted: the broker sends one per subscribed topic at a connection (the fleet's documents),
/// never more. Called from the broker's thread, read from the engine loop.
final class InboundFlow: Sendable {
    /// Seconds' worth admitted at once after a quiet spell: a reconnect brings the queued offers and
    /// the retained fleet documents together.
    static let burstS = 5.0

    private struct State {
        var buckets: [TokenBucket]
        var dropped = 0
        var droppedInAll = 0
    }

    private let state: Mutex<State>
    private let now: @Sendable () -> Double

    init(perSecond: Double, now: @escaping @Sendable () -> Double = { Monotonic.seconds() }) {
        self.now = now
        state = Mutex(State(buckets: Self.buckets(perSecond: perSecond)))
    }

    private static func buckets(perSecond: Double) -> [TokenBucket] {
        InboundLane.allCases.map { _ in TokenBucket(capacity: perSecond * burstS, perSecond: perSecond) }
    }

    /// The fleet changed `[mqtt] inbound_per_s`.
    func setRate(perSecond: Double) {
        state.withLock {
            guard $0.buckets[0].perSecond != perSecond else { return }
            $0.buckets = Self.buckets(perSecond: perSecond)
        }
    }

    func admit(topic: String, retained: Bool) -> Bool {
        if retained { return true }
        let lane = InboundLane(topic: topic).rawValue
        let time = now()
        return state.withLock {
            if $0.buckets[lane].take(at: time) { return true }
            $0.dropped += 1
            $0.droppedInAll = $0.droppedInAll.saturatingAdd(1)
            return false
        }
    }

    /// Dropped since the last call (for the log), and in all since start (for `status`).
    func takeDropped() -> Int {
        state.withLock { state in
            defer { state.dropped = 0 }
            return state.dropped
        }
    }

    var droppedSinceStart: Int { state.withLock { $0.droppedInAll } }
}

/// `capacity` tokens, refilled at `perSecond`; pure, on an injected monotonic time in seconds.
struct TokenBucket: Sendable, Equatable {
    let capacity: Double
    let perSecond: Double
    private var tokens: Double
    private var last: Double?

    init(capacity: Double, perSecond: Double) {
        self.capacity = capacity
        self.perSecond = perSecond
        tokens = capacity
    }

    mutating func take(at time: Double) -> Bool {
        if let last, time > last { tokens = min(capacity, tokens + (time - last) * perSecond) }
        last = max(last ?? time, time)
        guard tokens >= 1 else { return false }
        tokens -= 1
        return true
    }
}
