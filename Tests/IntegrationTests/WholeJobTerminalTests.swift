import Foundation
import MQTTLink
import TestHarness
import Testing

/// The whole job on a real terminal: dispatchsim offers a booking with its destination, passenger
/// and quoted fare, the driver pages through them on a PTY terminal, drives the job, picks the
/// payment at clear, and the ride summary reaches the dispatcher through the unit's outbox;
/// reservations ring before their meeting.
@Suite(.serialized) struct WholeJobTerminalTests {
    /// Where `Corpus.steadyLog`'s receiver stands (near Des Moines, Iowa), and a pickup nearby.
    static let centre = (lat: 41.5750, lon: -93.7506)
    static let pickup = (lat: 41.5778, lon: -93.7471)

    @Test func aBookingWithDestinationAndPassengerIsPagedOnTheTerminalAndItsRideReachesTheDispatcher() async throws {
        let scratch = try ScratchDirectory("taxiunitd-whole-job")
        let broker = try MosquittoBroker(in: scratch)
        let gps = try FakeGPS(log: Corpus.log(Corpus.steadyLog), in: scratch, cycleS: 0.1)
        let pair = try await SerialPair(in: scratch)
        let unit = try UnitUnderTest(mqttPort: broker.port, gpsdPort: gps.port, in: scratch, extraTOML: "[input.serial]\ndevice = \"\(pair.unitPath)\"\n")
        let recorder = try await MQTTRecorder(port: broker.port, subscribe: ["taxi/test/#"], clientID: "whole-job-recorder", persistentSession: true)
        let dispatcher = try await DispatchSimUnderTest(
            mqttPort: broker.port, zones: [("Z", DispatchSimUnderTest.square(around: Self.centre.lat, Self.centre.lon))], in: scratch,
            scenarioTOML: "[dispatch]\nrespond_within_s = 60\n")
        let screen = TerminalScreen(pair: pair)
        try await unit.start()
        try await unit.waitForStatus("a fix and the broker") { $0.gps.lastFixTime != nil && $0.broker.connected }
        func row(_ index: Int, _ prefix: String) async throws -> VirtualTerminal {
            try await screen.waitFor("row \(index + 1) to start with \"\(prefix)\"") { $0.rows[index].hasPrefix(prefix) }
        }
        try await screen.press("d")
        try await dispatcher.waitForLog("T1 queued", "T1 queued in Z at position 1")
        // A street passenger got in: one free seat fewer, on the screen and in the status.
        try await screen.press("s")
        try await screen.waitFor("3 free seats") { $0.rows[2] == "Free seats 3        " }
        try await unit.waitForStatus("3 seats left") { $0.seatsLeft == 3 }
        try await recorder.waitFor("the status with 3 seats") { _ in
            recorder.messages(onTopic: unit.topicBase + "status").last?.json?["seats_left"] as? Int == 3
        }

        try recorder.publish("dispatchsim/test/request", """
            {"id":"R1","pickup":{"lat":\(Self.pickup.lat),"lon":\(Self.pickup.lon),"address":"Main St 1"},"passengers":2,\
            "note":"Two suitcases and a folding wheelchair, ring twice",\
            "dropoff":{"lat":41.59,"lon":-93.62,"address":"Des Moines International Airport"},\
            "passenger":{"name":"Anna Rossi","phone":"+1 515 555 0142","pickup_code":"4711"},"fare":4250,"currency":"USD"}
            """)
        let offer = try await row(0, "NEW JOB")
        #expect(offer.rows[1] == "Main St 1           ")

        // One key pages through the details, the offer's note among them, and back to the offer.
        try await screen.press("i")
        let passenger = try await row(0, "PASSENGER")
        #expect(passenger.rows == ["PASSENGER        1/3", "Anna Rossi          ", "+1 515 555 0142     ", "Code 4711           "])
        try await screen.press("i")
        let dropoff = try await row(0, "DROP-OFF")
        #expect(dropoff.rows[0] == "DROP-OFF         2/3")
        #expect(dropoff.rows[1...2] == ["Des Moines          ", "International       "])
        // The receiver is about 11 km from the airport: the distance is from the live fix.
        let distance = dropoff.rows[3].trimmingCharacters(in: .whitespaces)
        #expect(distance.hasSuffix(" km") && distance.hasPrefix("1"), "\(distance)")
        try await screen.press("i")
        let note = try await row(0, "NOTE")
        #expect(note.rows == ["NOTE             3/3", "Two suitcases and a ", "folding wheelchair, ", "ring twice          "])
        try await screen.press("i")
        try await row(0, "NEW JOB")

        try await screen.press("a")
        try await row(0, "TO PICKUP")
        // Who to look for, on the way, once the "Sent" notice is over.
        try await screen.waitFor("the passenger on the way", timeoutS: 15) { $0.rows[3] == "Anna Rossi     #4711" }
        try await screen.press("h")
        let atPickup = try await row(0, "AT PICKUP")
        #expect(atPickup.rows[2] == "Anna Rossi     #4711")
        try await screen.press("2")
        let onBoard = try await row(0, "ON BOARD")
        #expect(onBoard.rows[2].hasPrefix("Des Moines In") && onBoard.rows[2].hasSuffix(" km"), "\(onBoard.rows[2])")
        try await unit.waitForStatus("the job's 2 passengers off the 3 free seats") { $0.seatsLeft == 1 }

        // The booking's fare, quoted in the offer, is shown at clear; `3` is the account.
        try await screen.press("c")
        let payment = try await row(0, "PAYMENT")
        #expect(payment.rows[1] == "USD 42.50     quoted")
        try await screen.press("3")
        try await row(0, "AVAILABLE")
        let rides = { recorder.messages(onTopic: unit.topicBase + "ride").compactMap(\.json) }
        try await recorder.waitFor("the ride summary") { _ in !rides().isEmpty }
        let ride = try #require(rides().first)
        #expect(ride["job"] as? String == "R1")
        #expect(ride["passengers"] as? Int == 2)
        #expect(ride["unit"] as? String == "T1")
        let pickupStop = try #require(ride["pickup"] as? [String: Any])
        let drop = try #require(ride["drop"] as? [String: Any])
        #expect(pickupStop["lat"] != nil && drop["lat"] != nil, "the fixes at pickup and drop")
        #expect((drop["t"] as? Int ?? 0) >= (pickupStop["t"] as? Int ?? .max))
        #expect((ride["distance_m"] as? Int).map { $0 >= 0 } == true, "measured over the stored fixes")
        #expect(ride["waiting_s"] as? Int != nil)
        #expect(ride["fare"] as? Int == 4250 && ride["currency"] as? String == "USD")
        #expect(ride["fare_source"] as? String == "quoted" && ride["payment"] as? String == "account")
        try await dispatcher.waitForLog("the ride summary logged", "R1 ride summary from T1: 2 passengers")
        try await dispatcher.waitForLog("the ride's fare read", "fare 42.50 USD (quoted), paid by account")
        // After the completed event, as the state machine produced them.
        let completed = recorder.messages.firstIndex { $0.topic == unit.topicBase + "event" && $0.json?["reason"] as? String == "completed" }
        let rideIndex = recorder.messages.firstIndex { $0.topic == unit.topicBase + "ride" }
        #expect(completed != nil && rideIndex != nil && completed! < rideIndex!)

        unit.stop()
        let stats = try dispatcher.stop()
        #expect(stats["rides"] as? Int == 1)
        #expect(stats["fares"] as? [String: Int] == ["USD": 4250] && stats["payments"] as? [String: Int] == ["account": 1])
        let problems = try ContractCheck.problems(in: recorder.messages)
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
        recorder.stop()
    }

    @Test func anAcceptedReservationRingsBeforeItsMeetingAlsoAfterARestart() async throws {
        let scratch = try ScratchDirectory("taxiunitd-reminder")
        let broker = try MosquittoBroker(in: scratch)
        let pair = try await SerialPair(in: scratch)
        let unit = try UnitUnderTest(
            mqttPort: broker.port, gpsdPort: try Loopback.freePort(), in: scratch,
            extraTOML: "[input.serial]\ndevice = \"\(pair.unitPath)\"\n[job]\nreminder_min = 1\n")
        let recorder = try await MQTTRecorder(port: broker.port, subscribe: [unit.topicBase + "#"])
        let screen = TerminalScreen(pair: pair)
        try await unit.start()
        try await unit.waitForStatus("broker connected") { $0.broker.connected }
        try await screen.press("d")
        try await screen.waitFor("available") { $0.rows[0].hasPrefix("AVAILABLE") }

        // Meeting in 66 s: the reminder is due 6 s after the offer.
        try recorder.publish(unit.topicBase + "job/offer", #"{"job":"R1","pickup":{"lat":46.5,"lon":7.5,"address":"Via Roma 12"},"meeting_time":\#(TestClock.milliseconds() + 66_000)}"#)
        try await screen.waitFor("the offer") { $0.rows[0].hasPrefix("NEW JOB") }
        try await screen.press("a")
        let accepted = try await screen.waitFor("on the way") { $0.rows[0].hasPrefix("TO PICKUP") }
        #expect(!accepted.rows[3].hasPrefix("REMINDER"))
        let reminded = try await screen.waitFor("the reminder", timeoutS: 15) { $0.rows[3].hasPrefix("REMINDER ") }
        #expect(reminded.blinking[3].allSatisfy { $0 })
        #expect(reminded.bells > accepted.bells)
        #expect(unit.log.contains("Reminder: job R1"))
        try await screen.press("h")
        try await screen.press("1")
        for _ in 0..<3 { try await screen.press("c") }
        try await screen.waitFor("available again") { $0.rows[0].hasPrefix("AVAILABLE") }

        // The unit is down when the next reminder falls due: it rings as soon as it is back.
        let meeting = TestClock.milliseconds() + 64_000
        try recorder.publish(unit.topicBase + "job/offer", #"{"job":"R2","pickup":{"lat":46.5,"lon":7.5,"address":"Via Roma 12"},"meeting_time":\#(meeting)}"#)
        try await screen.waitFor("the second offer") { $0.rows[0].hasPrefix("NEW JOB") }
        try await screen.press("a")
        try await screen.waitFor("on the way again") { $0.rows[0].hasPrefix("TO PICKUP") && !$0.rows[3].hasPrefix("REMINDER") }
        try await unit.waitForStatus("R2 accepted") { $0.state == "en_route" }
        unit.stop()
        // Until the reminder, 60 s before the meeting, has fallen due.
        try await Task.sleep(for: .milliseconds(max(0, meeting - 60_000 - TestClock.milliseconds()) + 500))
        let before = screen.refresh().bells
        try await unit.start()
        let afterRestart = try await screen.waitFor("the reminder after the restart", timeoutS: 15) { $0.rows[3].hasPrefix("REMINDER ") }
        #expect(afterRestart.rows[0].hasPrefix("TO PICKUP"))
        #expect(afterRestart.bells > before)
        #expect(unit.log.contains("Reminder: job R2"))
        unit.stop()
        recorder.stop()
    }
}
