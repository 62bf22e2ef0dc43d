#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Synchronization
import UnitCore

/// Admits inbound MQTT messages at a bounded rate (a token bucket, `[mqtt] inbound_per_s`), so that
/// a flood from a broker or a misbehaving dispatcher cannot grow the engine's inbox, the store, the
/// WAL or the journal: what is over the rate is dropped before it is parsed, and counted. Called from
/// the broker's thread, read from the engine loop.
final class InboundFlow: Sendable {
    /// Seconds' worth admitted at once after a quiet spell: a reconnect brings the queued offers and
    /// the retained fleet documents together.
    static let burstS = 5.0

    private struct State {
        var bucket: TokenBucket
        var dropped = 0
        var droppedInAll = 0
    }

    private let state: Mutex<State>
    private let now: @Sendable () -> Double

    init(perSecond: Double, now: @escaping @Sendable () -> Double = { ProcessInfo.processInfo.systemUptime }) {
        self.now = now
        state = Mutex(State(bucket: TokenBucket(capacity: perSecond * Self.burstS, perSecond: perSecond)))
    }

    /// The fleet changed `[mqtt] inbound_per_s`.
    func setRate(perSecond: Double) {
        state.withLock {
            guard $0.bucket.perSecond != perSecond else { return }
            $0.bucket = TokenBucket(capacity: perSecond * Self.burstS, perSecond: perSecond)
        }
    }

    func admit() -> Bool {
        let time = now()
        return state.withLock {
            if $0.bucket.take(at: time) { return true }
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
