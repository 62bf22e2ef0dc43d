import Logging
import MQTTLink
import TestHarness
import Testing

@Suite(.serialized) struct LoopWatchdogTests {
    @Test func aHealthyLoopKeepsBeatingAndASilentOneIsReplaced() async throws {
        let scratch = try ScratchDirectory()
        let broker = try MosquittoBroker(in: scratch)
        let connection = MQTTConnection(
            endpoint: MQTTEndpoint(host: "127.0.0.1", port: broker.port, keepaliveS: 10, clientID: "watchdog-test"),
            will: nil, backoff: ReconnectBackoff(minimumS: 0.1, maximumS: 0.5), logger: Logger(label: "test"))
        var events = connection.events.makeAsyncIterator()
        connection.start()
        defer { connection.stop() }
        guard case .connected(let first) = await events.next() else { Issue.record("no connection"); return }

        try await Task.sleep(for: .milliseconds(1500))
        #expect(connection.loopSilence < .seconds(1.5), "the loop comes round at least once a second")
        #expect(!connection.restartLoopIfSilent(longerThan: .seconds(5)))

        // Any loop is "silent" for longer than zero: the watchdog must replace it cleanly.
        #expect(connection.restartLoopIfSilent(longerThan: .zero))
        guard case .disconnected(let ended, _) = await events.next() else { Issue.record("no disconnect"); return }
        #expect(ended == first)
        guard case .connected(let second) = await events.next() else { Issue.record("no reconnection"); return }
        #expect(second != first)
        let ticket = try connection.publish(topic: "watchdog/test", payload: Array("x".utf8), qos: 1, retain: false)
        #expect(await events.next() == .published(ticket))
    }
}
