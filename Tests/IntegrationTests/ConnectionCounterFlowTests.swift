import Foundation
import MQTTLink
import TestHarness
import Testing

/// The connection counter (`conn`) on the real parts: the retained `status` and the last will carry
/// the number of the connection they belong to, it grows across restarts, and a will the broker
/// publishes for a connection already replaced is told apart by its smaller number.
@Suite(.serialized) struct ConnectionCounterFlowTests {
    static func conn(_ message: MQTTMessage) -> Int? { message.json?["conn"] as? Int }

    @Test func statusAndWillCarryAConnectionNumberThatGrowsAcrossRestarts() async throws {
        let scratch = try ScratchDirectory()
        let broker = try MosquittoBroker(in: scratch)
        let unit = try UnitUnderTest(mqttPort: broker.port, gpsdPort: try Loopback.freePort(), in: scratch)
        let topic = unit.topicBase + "status"
        let recorder = try await MQTTRecorder(port: broker.port, subscribe: [topic], clientID: "recorder-conn", persistentSession: true)
        func online() -> [MQTTMessage] { recorder.messages(onTopic: topic).filter { $0.json?["online"] as? Bool == true } }
        func wills() -> [MQTTMessage] { recorder.messages(onTopic: topic).filter { $0.json?["online"] as? Bool == false } }

        try await unit.start()
        try await recorder.waitFor("the first status") { _ in !online().isEmpty }
        let first = try #require(online().last.flatMap(Self.conn))
        #expect(first >= 1)

        // Killed: the broker publishes the will of that connection once keepalive_s (5) runs out.
        unit.killHard()
        try await recorder.waitFor("the will", timeoutS: 15) { _ in !wills().isEmpty }
        #expect(wills().compactMap(Self.conn) == [first])

        // Killed and started at once: the new connection takes the session over, and the broker may
        // publish the old connection's will after the new status. Its number says it is stale.
        try await unit.start()
        try await recorder.waitFor("the second status") { _ in online().count >= 2 }
        unit.killHard()
        try await unit.start()
        try await recorder.waitFor("the third status and the second will", timeoutS: 15) { _ in online().count >= 3 && wills().count >= 2 }
        let numbers = online().compactMap(Self.conn)
        #expect(numbers.count == online().count && numbers == numbers.sorted() && Set(numbers).count == numbers.count, "\(numbers)")
        let current = try #require(numbers.last)
        #expect(wills().compactMap(Self.conn).allSatisfy { $0 < current }, "every will is of an older connection")
        #expect(try ContractCheck.problems(in: recorder.messages) == [])
        unit.stop()
    }
}
