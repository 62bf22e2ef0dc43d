import Foundation
import MQTTLink
import TestHarness
import Testing

/// MQTT 5 on the real parts: a publish the broker refuses (mosquitto's ACL answers a denied QoS 1
/// publish with PUBACK reason code 0x87 on MQTT 5) stays in the outbox; `[mqtt] max_publish_rate`
/// measured at a subscriber; MQTT 3.1.1 still selectable.
@Suite(.serialized) struct MQTT5TransportTests {
    static let denyReplies = ["topic deny taxi/+/+/job/reply", "topic readwrite #"]

    @Test func aReplyTheBrokerRefusesStaysInTheOutboxIsCountedAndGoesOnceAllowed() async throws {
        let scratch = try ScratchDirectory()
        let acl = try MosquittoBroker.writeACL(Self.denyReplies, in: scratch)
        let broker = try MosquittoBroker(in: scratch, listenerSettings: acl)
        let unit = try UnitUnderTest(
            mqttPort: broker.port, gpsdPort: try Loopback.freePort(), in: scratch, extraTOML: "[telemetry]\ninterval_s = 1\n")
        let injected = try OutboxTests.inject(into: unit.storePath, fixes: 20, events: 1, replies: 1)
        let recorder = try await MQTTRecorder(
            port: broker.port, subscribe: [unit.topicBase + "#"], clientID: "recorder-acl", persistentSession: true)
        try await unit.start()

        // The telemetry counts the refusals, and the reply is still waiting while the rest went.
        try await recorder.waitFor("telemetry counting a refused publish") { messages in
            messages.contains { (($0.json?["counters"] as? [String: Any])?["messages_refused"] as? Int ?? 0) >= 2 }
        }
        let waiting = try unit.status()
        #expect(waiting.outbox.reply == 1 && waiting.outbox.event == 0 && waiting.outbox.position == 0, "\(waiting.outbox)")
        #expect(recorder.messages(onTopic: unit.topicBase + "job/reply").isEmpty)
        #expect(recorder.messages(onTopic: unit.topicBase + "event").compactMap(OutboxTests.id) == injected.eventIDs)
        // Logged, but not once per retry.
        let refusalLines = unit.log.components(separatedBy: "the broker refused a message").count - 1
        #expect(refusalLines == 1, "\(unit.log)")
        #expect(unit.log.contains("0x87"))
        #expect(broker.log.contains("as taxiunitd-test-T1 (p5,"), "\(broker.log)")

        // The ACL is fixed and the broker reloads it: the reply goes at its next retry, within the
        // longest backoff (60 s) and an upkeep tick, in the same session.
        _ = try MosquittoBroker.writeACL(["topic readwrite #"], in: scratch)
        broker.reload()
        let delivered = try await recorder.waitFor("the reply delivered", timeoutS: 65) { !$0.filter { $0.topic.hasSuffix("/job/reply") }.isEmpty }
        #expect(delivered.filter { $0.topic.hasSuffix("/job/reply") }.compactMap(OutboxTests.id) == injected.replyIDs)
        try await unit.waitForStatus("outbox empty") { $0.outbox.depth == 0 }
        // Sent again by the backoff, not by a new session.
        #expect(unit.log.components(separatedBy: "connected to broker").count - 1 == 1, "\(unit.log)")
        unit.stop()
    }

    /// A refused publish is retried with a backoff that grows: a few publishes in seconds, not a loop.
    @Test func aRefusedReplyIsRetriedWithBackoffNotInALoop() async throws {
        let scratch = try ScratchDirectory()
        let acl = try MosquittoBroker.writeACL(Self.denyReplies, in: scratch)
        let broker = try MosquittoBroker(in: scratch, listenerSettings: acl + "\nlog_type all")
        let unit = try UnitUnderTest(mqttPort: broker.port, gpsdPort: try Loopback.freePort(), in: scratch)
        _ = try OutboxTests.inject(into: unit.storePath, fixes: 2, events: 0, replies: 1)
        try await unit.start()
        try await unit.waitForStatus("connected") { $0.broker.connected }
        try await Task.sleep(for: .seconds(14))
        // 1 s, 2 s, 4 s, 8 s on the upkeep tick (2 s): the first publish and two or three retries
        // in 14 s; retrying on every tick would be seven or more.
        let denied = broker.log.split(separator: "\n").filter { $0.contains("PUBLISH from taxiunitd") && $0.contains("job/reply") }.count
        #expect((2...5).contains(denied), "\(denied) publishes of the reply in 14 s")
        #expect(try unit.status().outbox.reply == 1)
        unit.stop()
    }

    @Test func theDrainKeepsToMaxPublishRateMeasuredAtASubscriber() async throws {
        let scratch = try ScratchDirectory()
        let broker = try MosquittoBroker(in: scratch)
        let rate = 40.0
        let unit = try UnitUnderTest(
            mqttPort: broker.port, gpsdPort: try Loopback.freePort(), in: scratch,
            mqttTOML: "max_publish_rate = \(rate)\nbatch_max = 1\nmax_inflight = 50")
        let fixes = 200
        _ = try OutboxTests.inject(into: unit.storePath, fixes: fixes, events: 0, replies: 0)
        let recorder = try await MQTTRecorder(port: broker.port, subscribe: [unit.topicBase + "pos"])
        try await unit.start()
        let arrivals = try await {
            try await recorder.waitFor("the backlog", timeoutS: 30) { $0.count >= fixes }
            return recorder.arrivals.map(\.at)
        }()
        // Any one second: the rate and the bucket (a tenth of a second's worth), plus the status
        // publishes that share the limit but are not recorded here.
        let busiest = arrivals.map { from in arrivals.count { $0 >= from && $0 < from + .seconds(1) } }.max() ?? 0
        #expect(busiest <= Int(rate * 1.1) + 1, "busiest second: \(busiest) messages")
        let spread = try #require(arrivals.last) - arrivals[0]
        #expect(spread >= .seconds(Double(fixes) / rate * 0.85), "\(fixes) messages in \(spread)")
        unit.stop()
    }

    @Test func mqtt311StillDrainsABacklogAndComesBack() async throws {
        let scratch = try ScratchDirectory()
        let broker = try MosquittoBroker(in: scratch)
        let unit = try UnitUnderTest(mqttPort: broker.port, gpsdPort: try Loopback.freePort(), in: scratch, mqttTOML: #"protocol = "3.1.1""#)
        let injected = try OutboxTests.inject(into: unit.storePath, fixes: 300, events: 3, replies: 2)
        let recorder = try await MQTTRecorder(
            port: broker.port, subscribe: [unit.topicBase + "#"], clientID: "recorder-311", persistentSession: true, protocolVersion: .v311)
        try await unit.start()
        try await unit.waitForStatus("outbox empty") { $0.broker.connected && $0.outbox.depth == 0 && $0.outbox.inFlight == 0 }
        broker.stop()
        try await unit.waitForStatus("broker down") { !$0.broker.connected }
        try broker.start()
        try await unit.waitForStatus("back on 3.1.1") { $0.broker.connected }
        let messages = try await recorder.waitFor("replies and events") { messages in
            messages.filter { $0.topic.hasSuffix("/event") || $0.topic.hasSuffix("/job/reply") }.count >= 5
        }
        #expect(Set(messages.filter { $0.topic.hasSuffix("/job/reply") }.compactMap(OutboxTests.id)) == Set(injected.replyIDs))
        // mosquitto names the protocol of each connection: p2 is 3.1.1, p5 is 5.
        #expect(broker.log.contains("as taxiunitd-test-T1 (p2,"), "\(broker.log)")
        #expect(!broker.log.contains("as taxiunitd-test-T1 (p5,"))
        unit.stop()
    }
}

/// Session and message expiry (MQTT 5) on mosquitto.
@Suite(.serialized) struct MQTT5ExpiryTests {
    /// What dispatchsim does to its offers: a message past its expiry is not handed to a subscriber
    /// that comes back later; one without expiry is.
    @Test func aQueuedMessagePastItsExpiryIsDroppedByTheBroker() async throws {
        let scratch = try ScratchDirectory()
        let broker = try MosquittoBroker(in: scratch)
        let topic = "expiry/test"
        let away = try await MQTTRecorder(port: broker.port, subscribe: [topic], clientID: "away", persistentSession: true)
        away.stop()
        let publisher = try await MQTTRecorder(port: broker.port, subscribe: [])
        try publisher.publish(topic, bytes: Array("expires".utf8), messageExpiryS: 1)
        try publisher.publish(topic, bytes: Array("stays".utf8))
        try await Task.sleep(for: .milliseconds(2500))
        let back = try await MQTTRecorder(port: broker.port, subscribe: [topic], clientID: "away", persistentSession: true)
        let received = try await back.waitFor("the queued message") { !$0.isEmpty }
        try await Task.sleep(for: .milliseconds(300))
        #expect(back.messages.map(\.text) == ["stays"], "\(received.map(\.text))")
    }

    /// `[mqtt] session_expiry_s`: a unit away for longer than it comes back to a fresh session, and
    /// what was queued for it is gone; with the default (a day) it is delivered.
    @Test func sessionExpiryDecidesWhetherAnOfferQueuedWhileAwayIsDelivered() async throws {
        let scratch = try ScratchDirectory()
        let broker = try MosquittoBroker(in: scratch)
        let kept = try UnitUnderTest(unitID: "T1", mqttPort: broker.port, gpsdPort: try Loopback.freePort(), in: scratch)
        let expired = try UnitUnderTest(
            unitID: "T2", mqttPort: broker.port, gpsdPort: try Loopback.freePort(), in: scratch, mqttTOML: "session_expiry_s = 1")
        let recorder = try await MQTTRecorder(port: broker.port, subscribe: ["taxi/test/+/job/reply"], persistentSession: true)
        for unit in [kept, expired] {
            try await unit.start()
            try await unit.waitForStatus("\(unit.unitID) connected") { $0.broker.connected }
        }
        // SUBACK is not reported: give the subscriptions a moment before leaving.
        try await Task.sleep(for: .milliseconds(500))
        for unit in [kept, expired] { unit.stop() }
        for unit in [kept, expired] {
            try recorder.publish(unit.topicBase + "job/offer", #"{"job":"J-\#(unit.unitID)","pickup":{"lat":46.5,"lon":7.5},"respond_within_s":60}"#)
        }
        try await Task.sleep(for: .milliseconds(2500))
        for unit in [kept, expired] { try await unit.start() }
        // The unit is off duty: it answers a delivered offer at once.
        try await recorder.waitFor("T1's answer to the offer queued in its session") { messages in
            messages.contains { $0.topic == kept.topicBase + "job/reply" }
        }
        try await expired.waitForStatus("T2 connected again") { $0.broker.connected }
        try await Task.sleep(for: .seconds(2))
        #expect(recorder.messages(onTopic: expired.topicBase + "job/reply").isEmpty, "T2's session expired with the offer in it")
        for unit in [kept, expired] { unit.stop() }
    }
}
