import Foundation
import MQTTLink
import TestHarness
import Testing

/// The wire formats of protocol 2 on the real parts (docs/protocol.md, "Versions", "status"): what a
/// subscriber gets from a running unit on a real broker.
@Suite(.serialized) struct WireFormatTests {
    @Test func theRetainedStatusIsTheUnitsBirthMessage() async throws {
        let version = try runCommand(Corpus.binary("taxiunitd"), ["--version"])
        #expect(version.exitCode == 0)
        let software = version.output.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(!software.isEmpty)
        #expect(try runCommand(Corpus.binary("taxiunitctl"), ["--version"]).output.trimmingCharacters(in: .whitespacesAndNewlines) == software)

        let scratch = try ScratchDirectory()
        let broker = try MosquittoBroker(in: scratch)
        let gps = try FakeGPS(log: Corpus.log(Corpus.steadyLog), in: scratch)
        let unit = try UnitUnderTest(mqttPort: broker.port, gpsdPort: gps.port, in: scratch)
        let recorder = try await MQTTRecorder(port: broker.port, subscribe: [unit.topicBase + "status"])
        try await unit.start()
        let birth = try #require(try await recorder.waitFor("the online status") { $0.last?.json?["online"] as? Bool == true }.last?.json)
        #expect(birth["protocol"] as? Int == 2)
        #expect(birth["software"] as? String == software)
        #expect(birth["store"] as? String == "persistent")
        #expect(birth["config_versions"] as? [String: Int] == [:], "no fleet document was published")
        let uptime = try #require(birth["uptime_s"] as? Int)
        #expect(uptime >= 0 && uptime < 30)

        // Once fixes flow, the next status (a state change) says how old the newest is.
        try await unit.waitForStatus("a fix") { $0.gps.lastFixTime != nil }
        _ = try unit.request(.init(cmd: .press, input: "duty"))
        let messages = try await recorder.waitFor("the available status") { $0.last?.json?["state"] as? String == "available" }
        let available = try #require(messages.last?.json)
        let fixAge = try #require(available["fix_age_ms"] as? Int)
        #expect(fixAge >= 0 && fixAge < 10_000)
        #expect(available["software"] as? String == software && available["protocol"] as? Int == 2)
        #expect(try ContractCheck.problems(in: messages).isEmpty)
        unit.stop()
    }
}
