import ControlSocket
import DriverKeys
import Foundation
import TestHarness
import Testing

/// The ignition input on the real parts: the daemon reads a FIFO standing in for a gpio-keys
/// switch device; what it says reaches the broker on `event` and `status`.
@Suite(.serialized) struct IgnitionFlowTests {
    /// The switch (SW_DOCK) changes, framed as the kernel frames it.
    static func ignition(_ on: Bool) -> [UInt8] {
        InputEventDecoder.encode(InputEventRecord(type: IgnitionSignal.switchType, code: 5, value: on ? 1 : 0))
            + InputEventDecoder.encode(InputEventRecord(type: 0, code: 0, value: 0))
    }

    @Test func theIgnitionIsToldAndOffTakesAnAvailableDriverOffDuty() async throws {
        let scratch = try ScratchDirectory()
        let broker = try MosquittoBroker(in: scratch)
        let fifo = try EvdevFIFO(path: scratch.file("ignition"))
        let unit = try UnitUnderTest(
            mqttPort: broker.port, gpsdPort: try Loopback.freePort(), in: scratch,
            extraTOML: """
                [input.ignition]
                device = "\(fifo.path)"
                code = "SW_DOCK"
                [ignition]
                off_while_available = "off_duty"
                off_duty_after_min = 0.03

                """)
        let recorder = try await MQTTRecorder(port: broker.port, subscribe: [unit.topicBase + "#"])
        defer {
            unit.stop()
            recorder.stop()
        }
        func events() -> [[String: Any]] { recorder.messages(onTopic: unit.topicBase + "event").compactMap(\.json) }
        func statuses() -> [[String: Any]] { recorder.messages(onTopic: unit.topicBase + "status").compactMap(\.json) }
        try await unit.start()
        try await unit.waitForStatus("broker connected") { $0.broker.connected }
        try await fifo.connect()
        #expect(try unit.status().ignition == nil, "a FIFO says nothing of the ignition until it changes")
        #expect(try unit.request(ControlRequest(cmd: .press, input: "duty")).message?.hasPrefix("On duty") == true)

        try fifo.send(Self.ignition(false))
        try await recorder.waitFor("the ignition off on event") { _ in
            events().contains { $0["type"] as? String == "ignition" && $0["ignition"] as? String == "off" && $0["state"] as? String == "available" }
        }
        // Then, after off_duty_after_min with the ignition still off, the driver is off duty.
        try await recorder.waitFor("off duty because of the ignition") { _ in
            events().contains { $0["to"] as? String == "off_duty" && $0["reason"] as? String == "ignition_off" }
        }
        #expect(statuses().last?["ignition"] as? String == "off")
        #expect(try unit.status().ignition == "off")
        #expect(try unit.status().state == "off_duty")

        try fifo.send(Self.ignition(true))
        try await recorder.waitFor("the ignition on in the status") { _ in statuses().last?["ignition"] as? String == "on" }
        #expect(events().contains { $0["type"] as? String == "ignition" && $0["ignition"] as? String == "on" && $0["state"] as? String == "off_duty" })
        #expect(try unit.status().ignition == "on")
    }
}
