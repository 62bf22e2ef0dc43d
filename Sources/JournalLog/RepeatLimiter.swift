/// Lets the first of a burst of identical lines through, swallows the repeats for a window, and
/// lets the next one after the window through with how many were swallowed. So a broker that stays
/// down for an hour costs one line per minute, not one per reconnect attempt.
///
/// Pure: the caller passes the time, so the rule is tested with an invented clock.
public struct RepeatLimiter<Instant: InstantProtocol>: Sendable where Instant.Duration: Sendable {
    public enum Decision: Equatable, Sendable {
        /// Write the line; `suppressed` identical lines were swallowed since the last one written.
        case emit(suppressed: Int)
        case suppress
    }

    private struct Burst: Sendable {
        var windowEnds: Instant
        var suppressed: Int
    }

    private let window: Instant.Duration
    /// Bounds memory when lines carry ever-changing text.
    private let maxKeys: Int
    private var bursts: [String: Burst] = [:]

    public init(window: Instant.Duration, maxKeys: Int = 256) {
        self.window = window
        self.maxKeys = maxKeys
    }

    public mutating func record(_ key: String, at now: Instant) -> Decision {
        if var burst = bursts[key], now < burst.windowEnds {
            burst.suppressed += 1
            bursts[key] = burst
            return .suppress
        }
        let suppressed = bursts[key]?.suppressed ?? 0
        if bursts[key] == nil && bursts.count >= maxKeys {
            bursts = bursts.filter { now < $0.value.windowEnds }
        }
        bursts[key] = Burst(windowEnds: now.advanced(by: window), suppressed: 0)
        return .emit(suppressed: suppressed)
    }
}
