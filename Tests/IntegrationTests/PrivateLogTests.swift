import Foundation
import TestHarness
import Testing

/// At `info` the daemon's journal holds no payload contents: no pickup address, no message text,
/// not even from a message it refuses; at `debug` they may appear, escaped and bounded.
@Suite(.serialized) struct PrivateLogTests {
    @Test func infoLogsNoAddressesOrMessageTexts() async throws {
        let scratch = try ScratchDirectory()
        let broker = try MosquittoBroker(in: scratch)
        let unit = try UnitUnderTest(mqttPort: broker.port, gpsdPort: try Loopback.freePort(), in: scratch)
        let recorder = try await MQTTRecorder(port: broker.port, subscribe: [unit.topicBase + "#"])
        try await unit.start(arguments: ["--log-level", "info"])
        try await unit.waitForStatus("broker connected") { $0.broker.connected }
        let socket = ["--socket", unit.controlSocket]
        #expect(try runCommand(Corpus.binary("taxiunitctl"), ["press", "duty"] + socket).exitCode == 0)
        try await unit.waitForStatus("available") { $0.state == "available" }

        try recorder.publish(
            unit.topicBase + "job/offer", #"{"job":"J1","pickup":{"lat":46.5,"lon":7.5,"address":"Geheimgasse 17"},"passengers":1}"#)
        try recorder.publish(unit.topicBase + "msg", #"{"id":"msg-1","text":"Call Ms Privata on 555 0199"}"#)
        try recorder.publish(unit.topicBase + "job/offer", #"{"job":"J2","pickup":"Verborgenweg 3"}"#)
        try await unit.waitForStatus("the offer shown") { $0.state == "offered" }
        try await waitUntil("the three messages logged", timeoutS: 15, detail: { unit.log }) {
            unit.log.components(separatedBy: "received").count - 1 >= 2 && unit.log.contains("malformed message")
        }
        for secret in ["Geheimgasse", "Privata", "555 0199", "Verborgenweg"] {
            #expect(!unit.log.contains(secret), "\(secret) is in the info log:\n\(unit.log)")
        }

        // debug may show them, escaped and bounded.
        #expect(try runCommand(Corpus.binary("taxiunitctl"), ["log-level", "debug"] + socket).exitCode == 0)
        try recorder.publish(unit.topicBase + "msg", #"{"id":"msg-2","text":"Debug may show this"}"#)
        try await waitUntil("the debug payload", timeoutS: 15, detail: { unit.log }) { unit.log.contains("Debug may show this") }
        unit.stop()
        recorder.stop()
    }
}
