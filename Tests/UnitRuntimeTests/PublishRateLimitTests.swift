import Testing
@testable import UnitRuntime

@Suite struct PublishRateLimitTests {
    let start = ContinuousClock.now

    @Test func aFullBucketAllowsATenthOfASecondsWorthThenWaitsForTheNextToken() {
        var bucket = PublishRateLimit(ratePerS: 100)
        #expect(bucket.available(at: start) == 10)
        for _ in 0..<10 { bucket.spend(at: start) }
        #expect(bucket.available(at: start) == 0)
        #expect(bucket.wait(at: start) == .milliseconds(10))
        #expect(bucket.available(at: start + .milliseconds(10)) == 1)
        #expect(bucket.wait(at: start + .milliseconds(10)) == .zero)
    }

    @Test func refillStopsAtATenthOfASecondsWorth() {
        var bucket = PublishRateLimit(ratePerS: 100)
        bucket.spend(at: start)
        #expect(bucket.available(at: start + .seconds(3600)) == 10)
    }

    /// Over any one second: the full bucket and a second's refill, 10 % over the rate at most.
    @Test func aDrainThatTakesEverythingAllowedStaysWithinTheRatePlusTheBucket() {
        var bucket = PublishRateLimit(ratePerS: 100)
        var sent: [Duration] = []
        var now = Duration.zero
        while now < .seconds(3) {
            for _ in 0..<bucket.available(at: start + now) {
                bucket.spend(at: start + now)
                sent.append(now)
            }
            now += max(bucket.wait(at: start + now), .milliseconds(1))
        }
        let busiest = sent.map { from in sent.count { $0 >= from && $0 < from + .seconds(1) } }.max() ?? 0
        #expect(busiest <= 110)
        #expect(sent.count >= 300)
    }

    @Test func aRateBelowOneStillHoldsOneMessageAndWaitsUpToItsPeriod() {
        var bucket = PublishRateLimit(ratePerS: 0.5)
        #expect(bucket.available(at: start) == 1)
        bucket.spend(at: start)
        #expect(bucket.available(at: start) == 0)
        #expect(bucket.wait(at: start) == .seconds(2))
        #expect(bucket.available(at: start + .milliseconds(1999)) == 0)
        #expect(bucket.available(at: start + .seconds(2)) == 1)
    }

    /// A status or a telemetry message never waits; the drain waits out the debt.
    @Test func spendingBeyondTheBucketIsADebtOfAtMostABucket() {
        var bucket = PublishRateLimit(ratePerS: 100)
        for _ in 0..<50 { bucket.spend(at: start) }
        #expect(bucket.tokens == -10)
        #expect(bucket.wait(at: start) == .milliseconds(110))
        #expect(bucket.available(at: start + .milliseconds(109)) == 0)
        #expect(bucket.available(at: start + .milliseconds(110)) == 1)
    }

    @Test func anEarlierReadingNeitherRefillsNorMovesTheBucketBack() {
        var bucket = PublishRateLimit(ratePerS: 10)
        bucket.spend(at: start + .seconds(1))
        #expect(bucket.available(at: start) == 0)
        // Still measured from the later reading: 100 ms after it is one token, not eleven.
        #expect(bucket.available(at: start + .milliseconds(1100)) == 1)
    }

    @Test func theHighestRateAllowedWaitsLessThanAMillisecondRoundedUp() {
        var bucket = PublishRateLimit(ratePerS: 100_000)
        for _ in 0..<10_000 { bucket.spend(at: start) }
        #expect(bucket.wait(at: start) == .milliseconds(1))
    }
}

extension PublishRateLimitTests {
    @Test func theDrainsGroupsAreABucketApart() {
        #expect(PublishRateLimit(ratePerS: 100).refillTime == .milliseconds(100))
        #expect(PublishRateLimit(ratePerS: 0.5).refillTime == .seconds(2))
        #expect(PublishRateLimit(ratePerS: 100_000).refillTime == .milliseconds(100))
    }
}
