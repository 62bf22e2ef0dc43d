import DriverKeys
import Foundation
import MQTTLink
import TestHarness
import Testing

/// The driver's serial terminal and buttons against the real daemon, real mosquitto and real
/// SQLite: the test types on one end of a socat PTY pair and reads the screen from the other.
@Suite(.serialized) struct DriverTerminalTests {
    struct Rig {
        let scratch: ScratchDirectory
        let broker: MosquittoBroker
        let gps: FakeGPS?
        let pair: SerialPair
        let screen: TerminalScreen
        let unit: UnitUnderTest
        let recorder: MQTTRecorder

        init(language: String = "en", withGPS: Bool = false, extraTOML: String = "", trustSystemClock: Bool = true) async throws {
            scratch = try ScratchDirectory()
            broker = try MosquittoBroker(in: scratch)
            gps = withGPS ? try FakeGPS(log: Corpus.log(Corpus.steadyLog), in: scratch, cycleS: 0.05) : nil
            pair = try await SerialPair(in: scratch)
            unit = try UnitUnderTest(
                mqttPort: broker.port, gpsdPort: try gps?.port ?? Loopback.freePort(), in: scratch,
                extraTOML: "[input.serial]\ndevice = \"\(pair.unitPath)\"\n" + extraTOML, language: language,
                trustSystemClock: trustSystemClock)
            recorder = try await MQTTRecorder(port: broker.port, subscribe: [unit.topicBase + "#"])
            screen = TerminalScreen(pair: pair)
            try await unit.start()
            try await unit.waitForStatus("broker connected") { $0.broker.connected }
        }

        func publish(_ suffix: String, _ json: String) throws {
            try recorder.publish(unit.topicBase + suffix, json)
        }

        func replies(_ job: String) -> [String] {
            var seen = Set<String>()
            return recorder.messages(onTopic: unit.topicBase + "job/reply").compactMap(\.json).filter { json in
                guard let id = json["id"] as? String, seen.insert(id).inserted else { return false }
                return json["job"] as? String == job
            }.compactMap { $0["reply"] as? String }
        }

        func waitForReply(_ job: String, _ reply: String) async throws {
            try await recorder.waitFor("\(reply) for \(job)") { _ in replies(job).contains(reply) }
        }

        @discardableResult
        func waitForRow(_ row: Int, _ prefix: String, timeoutS: Double = 10) async throws -> VirtualTerminal {
            try await screen.waitFor("row \(row + 1) to start with \"\(prefix)\"", timeoutS: timeoutS) { $0.rows[row].hasPrefix(prefix) }
        }

        func stop() {
            unit.stop()
            recorder.stop()
        }
    }

    @Test func aWholeJobDrivenFromTheTerminal() async throws {
        let rig = try await Rig(withGPS: true)
        try await rig.waitForRow(0, "OFF DUTY")
        try await rig.screen.press("d")
        let available = try await rig.waitForRow(0, "AVAILABLE")
        #expect(available.rows[2] == "Free seats 4        ")
        #expect(available.rows[3] == "Online              ")
        try await rig.unit.waitForStatus("a fix for the distance") { $0.gps.lastFixTime != nil }

        try rig.publish("job/offer", #"{"job":"J1","pickup":{"lat":46.5,"lon":7.5,"address":"Via Roma 12"},"passengers":2,"respond_within_s":60}"#)
        let offer = try await rig.waitForRow(0, "NEW JOB")
        #expect(offer.rows[1] == "Via Roma 12         ")
        // The replayed receiver is about 5 km from the pickup.
        #expect(offer.rows[2].contains(" km  2 pax"), "\(offer.rows[2])")
        #expect(offer.rows[3] == "a=Accept r=Reject   ")
        #expect(offer.bells >= 1)
        #expect(offer.blinking[0].allSatisfy { $0 })

        try await rig.screen.press("a")
        try await rig.waitForReply("J1", "accept")
        let enRoute = try await rig.waitForRow(0, "TO PICKUP")
        #expect(enRoute.rows[1] == "Via Roma 12         ")
        #expect(!enRoute.blinking[0].contains(true), "answered: no more blinking")

        try await rig.screen.press("h")
        let atPickup = try await rig.waitForRow(0, "AT PICKUP")
        #expect(atPickup.rows[1] == "Passengers on board?")
        #expect(atPickup.bells > offer.bells, "the arrival prompt rings")

        try await rig.screen.press("2")
        let onBoard = try await rig.waitForRow(0, "ON BOARD")
        #expect(onBoard.rows[1] == "2 passengers        ")
        #expect(onBoard.rows[2] == "Free seats 2        ")
        try await rig.unit.waitForStatus("2 seats left") { $0.seatsLeft == 2 }

        // No fare known: the clear key asks for one; it again goes on without, and again skips the payment.
        try await rig.screen.press("c")
        let fare = try await rig.waitForRow(0, "FARE")
        #expect(fare.rows[1] == "EUR _               ")
        try await rig.screen.press("c")
        let payment = try await rig.waitForRow(0, "PAYMENT")
        #expect(payment.rows[1] == "No fare             ")
        try await rig.screen.press("c")
        let done = try await rig.waitForRow(0, "AVAILABLE")
        #expect(done.rows[2] == "Free seats 4        ")
        let status = try await rig.unit.waitForStatus("available again") { $0.state == "available" }
        #expect(status.seatsLeft == 4)
        let transitions = rig.recorder.messages(onTopic: rig.unit.topicBase + "event").compactMap(\.json).compactMap { $0["to"] as? String }
        for state in ["available", "offered", "en_route", "at_pickup", "on_board"] { #expect(transitions.contains(state), "\(transitions)") }
        #expect(rig.replies("J1") == ["accept"])
        rig.stop()
    }

    @Test func theOfferCountsDownAndSilenceIsARefusal() async throws {
        let rig = try await Rig()
        try await rig.screen.press("d")
        try await rig.waitForRow(0, "AVAILABLE")
        try rig.publish("job/offer", #"{"job":"J2","pickup":{"lat":46.5,"lon":7.5,"address":"Piazza Duomo"},"respond_within_s":4}"#)
        var seen: [Int] = []
        try await rig.screen.waitFor("the countdown to end", timeoutS: 15) { screen in
            if screen.rows[0].hasPrefix("NEW JOB"), let seconds = Int(screen.rows[0].dropFirst(7).trimmingCharacters(in: .whitespaces).dropLast()) {
                if seen.last != seconds { seen.append(seconds) }
            }
            return screen.rows[0].hasPrefix("AVAILABLE") && !seen.isEmpty
        }
        #expect(seen.count >= 3, "\(seen)")
        #expect(seen == seen.sorted(by: >), "\(seen)")
        #expect(seen.first! <= 4)
        try await rig.waitForReply("J2", "timeout")
        try await rig.screen.waitFor("the refusal notice") { $0.rows[3] == "No answer: refused  " }
        rig.stop()
    }

    /// A board without a real-time clock: the unit clock is GPS time (nmea-rtk.log is from 2020),
    /// years away from the system clock the terminal counts down on.
    @Test func theCountdownIsRightWhileTheUnitClockIsGPSTime() async throws {
        let rig = try await Rig(withGPS: true, trustSystemClock: false)
        try await rig.unit.waitForStatus("the unit clock on GPS time") { $0.clock == "gps" }
        try await rig.screen.press("d")
        try await rig.waitForRow(0, "AVAILABLE")
        try rig.publish("job/offer", #"{"job":"J9","pickup":{"lat":46.5,"lon":7.5,"address":"Piazza Duomo"},"respond_within_s":30}"#)
        let offer = try await rig.waitForRow(0, "NEW JOB")
        let seconds = Int(offer.rows[0].dropFirst(7).trimmingCharacters(in: .whitespaces).dropLast())
        #expect((25...30).contains(seconds ?? -1), "\(offer.rows[0])")
        rig.stop()
    }

    /// Noise answers nothing; the driver is told keys were lost, on the row above the offer's keys.
    @Test func tenThousandGarbageBytesChangeNothing() async throws {
        let rig = try await Rig()
        try await rig.screen.press("d")
        try await rig.waitForRow(0, "AVAILABLE")
        try rig.publish("job/offer", #"{"job":"J3","pickup":{"lat":46.5,"lon":7.5,"address":"Via Roma 12"},"respond_within_s":60}"#)
        try await rig.waitForRow(0, "NEW JOB")
        var generator = SystemRandomNumberGenerator()
        try await rig.pair.type((0..<10_000).map { _ in UInt8.random(in: 0...255, using: &generator) })
        try await Task.sleep(for: .milliseconds(1500))
        let after = rig.screen.refresh()
        #expect(after.rows[0].hasPrefix("NEW JOB"))
        #expect(after.rows[1] == "Via Roma 12         ")
        #expect(after.rows[2] == "Keys lost: again    ")
        #expect(after.rows[3] == "a=Accept r=Reject   ")
        #expect(rig.replies("J3") == [], "no key came out of the noise")
        #expect(try rig.unit.status().state == "offered")
        // The line still works afterwards.
        try await rig.screen.press("r")
        try await rig.waitForReply("J3", "reject")
        try await rig.waitForRow(0, "AVAILABLE")
        rig.stop()
    }

    @Test func aSharedRideUpdateAndACancellationAlert() async throws {
        let rig = try await Rig()
        try await rig.screen.press("d")
        try await rig.waitForRow(0, "AVAILABLE")
        try rig.publish("job/offer", #"{"job":"J4","pickup":{"lat":46.5,"lon":7.5,"address":"Via Roma 12"},"passengers":1,"shared":true}"#)
        try await rig.waitForRow(0, "NEW JOB")
        try await rig.screen.press("a")
        let enRoute = try await rig.waitForRow(0, "TO PICKUP")
        try rig.publish("job/update", #"{"job":"J4","passengers":3}"#)
        let updated = try await rig.screen.waitFor("the update notice") { $0.rows[3] == "JOB UPDATED         " }
        #expect(updated.blinking[3].allSatisfy { $0 })
        #expect(updated.bells > enRoute.bells)
        #expect(updated.rows[2].contains("3 pax"))
        try rig.publish("job/cancel", #"{"job":"J4","reason":"passenger withdrew"}"#)
        let cancelled = try await rig.screen.waitFor("the cancellation") { $0.rows[0].hasPrefix("AVAILABLE") && $0.rows[3] == "JOB CANCELLED       " }
        #expect(cancelled.blinking[3].allSatisfy { $0 })
        #expect(cancelled.bells > updated.bells)
        rig.stop()
    }

    /// The drop keys: the request waits on the job's screen, a second one is refused, the refusal
    /// and the confirmation show with their words.
    @Test func aCancelRequestOnTheTerminal() async throws {
        let rig = try await Rig()
        try await rig.screen.press("d")
        try await rig.waitForRow(0, "AVAILABLE")
        try rig.publish("job/offer", #"{"job":"J5","pickup":{"lat":46.5,"lon":7.5,"address":"Via Roma 12"},"passengers":1}"#)
        try await rig.waitForRow(0, "NEW JOB")
        try await rig.screen.press("a")
        try await rig.waitForRow(0, "TO PICKUP")
        try await rig.screen.press("x")
        try await rig.screen.waitFor("sent") { $0.rows[3] == "Sent                " }
        // Once the notice is over, the job's screen says the request waits.
        try await rig.screen.waitFor("the request waiting", timeoutS: 20) { $0.rows[3] == "Drop asked: wait    " }
        try await rig.screen.press("v")
        try await rig.screen.waitFor("the second request refused") { $0.rows[3] == "Drop already asked  " }
        try rig.publish("job/update", #"{"job":"J5","cancel_refused":true,"note":"Call dispatch","update":"J5-refused"}"#)
        let refused = try await rig.screen.waitFor("the refusal") { $0.rows[3] == "DROP REFUSED: GO ON " }
        #expect(refused.rows[2] == "Call dispatch       ")
        #expect(refused.rows[0].hasPrefix("TO PICKUP"))
        try await rig.screen.press("z")
        try await rig.screen.waitFor("sent again") { $0.rows[3] == "Sent                " }
        try rig.publish("job/cancel", #"{"job":"J5"}"#)
        let cancelled = try await rig.screen.waitFor("the confirmation") { $0.rows[0].hasPrefix("AVAILABLE") && $0.rows[3] == "JOB CANCELLED       " }
        #expect(cancelled.rows[2] == "Other reason        ")
        rig.stop()
    }

    @Test func anInputThatMakesNoSenseSaysWhy() async throws {
        let rig = try await Rig()
        try await rig.screen.press("d")
        try await rig.waitForRow(0, "AVAILABLE")
        try await rig.screen.press("a")
        let screen = try await rig.screen.waitFor("the reason") { !$0.rows[3].hasPrefix("Online") }
        #expect(screen.rows[3] == "No offer to answer  ")
        #expect(try rig.unit.status().state == "available")
        rig.stop()
    }

    @Test func theConfiguredLanguageIsShown() async throws {
        let rig = try await Rig(language: "zu")
        try await rig.waitForRow(0, "ANGISEBENZI")
        try await rig.screen.press("d")
        let screen = try await rig.waitForRow(0, "NGIYATHOLAKALA")
        #expect(screen.rows == ["NGIYATHOLAKALA      ", "Indawo -            ", "Izihlalo 4          ", "Ixhunyiwe           "])
        rig.stop()
    }

    @Test func aFleetConfigChangesTheLanguageOnTheSpot() async throws {
        let scratch = try ScratchDirectory()
        let signer = try FleetSigner(in: scratch)
        let rig = try await Rig(extraTOML: signer.fleetSection())
        try await rig.screen.press("d")
        try await rig.waitForRow(0, "AVAILABLE")
        let topic = "taxi/\(rig.unit.fleet)/config"
        try rig.recorder.publish(topic, try signer.sign(#"{"version":1,"settings":{"unit":{"language":"it"}}}"#, topic: topic), retain: true)
        let italian = try await rig.waitForRow(0, "LIBERO")
        #expect(italian.rows == ["LIBERO              ", "Zona -              ", "Posti liberi 4      ", "In linea            "])
        rig.stop()
    }

    @Test func checkReportsAMissingCatalogueOnlyWhenThereIsATerminal() throws {
        let scratch = try ScratchDirectory()
        let base = "[unit]\nid = \"T1\"\nfleet = \"f\"\nlanguage = \"xx\"\ncatalogues = \"\(Corpus.packageRoot)/share/taxiunitd/lang\"\n"
        let withoutTerminal = scratch.file("plain.toml")
        try base.write(toFile: withoutTerminal, atomically: true, encoding: .utf8)
        #expect(try runCommand(Corpus.binary("taxiunitd"), ["--config", withoutTerminal, "--check"]).exitCode == 0)
        let withTerminal = scratch.file("terminal.toml")
        try (base + "[input.serial]\ndevice = \"/dev/ttyUSB0\"\n").write(toFile: withTerminal, atomically: true, encoding: .utf8)
        let result = try runCommand(Corpus.binary("taxiunitd"), ["--config", withTerminal, "--check"])
        #expect(result.exitCode == 1)
        #expect(result.output.contains("xx.toml"))
    }

    @Test func buttonsDriveTheSameInputsAndALongPressRaisesSOS() async throws {
        let scratch = try ScratchDirectory()
        let fifo = try EvdevFIFO(path: scratch.file("buttons"))
        let rig = try await Rig(extraTOML: "[input.buttons]\ndevice = \"\(fifo.path)\"\n")
        try await fifo.connect()
        func key(_ name: String, _ value: Int32) throws {
            try fifo.send(InputEventDecoder.encode(InputEventRecord(type: 1, code: EvdevKeyNames.code(named: name)!, value: value)))
        }
        try key("KEY_F6", 1)
        try key("KEY_F6", 0)
        try await rig.unit.waitForStatus("on duty from the button") { $0.state == "available" }
        try await rig.waitForRow(0, "AVAILABLE")
        let before = rig.screen.refresh().rows

        try key("KEY_F10", 1)
        try await Task.sleep(for: .milliseconds(500))
        try key("KEY_F10", 0)
        try await Task.sleep(for: .milliseconds(2000))
        #expect(rig.recorder.messages(onTopic: rig.unit.topicBase + "sos").isEmpty, "a short press of SOS does nothing")

        try key("KEY_F10", 1)
        try await rig.recorder.waitFor("the SOS alarm", timeoutS: 5) { _ in !rig.recorder.messages(onTopic: rig.unit.topicBase + "sos").isEmpty }
        try key("KEY_F10", 0)
        try await Task.sleep(for: .milliseconds(300))
        #expect(rig.screen.refresh().rows == before, "SOS shows nothing on the terminal")
        rig.stop()
    }
}
