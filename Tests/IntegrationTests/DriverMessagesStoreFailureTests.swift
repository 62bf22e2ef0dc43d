import ControlSocket
import Foundation
import MQTTLink
import TestHarness
import Testing

/// A message that arrives while the store cannot be written is still the driver's: shown at once,
/// and written with the whole inbox once the store has room, so it survives a restart.
@Suite(.serialized) struct DriverMessagesStoreFailureTests {
    @Test(.enabled(if: getuid() == 0, "mounting a tmpfs needs root"))
    func aMessageReceivedOnAFullStoreIsKeptOnceItHasRoom() async throws {
        let scratch = try ScratchDirectory()
        let disk = try OutboxTests.SmallDisk(in: scratch, kilobytes: 2048)
        let broker = try MosquittoBroker(in: scratch)
        let unit = try UnitUnderTest(mqttPort: broker.port, gpsdPort: try Loopback.freePort(), in: scratch)
        try OutboxTests.moveStore(of: unit, to: disk.path)
        let recorder = try await MQTTRecorder(port: broker.port, subscribe: [unit.topicBase + "#"])
        try await unit.start()
        try await unit.waitForStatus("connected") { $0.broker.connected }

        try disk.fill()
        try recorder.publish(unit.topicBase + "msg", #"{"id":"m1","text":"Call the office"}"#)
        try await waitUntil("the unit to fail to store it", timeoutS: 10, detail: { unit.log }) {
            unit.log.contains("cannot store the step")
        }
        try disk.free()
        try await waitUntil("the inbox written again", timeoutS: 10, detail: { unit.log }) {
            unit.log.contains("the driver's messages are stored again")
        }

        unit.stop()
        try await unit.start()
        try await unit.waitForStatus("connected again") { $0.broker.connected }
        let read = try unit.request(ControlRequest(cmd: .press, input: "msg"))
        #expect(read.ok)
        #expect(read.message?.contains("Message m1 (1/1): Call the office") == true, "\(String(describing: read.message))")
        try await recorder.waitFor("the read receipt") { messages in
            messages.contains { $0.topic == unit.topicBase + "msg/read" && $0.json?["msg"] as? String == "m1" }
        }
        unit.stop()
        recorder.stop()
    }
}
