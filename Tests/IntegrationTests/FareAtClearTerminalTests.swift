import ControlSocket
import Foundation
import TestHarness
import Testing

/// The fare and payment at clear on the real parts: the daemon, mosquitto, the SQLite file and the
/// serial terminal over a PTY. The ride the dispatcher gets and the one the store keeps carry the
/// fare in minor units, its currency and source, and the payment the driver picked with one key.
@Suite(.serialized) struct FareAtClearTerminalTests {
    typealias Rig = DriverTerminalTests.Rig

    /// On duty, an offer (with `extra` fields) accepted, at the pickup, one passenger on board.
    func onBoard(_ rig: Rig, job: String, _ extra: String = "") async throws {
        try rig.publish("job/offer", #"{"job":"\#(job)","pickup":{"lat":46.5,"lon":7.5,"address":"Via Roma 12"}\#(extra)}"#)
        try await rig.waitForRow(0, "NEW JOB")
        try await rig.screen.press("a")
        try await rig.waitForRow(0, "TO PICKUP")
        try await rig.screen.press("h")
        try await rig.waitForRow(0, "AT PICKUP")
        try await rig.screen.press("1")
        try await rig.waitForRow(0, "ON BOARD")
    }

    func ride(_ rig: Rig, _ job: String) async throws -> [String: Any] {
        let rides = { rig.recorder.messages(onTopic: rig.unit.topicBase + "ride").compactMap(\.json).filter { $0["job"] as? String == job } }
        try await rig.recorder.waitFor("the ride of \(job)") { _ in !rides().isEmpty }
        return try #require(rides().first)
    }

    @Test func aQuotedFarePaidByCardAndATypedFarePaidInCashReachTheDispatcherAndTheStore() async throws {
        let rig = try await Rig(extraTOML: "[job]\ncurrency = \"CHF\"\n")
        try await rig.screen.press("d")
        try await rig.waitForRow(0, "AVAILABLE")

        // Quoted: the payment screen shows the offer's fare at once; `2` is the card.
        try await onBoard(rig, job: "Q1", #","fare":2350,"currency":"EUR""#)
        try await rig.screen.press("c")
        try await rig.waitForRow(0, "PAYMENT")
        // The bottom row is the accept's `Sent` notice for its 8 s.
        let payment = try await rig.screen.waitFor("the third method", timeoutS: 15) { $0.rows[3].hasPrefix("3=") }
        #expect(payment.rows == ["PAYMENT       c=Skip", "EUR 23.50     quoted", "1=Cash        2=Card", "3=Account           "])
        try await rig.screen.press("2")
        try await rig.waitForRow(0, "AVAILABLE")
        let quoted = try await ride(rig, "Q1")
        #expect(quoted["fare"] as? Int == 2350 && quoted["currency"] as? String == "EUR")
        #expect(quoted["fare_source"] as? String == "quoted" && quoted["payment"] as? String == "card")

        // Typed: no fare known, the driver types one in the unit's currency, then `1`, cash.
        try await onBoard(rig, job: "T1")
        try await rig.screen.press("c")
        try await rig.waitForRow(0, "FARE")
        for key in ["1", "8", "9", "0"] { try await rig.screen.press(key) }
        let typed = try await rig.screen.waitFor("the fare typed and the hint", timeoutS: 15) {
            $0.rows[1].hasPrefix("CHF 18.90_") && $0.rows[3] == "ENTER=OK LEFT=Erase "
        }
        #expect(typed.rows[0] == "FARE                ")
        try await rig.screen.press("\r")
        let typedPayment = try await rig.waitForRow(0, "PAYMENT")
        #expect(typedPayment.rows[1] == "CHF 18.90      typed")
        try await rig.screen.press("1")
        try await rig.waitForRow(0, "AVAILABLE")
        let cash = try await ride(rig, "T1")
        #expect(cash["fare"] as? Int == 1890 && cash["currency"] as? String == "CHF")
        #expect(cash["fare_source"] as? String == "typed" && cash["payment"] as? String == "cash")

        // The store's ride history keeps both, as `taxiunitctl jobs` reads it.
        let history = try #require(try rig.unit.request(ControlRequest(cmd: .jobs, limit: 2)).rides)
        #expect(history.map(\.job) == ["T1", "Q1"])
        #expect(history.map(\.fare) == [1890, 2350] && history.map(\.currency) == ["CHF", "EUR"])
        #expect(history.map(\.fareSource) == ["typed", "quoted"] && history.map(\.payment) == ["cash", "card"])
        let problems = try ContractCheck.problems(in: rig.recorder.messages)
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
        rig.stop()
    }

    @Test func anOfferWithAMalformedFareIsAnsweredInvalidAndChangesNothing() async throws {
        let rig = try await Rig()
        try await rig.screen.press("d")
        try await rig.waitForRow(0, "AVAILABLE")
        try rig.publish("job/offer", #"{"job":"B1","pickup":{"lat":46.5,"lon":7.5},"fare":23.5,"currency":"EUR"}"#)
        try rig.publish("job/offer", #"{"job":"B2","pickup":{"lat":46.5,"lon":7.5},"fare":2350}"#)
        try await rig.waitForReply("B1", "invalid")
        try await rig.waitForReply("B2", "invalid")
        let answers = rig.recorder.messages(onTopic: rig.unit.topicBase + "job/reply").compactMap(\.json)
        let reason = { (job: String) in answers.first { $0["job"] as? String == job }?["reason"] as? String }
        #expect(reason("B2") == "fare is given without currency")
        #expect(reason("B1") == "fare must be a whole number of minor units (2350 for 23.50)")
        #expect(rig.replies("B1") == ["invalid"] && rig.replies("B2") == ["invalid"], "answered once, never shown")
        let status = try rig.unit.status()
        #expect(status.state == "available" && status.job == nil)
        #expect(rig.screen.refresh().rows[0].hasPrefix("AVAILABLE"))
        // The test's own offers break the contract on purpose; the unit's answers keep it.
        let problems = try ContractCheck.problems(in: rig.recorder.messages.filter { !$0.topic.hasSuffix("/job/offer") })
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
        rig.stop()
    }
}
