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
        let admitted = (0..<1000).filter { _ in flow.admit(topic: "taxi/f/T1/job/offer", retained: false) }.count
        #expect(admitted == 50, "five seconds' worth at once")
        #expect(flow.takeDropped() == 1000 - admitted)
        #expect(flow.takeDropped() == 0)
        clock.now = 1
        #expect((0..<100).filter { _ in flow.admit(topic: "taxi/f/T1/job/offer", retained: false) }.count == 10)
        #expect(flow.droppedSinceStart == 1000 - admitted + 90)
        flow.setRate(perSecond: 100)
        #expect((0..<1000).filter { _ in flow.admit(topic: "taxi/f/T1/job/offer", retained: false) }.count == 500, "a new rate starts with a full burst")
    }

    /// Each sender has its own budget: offers and driver messages flooding in spend theirs, and the
    /// fleet's documents and commands, alarm acknowledgements and cancels still get through.
    @Test func aFloodOnOneLaneLeavesTheOthersTheirBudget() {
        final class Clock: @unchecked Sendable { var now = 0.0 }
        let clock = Clock()
        let flow = InboundFlow(perSecond: 10, now: { clock.now })
        for suffix in ["job/offer", "msg", "queue", "job/update"] {
            _ = (0..<1000).map { _ in flow.admit(topic: "taxi/f/T1/\(suffix)", retained: false) }
        }
        #expect(!flow.admit(topic: "taxi/f/T1/job/offer", retained: false))
        for topic in ["taxi/f/T1/cmd", "taxi/f/T1/config", "taxi/f/config"] {
            #expect(flow.admit(topic: topic, retained: false), "\(topic)")
        }
        for topic in ["taxi/f/T1/sos/ack", "taxi/f/T1/job/cancel"] {
            #expect(flow.admit(topic: topic, retained: false), "\(topic)")
        }
        // The fleet's lane has its own five seconds' worth, whatever the others did.
        #expect((0..<100).filter { _ in flow.admit(topic: "taxi/f/T1/cmd", retained: false) }.count == 47)
    }

    /// The broker's retained copy (one per subscribed topic, at a connection) is always admitted,
    /// even when its lane's budget is spent.
    @Test func retainedDocumentsAreAlwaysAdmitted() {
        let flow = InboundFlow(perSecond: 1, now: { 0 })
        _ = (0..<100).map { _ in flow.admit(topic: "taxi/f/config", retained: false) }
        #expect(!flow.admit(topic: "taxi/f/config", retained: false))
        #expect(flow.admit(topic: "taxi/f/config", retained: true))
        #expect(flow.admit(topic: "taxi/f/T1/config", retained: true))
    }

    @Test func lanesFollowTheCatalogue() {
        #expect(InboundLane(topic: "taxi/f/T1/job/offer") == .dispatch)
        #expect(InboundLane(topic: "taxi/f/T1/msg") == .dispatch)
        #expect(InboundLane(topic: "taxi/f/T1/queue") == .dispatch)
        #expect(InboundLane(topic: "taxi/f/T1/job/update") == .dispatch)
        #expect(InboundLane(topic: "taxi/f/T1/job/cancel") == .urgent)
        #expect(InboundLane(topic: "taxi/f/T1/sos/ack") == .urgent)
        #expect(InboundLane(topic: "taxi/f/T1/cmd") == .fleet)
        #expect(InboundLane(topic: "taxi/f/T1/config") == .fleet)
        #expect(InboundLane(topic: "taxi/f/config") == .fleet)
        #expect(InboundLane(topic: "taxi/f/T1/unknown") == .dispatch)
    }
}
