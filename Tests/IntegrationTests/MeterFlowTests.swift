import ControlSocket
import DriverKeys
import Foundation
import TestHarness
import Testing

/// The taximeter on the real parts: a PTY pair through socat plays a serial meter (or a FIFO a
/// gpio-keys switch), the real daemon lets it drive the job, and what follows reaches the broker
/// and dispatchsim.
@Suite(.serialized) struct MeterFlowTests {
    struct Rig {
        let scratch: ScratchDirectory
        let broker: MosquittoBroker
        let unit: UnitUnderTest
        let recorder: MQTTRecorder

        init(scratch: ScratchDirectory, meterTOML: String) async throws {
            self.scratch = scratch
            broker = try MosquittoBroker(in: scratch)
            unit = try UnitUnderTest(mqttPort: broker.port, gpsdPort: try Loopback.freePort(), in: scratch, extraTOML: meterTOML)
            recorder = try await MQTTRecorder(port: broker.port, subscribe: [unit.topicBase + "#"])
            try await unit.start()
            try await unit.waitForStatus("broker connected") { $0.broker.connected }
        }

        func stop() {
            unit.stop()
            recorder.stop()
        }

        @discardableResult
        func press(_ input: String) throws -> String {
            try unit.request(ControlRequest(cmd: .press, input: input)).message ?? ""
        }

        func events() -> [[String: Any]] { recorder.messages(onTopic: unit.topicBase + "event").compactMap(\.json) }
        func rides() -> [[String: Any]] { recorder.messages(onTopic: unit.topicBase + "ride").compactMap(\.json) }
        func statuses() -> [[String: Any]] { recorder.messages(onTopic: unit.topicBase + "status").compactMap(\.json) }

        func offerAndDriveToThePickup(_ job: String) async throws {
            try recorder.publish(unit.topicBase + "job/offer", #"{"job":"\#(job)","pickup":{"lat":46.5,"lon":7.5},"passengers":2}"#)
            try await unit.waitForStatus("the offer of \(job)") { $0.state == "offered" }
            try press("accept")
            try press("arrived")
            try await unit.waitForStatus("at the pickup of \(job)") { $0.state == "at_pickup" }
        }
    }

    @Test func aSerialMeterPutsOnBoardClearsWithItsFareAndHails() async throws {
        let scratch = try ScratchDirectory("taxiunitd-meter")
        let meter = try await SerialPair(in: scratch, name: "meter")
        let rig = try await Rig(scratch: scratch, meterTOML: "[input.meter]\nserial = \"\(meter.unitPath)\"\nbaud = 9600\nprotocol = \"text\"\n")
        defer { rig.stop() }
        #expect(try rig.unit.status().meter == "unknown")
        #expect(try rig.press("duty").hasPrefix("On duty"))

        // Hired at the pickup: the passengers are on board.
        try await rig.offerAndDriveToThePickup("J1")
        try await meter.type(Array("VACANT\n".utf8))
        try await rig.unit.waitForStatus("the meter vacant") { $0.meter == "vacant" }
        #expect(try rig.unit.status().state == "at_pickup", "vacant at the pickup changes nothing")
        // Garbage and a line cut in two on the way: the one complete reading counts.
        try await meter.type(Array("GARBAGE\nHIR".utf8))
        try await meter.type(Array("ED\n".utf8))
        try await rig.recorder.waitFor("on board by the meter") { _ in
            rig.events().contains { $0["from"] as? String == "at_pickup" && $0["to"] as? String == "on_board" && $0["reason"] as? String == "meter" }
        }
        #expect(try rig.unit.status().meter == "hired")
        #expect(try rig.unit.status().refused?["meter_lines_dropped"] == 1)

        // Vacant with a fare: the ride is cleared and carries the meter's fare.
        try await meter.type(Array("FARE 2710 EUR\r\nVACANT\r\n".utf8))
        try await rig.recorder.waitFor("the ride of J1") { _ in rig.rides().contains { $0["job"] as? String == "J1" } }
        let ride = try #require(rig.rides().first { $0["job"] as? String == "J1" })
        #expect(ride["fare"] as? Int == 2710 && ride["currency"] as? String == "EUR" && ride["fare_source"] as? String == "meter", "\(ride)")
        #expect(ride["passengers"] as? Int == 2)
        #expect(rig.events().contains { $0["job"] as? String == "J1" && $0["to"] as? String == "available" && $0["reason"] as? String == "completed" })

        // Hired while available: a street hail, which the dispatcher sees as a busy taxi. It comes in
        // only now: it answers the job it did not offer with a cancel.
        let dispatcher = try await DispatchSimUnderTest(
            mqttPort: rig.broker.port, zones: [("Z", DispatchSimUnderTest.square(around: 46.5, 7.5))], in: scratch)
        try await meter.type(Array("HIRED\n".utf8))
        try await rig.recorder.waitFor("a hail on event") { _ in
            rig.events().contains { $0["from"] as? String == "available" && $0["to"] as? String == "on_board" && $0["reason"] as? String == "hail" }
        }
        let hail = try #require(rig.events().last { $0["reason"] as? String == "hail" }?["job"] as? String)
        #expect(hail.hasPrefix("hail-"))
        try await dispatcher.waitForLog("the hail at the dispatcher", "\(rig.unit.unitID) took a street hail (\(hail)), busy until clear")
        try await rig.recorder.waitFor("the status busy with the hail") { _ in
            rig.statuses().last.map { $0["state"] as? String == "on_board" && $0["job"] as? String == hail } ?? false
        }
        try await meter.type(Array("FARE 900 EUR\nVACANT\n".utf8))
        try await rig.recorder.waitFor("the hail's ride") { _ in rig.rides().contains { $0["job"] as? String == hail } }
        let hailRide = try #require(rig.rides().first { $0["job"] as? String == hail })
        #expect(hailRide["fare"] as? Int == 900 && hailRide["fare_source"] as? String == "meter")
        #expect(try rig.unit.status().state == "available")
        #expect(try dispatcher.stop()["street_hails"] as? Int == 1)
    }

    /// The driver cleared a hail by key with the meter still running, and the unit restarted: the
    /// meter, saying hired again, makes no phantom hail; the terminal says why once, and the
    /// meter's next ride is a hail as before.
    @Test func aMeterFoundHiredAfterARestartMakesNoHail() async throws {
        let meterScratch = try ScratchDirectory("taxiunitd-meter-restart")
        let meter = try await SerialPair(in: meterScratch, name: "meter")
        let rig = try await DriverTerminalTests.Rig(extraTOML: "[input.meter]\nserial = \"\(meter.unitPath)\"\nbaud = 9600\nprotocol = \"text\"\n")
        defer { rig.stop() }
        func hails() -> [String] {
            rig.recorder.messages(onTopic: rig.unit.topicBase + "event").compactMap(\.json)
                .filter { $0["reason"] as? String == "hail" }.compactMap { $0["job"] as? String }
        }
        try await rig.screen.press("d")
        try await rig.waitForRow(0, "AVAILABLE")
        try await meter.type(Array("VACANT\n".utf8))
        try await rig.unit.waitForStatus("the meter found vacant") { $0.meter == "vacant" }
        try await meter.type(Array("HIRED\n".utf8))
        try await rig.recorder.waitFor("the first hail") { _ in hails().count == 1 }
        #expect(try rig.unit.request(.init(cmd: .press, input: "clear")).message?.hasPrefix("Ride complete") == true)

        rig.unit.stop()
        try await rig.unit.start()
        try await rig.unit.waitForStatus("the restarted unit connected") { $0.broker.connected }
        #expect(try rig.unit.status().meter == "unknown")
        try await meter.type(Array("HIRED\n".utf8))
        try await rig.unit.waitForStatus("the meter found hired") { $0.meter == "hired" }
        try await rig.waitForRow(3, "Meter on, taxi free")
        #expect(try rig.unit.status().state == "available")
        // The meter repeats itself, then its ride ends: a phantom hail would be cleared with a ride.
        try await meter.type(Array("HIRED\nVACANT\n".utf8))
        try await rig.unit.waitForStatus("the meter vacant") { $0.meter == "vacant" }
        #expect(try rig.unit.status().state == "available" && hails().count == 1, "no phantom hail")

        try await meter.type(Array("HIRED\n".utf8))
        try await rig.recorder.waitFor("the next ride's hail") { _ in hails().count == 2 }
        #expect(try rig.unit.status().state == "on_board")
        let problems = try ContractCheck.problems(in: rig.recorder.messages)
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
    }

    /// The flag relay as a gpio-keys switch (SW_LID), framed as the kernel frames it.
    static func flag(_ hired: Bool) -> [UInt8] {
        InputEventDecoder.encode(InputEventRecord(type: IgnitionSignal.switchType, code: 0, value: hired ? 1 : 0))
            + InputEventDecoder.encode(InputEventRecord(type: 0, code: 0, value: 0))
    }

    /// A FIFO cannot say the switch's state when opened: its first event is the state found, which
    /// makes no hail; the meter's next ride does.
    @Test func anEvdevMeterSignalHailsAndClears() async throws {
        let scratch = try ScratchDirectory("taxiunitd-meter-evdev")
        let fifo = try EvdevFIFO(path: scratch.file("meter"))
        let rig = try await Rig(scratch: scratch, meterTOML: "[input.meter]\ndevice = \"\(fifo.path)\"\ncode = \"SW_LID\"\n")
        defer { rig.stop() }
        try await fifo.connect()
        #expect(try rig.press("duty").hasPrefix("On duty"))
        try fifo.send(Self.flag(true))
        try await rig.unit.waitForStatus("the meter found hired") { $0.meter == "hired" }
        #expect(try rig.unit.status().state == "available", "found hired: no hail")
        try fifo.send(Self.flag(false))
        try await rig.unit.waitForStatus("the meter vacant") { $0.meter == "vacant" }
        try fifo.send(Self.flag(true))
        try await rig.recorder.waitFor("a hail on event") { _ in rig.events().contains { $0["reason"] as? String == "hail" } }
        #expect(try rig.unit.status().state == "on_board")
        try fifo.send(Self.flag(false))
        try await rig.recorder.waitFor("the hail's ride") { _ in rig.rides().contains { ($0["job"] as? String)?.hasPrefix("hail-") == true } }
        let ride = try #require(rig.rides().first)
        #expect(ride["fare"] == nil, "no fare from a signal alone")
        #expect(try rig.unit.status().meter == "vacant")
    }
}
