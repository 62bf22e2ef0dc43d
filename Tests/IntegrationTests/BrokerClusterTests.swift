import Foundation
import MQTTLink
import TestHarness
import Testing

/// `[mqtt] hosts`: a unit on a cluster of two mosquitto nodes moves to the other node when its node
/// goes away in the middle of a drain, and nothing it had queued is lost.
@Suite(.serialized) struct BrokerClusterTests {
    @Test func theUnitMovesToTheOtherNodeMidDrainAndEveryMessageArrives() async throws {
        let scratch = try ScratchDirectory()
        let first = try MosquittoBroker(in: scratch)
        let second = try MosquittoBroker(in: scratch)
        let unit = try UnitUnderTest(mqttPort: first.port, gpsdPort: try Loopback.freePort(), in: scratch)
        // Small batches: a backlog long enough to stop a node in the middle of it.
        try String(contentsOfFile: unit.configPath, encoding: .utf8)
            .replacingOccurrences(
                of: "host = \"127.0.0.1\"\nport = \(first.port)\n",
                with: "hosts = [\"127.0.0.1:\(first.port)\", \"127.0.0.1:\(second.port)\"]\nbatch_max = 5\nmax_inflight = 10\n")
            .write(toFile: unit.configPath, atomically: true, encoding: .utf8)
        let fixes = 20_000
        let injected = try OutboxTests.inject(into: unit.storePath, fixes: fixes, events: 20, replies: 5)
        let onFirst = try await MQTTRecorder(port: first.port, subscribe: [unit.topicBase + "#"], clientID: "recorder-first", persistentSession: true)
        let onSecond = try await MQTTRecorder(port: second.port, subscribe: [unit.topicBase + "#"], clientID: "recorder-second", persistentSession: true)
        let posTopic = unit.topicBase + "pos"

        try await unit.start()
        try await onFirst.waitFor("the drain under way on the first node") { ReceivedPositions.all($0, topic: posTopic).count >= 100 }
        first.stop()
        let stoppedAt = ContinuousClock.now
        try await onSecond.waitFor("the unit on the second node") { !ReceivedPositions.all($0, topic: posTopic).isEmpty }
        // reconnect_max_s is 1: the next node within the backoff, with room for a slow machine.
        let moved = try #require(onSecond.arrivals.first { $0.message.topic == posTopic }).at - stoppedAt
        #expect(moved < .seconds(5), "moved after \(moved)")
        try await unit.waitForStatus("outbox empty", timeoutS: 90) { $0.broker.connected && $0.outbox.depth == 0 && $0.outbox.inFlight == 0 }
        // The status and the log name the node in use, not the first one of `hosts`.
        #expect(try unit.status().config?.broker == "127.0.0.1:\(second.port)")
        #expect(unit.log.contains("connected to broker broker=127.0.0.1:\(second.port)"), "\(unit.log)")

        // What the first node acknowledged and had not passed on yet is kept for its subscriber.
        try first.start()
        try await Task.sleep(for: .seconds(2))
        let all = onFirst.messages + onSecond.messages
        let points = Set(ReceivedPositions.all(all, topic: posTopic).flatMap { $0.points.map(\.t) })
        #expect(points == Set((0..<fixes).map { OutboxTests.fix($0).time.milliseconds }), "every fix arrives (dedup by id)")
        #expect(Set(all.filter { $0.topic.hasSuffix("/job/reply") }.compactMap(OutboxTests.id)) == Set(injected.replyIDs))
        #expect(Set(all.filter { $0.topic.hasSuffix("/event") }.compactMap(OutboxTests.id)) == Set(injected.eventIDs))

        // Replies (then events) before positions on the first node, where the drain began.
        let order = onFirst.messages.filter { $0.topic != unit.topicBase + "status" }
            .map { $0.topic.hasSuffix("/job/reply") ? 0 : $0.topic.hasSuffix("/event") ? 1 : 2 }
        #expect(order == order.sorted(), "replies before events before positions")
        #expect(unit.log.contains("node=127.0.0.1:\(second.port)"), "\(unit.log)")
        unit.stop()
    }
}
