import ControlSocket
import Foundation
import MQTTLink
import TestHarness
import Testing

/// Messages between dispatchsim and a driver working a real unit's serial terminal, and the zone
/// queue position dispatchsim tells the taxis, on a real broker with real units and SQLite.
@Suite(.serialized) struct DriverMessagesEndToEndTests {
    /// Messages on `taxi/test/{unit}/{name}`, each `id` once.
    static func messages(_ recorder: MQTTRecorder, _ unit: String, _ name: String) -> [[String: Any]] {
        var seen = Set<String>()
        return recorder.messages(onTopic: "taxi/test/\(unit)/\(name)").compactMap(\.json).filter { json in
            guard let id = json["id"] as? String else { return true }
            return seen.insert(id).inserted
        }
    }

    static func press(_ unit: UnitUnderTest, _ input: String) throws {
        let response = try unit.request(ControlRequest(cmd: .press, input: input))
        guard response.ok else { throw HarnessError("\(unit.unitID) press \(input): \(response.error ?? "refused")") }
    }

    @Test func aMessageIsKeptOverARestartReadAndAnsweredWithACannedReply() async throws {
        let scratch = try ScratchDirectory("taxiunitd-msg")
        let broker = try MosquittoBroker(in: scratch)
        let pair = try await SerialPair(in: scratch)
        let unit = try UnitUnderTest(
            unitID: "T1", mqttPort: broker.port, gpsdPort: try Loopback.freePort(), in: scratch,
            extraTOML: "[input.serial]\ndevice = \"\(pair.unitPath)\"\n")
        let recorder = try await MQTTRecorder(port: broker.port, subscribe: ["taxi/test/#"], clientID: "msg-recorder", persistentSession: true)
        let screen = TerminalScreen(pair: pair)
        try await unit.start()
        try await unit.waitForStatus("broker connected") { $0.broker.connected }
        try await screen.press("d")
        try await screen.waitFor("available") { $0.rows[0].hasPrefix("AVAILABLE") }
        let ringsBefore = screen.refresh().bells

        // One message (the first of dispatchsim's turn: two canned replies) as soon as it sees the unit.
        let dispatcher = try await DispatchSimUnderTest(
            mqttPort: broker.port, zones: [("Z", DispatchSimUnderTest.square(around: 0, 0))], in: scratch, arguments: ["--message-every", "3600"])
        let arrived = try await screen.waitFor("the new message notice") { $0.rows[3].hasPrefix("NEW MESSAGE") }
        #expect(arrived.bells > ringsBefore)
        #expect(arrived.blinking[3].contains(true))
        try await recorder.waitFor("msg-1 on the unit's topic") { _ in !Self.messages(recorder, "T1", "msg").isEmpty }

        // Not read yet: kept over a restart of the daemon.
        unit.stop()
        try await unit.start()
        try await unit.waitForStatus("broker connected again") { $0.broker.connected }
        try await screen.waitFor("the unread message after the restart", timeoutS: 15) { $0.rows[3] == "1 unread      m=Read" }
        #expect(Self.messages(recorder, "T1", "msg/read").isEmpty)

        try await screen.press("m")
        let open = try await screen.waitFor("the message") { $0.rows[0].hasPrefix("MSG 1/1") }
        #expect(open.rows[1] == "Heavy traffic on 5th")
        #expect(open.rows[2] == "Avenue between 34th ")
        #expect(open.rows[3] == "y=Reply m=More      ")
        try await dispatcher.waitForLog("the read receipt", "T1 read message msg-1")
        #expect(Self.messages(recorder, "T1", "msg/read").map { $0["msg"] as? String } == ["msg-1"])

        try await screen.press("y")
        try await screen.waitFor("the first reply chosen") { $0.rows[3] == "> OK          t=Send" }
        try await screen.press("t")
        try await screen.waitFor("sent") { $0.rows[3].hasPrefix("Sent") && $0.rows[0].hasPrefix("AVAILABLE") }
        try await dispatcher.waitForLog("the answer", "T1 answered message msg-1: OK")
        let answer = Self.messages(recorder, "T1", "msg/reply")
        #expect(answer.count == 1 && answer.first?["choice"] as? Int == 1 && answer.first?["text"] as? String == "OK")

        // A canned message of the driver's own.
        try await screen.press("y")
        try await screen.press("y")
        try await screen.waitFor("running late chosen") { $0.rows[3] == "> Running late      " }
        try await screen.press("t")
        try await dispatcher.waitForLog("the driver's message", "T1 says: Running late")

        // A message the unit cannot use is answered invalid, and neither kept nor shown.
        try recorder.publish("taxi/test/T1/msg", #"{"id":"bad-1","text":"","replies":["OK"]}"#)
        try await dispatcher.waitForLog("the refusal", "T1 refused message bad-1: text must not be empty")
        #expect(screen.refresh().rows[3] != "1 unread      m=Read")
        #expect(try unit.status().state == "available")

        unit.stop()
        let stats = try dispatcher.stop()
        #expect(stats["messages_read"] as? Int == 1)
        #expect(stats["message_replies"] as? Int == 2, "the invalid answer is not a reply")
        // Everything but the deliberately bad message holds to the contract.
        let problems = try ContractCheck.problems(in: recorder.messages.filter { $0.topic != "taxi/test/T1/msg" || $0.json?["id"] as? String != "bad-1" })
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
        recorder.stop()
    }

    @Test func theQueuePositionMovesUpAsTaxisAheadTakeJobs() async throws {
        let scratch = try ScratchDirectory("taxiunitd-queue")
        let broker = try MosquittoBroker(in: scratch)
        // Where Corpus.steadyLog's receiver stands, inside zone "Z" (DispatchEndToEndTests' Fleet).
        let centre = (lat: 41.5750, lon: -93.7506)
        let gps = try FakeGPS(log: Corpus.log(Corpus.steadyLog), in: scratch, cycleS: 0.1)
        let pair = try await SerialPair(in: scratch)
        let units = try ["T1", "T2", "T3"].map { id in
            try UnitUnderTest(
                unitID: id, mqttPort: broker.port, gpsdPort: gps.port, in: scratch,
                extraTOML: id == "T3" ? "[input.serial]\ndevice = \"\(pair.unitPath)\"\n" : "")
        }
        let recorder = try await MQTTRecorder(port: broker.port, subscribe: ["taxi/test/#"], clientID: "queue-recorder", persistentSession: true)
        let dispatcher = try await DispatchSimUnderTest(
            mqttPort: broker.port, zones: [("Z", DispatchSimUnderTest.square(around: centre.lat, centre.lon))], in: scratch,
            scenarioTOML: "[dispatch]\nrespond_within_s = 30\n")
        let screen = TerminalScreen(pair: pair)
        for (index, unit) in units.enumerated() {
            try await unit.start()
            try await unit.waitForStatus("\(unit.unitID) has a fix") { $0.gps.lastFixTime != nil && $0.broker.connected }
            try Self.press(unit, "duty")
            try await dispatcher.waitForLog("\(unit.unitID) queued", "\(unit.unitID) queued in Z at position \(index + 1)")
        }
        try await screen.waitFor("third of three") { $0.rows[1].hasSuffix("Q 3/3") }

        for (taxi, request, place) in [("T1", "R1", "Q 2/2"), ("T2", "R2", "Q 1/1")] {
            try dispatcher.book(request, lat: centre.lat + 0.003, lon: centre.lon + 0.003, via: recorder)
            let offered = units.first { $0.unitID == taxi }!
            try await offered.waitForStatus("\(taxi) offered \(request)") { $0.state == "offered" }
            try Self.press(offered, "accept")
            try await screen.waitFor("T3 moves up to \(place)") { $0.rows[1].hasSuffix(place) }
        }
        let places = Self.messages(recorder, "T3", "queue").compactMap { json in
            (json["position"] as? Int).map { "\($0)/\(json["of"] as? Int ?? 0)" }
        }
        #expect(Array(places.suffix(2)) == ["2/2", "1/1"], "\(places)")

        // Off the queue when not available: the place is gone from the screen.
        try await screen.press("p")
        try await screen.waitFor("paused, no place") { $0.rows[0].hasPrefix("PAUSED") && !$0.rows[1].contains("Q ") }

        for unit in units { unit.stop() }
        _ = try dispatcher.stop()
        let problems = try ContractCheck.problems(in: recorder.messages)
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
        recorder.stop()
    }

    /// A scenario's `[[broadcast]]` reaches every unit of the fleet on its topic; each driver reads
    /// it, and dispatchsim hears one receipt per unit.
    @Test func aScenariosBroadcastReachesEveryUnitAndEachReadIsReceipted() async throws {
        let scratch = try ScratchDirectory("taxiunitd-broadcast")
        let broker = try MosquittoBroker(in: scratch)
        let units = try ["T1", "T2"].map { try UnitUnderTest(unitID: $0, mqttPort: broker.port, gpsdPort: try Loopback.freePort(), in: scratch) }
        let recorder = try await MQTTRecorder(port: broker.port, subscribe: ["taxi/test/#"], clientID: "broadcast-recorder", persistentSession: true)
        for unit in units {
            try await unit.start()
            try await unit.waitForStatus("\(unit.unitID) connected") { $0.broker.connected }
        }
        let dispatcher = try await DispatchSimUnderTest(
            mqttPort: broker.port, zones: [("Z", DispatchSimUnderTest.square(around: 0, 0))], in: scratch,
            scenarioTOML: "[[broadcast]]\nat_s = 1\nid = \"news-1\"\ntext = \"Office closes at six\"\nreplies = [\"OK\"]\n")
        try await dispatcher.waitForLog("the broadcast sent", "broadcast news-1 to the fleet")
        for unit in units {
            try await waitUntil("\(unit.unitID) got it", timeoutS: 20, detail: { unit.log }) { unit.log.contains("topic=fleet msg") }
            let response = try unit.request(ControlRequest(cmd: .press, input: "msg"))
            #expect(response.message == "Message news-1 (1/1): Office closes at six")
            try await dispatcher.waitForLog("\(unit.unitID)'s receipt", "\(unit.unitID) read message news-1")
        }
        try await recorder.waitFor("the broadcast and both receipts") { _ in
            !recorder.messages(onTopic: "taxi/test/msg").isEmpty && units.allSatisfy { !Self.messages(recorder, $0.unitID, "msg/read").isEmpty }
        }
        for unit in units { #expect(Self.messages(recorder, unit.unitID, "msg/read").count == 1) }
        for unit in units { unit.stop() }
        _ = try dispatcher.stop()
        let problems = try ContractCheck.problems(in: recorder.messages)
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
        recorder.stop()
    }
}
