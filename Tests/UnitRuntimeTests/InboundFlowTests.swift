import Foundation
import Testing
@testable import UnitRuntime

/// The rate limit on inbound MQTT messages, on an injected clock.
@Suite struct InboundFlowTests {
    @Test func aBurstThenTheSustainedRate() {
        var bucket = TokenBucket(capacity: 3, perSecond: 2)
        #expect((0..<5).map { _ in bucket.take(at: 10) } == [true, true, true, false, false])
        #expect(bucket.take(at: 10.4) == false, "0.8 of a token is not a message")
        #expect(bucket.take(at: 10.5) == true)
        #expect(bucket.take(at: 100) && bucket.take(at: 100) && bucket.take(at: 100) && !bucket.take(at: 100), "refills up to the burst only")
        // A clock that goes back gives nothing back.
        #expect(bucket.take(at: 50) == false)
    }

    @Test func aFloodIsDroppedAndCountedOnce() {
        final class Clock: @unchecked Sendable { var now = 0.0 }
        let clock = Clock()
        let flow = InboundFlow(perSecond: 10, now: { clock.now })
        let admitted = (0..<1000).filter { _ in flow.admit() }.count
        #expect(admitted == 50, "five seconds' worth at once")
        #expect(flow.takeDropped() == 1000 - admitted)
        #expect(flow.takeDropped() == 0)
        clock.now = 1
        #expect((0..<100).filter { _ in flow.admit() }.count == 10)
        #expect(flow.droppedSinceStart == 1000 - admitted + 90)
        flow.setRate(perSecond: 100)
        #expect((0..<1000).filter { _ in flow.admit() }.count == 500, "a new rate starts with a full burst")
    }
}
