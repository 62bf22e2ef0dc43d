/// `[mqtt] max_publish_rate`: a token bucket that refills at `ratePerS` and holds a tenth of a
/// second's worth (at least one message), for brokers that disconnect a client publishing too fast
/// (AWS IoT Core: 100 messages a second per connection). A tenth: any one second then sees at most
/// 10 % over the rate (a full bucket and a second's refill), while the drain still hands messages
/// over in groups (one commit per group, not per message).
///
/// Every publish spends a token (`spend`); the outbox drain takes only what `available` allows and
/// waits `wait` for the rest. A status or a telemetry message never waits: it may run the bucket
/// into debt (at most a bucket's worth), which the drain then waits out, so the rate over a second
/// holds for everything published.
///
/// Pure bookkeeping: the caller passes the time, so the edge cases are tested with an invented clock.
struct PublishRateLimit {
    let ratePerS: Double
    let capacity: Double
    private(set) var tokens: Double
    /// Refills are sums of fractions: 0.999999... after the exact wait must count as a token.
    private static let slack = 1e-9
    private var updatedAt: ContinuousClock.Instant?

    /// `ratePerS` above 0 (the configuration checks 0...100 000; 0 means no limit and no bucket).
    init(ratePerS: Double) {
        self.ratePerS = max(ratePerS, 0.001)
        capacity = max(1, self.ratePerS / 10)
        tokens = capacity
    }

    /// Whole messages that may be published at `now`.
    mutating func available(at now: ContinuousClock.Instant) -> Int {
        refill(at: now)
        return max(0, Int((tokens + Self.slack).rounded(.down)))
    }

    /// How long after `now` one message may be published; zero when one may now.
    mutating func wait(at now: ContinuousClock.Instant) -> Duration {
        refill(at: now)
        guard tokens + Self.slack < 1 else { return .zero }
        // Rounded up to a millisecond: waking a little early would find no token and wait again.
        let ms = ((1 - tokens) / ratePerS * 1000).rounded(.up)
        return .milliseconds(Int64(min(ms, 3_600_000)))
    }

    /// How long the bucket takes to fill up: the drain hands messages over in groups this far apart.
    var refillTime: Duration {
        .milliseconds(Int64(min((capacity / ratePerS * 1000).rounded(.up), 3_600_000)))
    }

    /// One message was published at `now`.
    mutating func spend(at now: ContinuousClock.Instant) {
        refill(at: now)
        tokens = max(tokens - 1, -capacity)
    }

    private mutating func refill(at now: ContinuousClock.Instant) {
        guard let updatedAt else {
            updatedAt = now
            return
        }
        // An earlier `now` (a caller's stale reading) adds nothing and does not move the bucket back.
        guard now > updatedAt else { return }
        let elapsedS = (now - updatedAt) / .seconds(1)
        tokens = min(capacity, tokens + elapsedS * ratePerS)
        self.updatedAt = now
    }
}

/// What the outbox may hand over now under the rate limit.
enum PublishAllowance: Equatable {
    case unlimited
    /// `count` messages now; more after `wait` (a bucket's worth later, or the next token when
    /// the bucket is in debt).
    case limited(count: Int, wait: Duration)
}
