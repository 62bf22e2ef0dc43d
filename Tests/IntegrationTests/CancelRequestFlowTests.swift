import Foundation
import TestHarness
import Testing

/// The driver's cancel request and the dispatcher's answer on the real parts: mosquitto, the daemon
/// binary, taxiunitctl, SQLite; and a `job/update` delivered twice through the broker.
@Suite(.serialized) struct CancelRequestFlowTests {
    typealias Rig = JobFlowTests.Rig

    /// An accepted J1: the unit is en route.
    func enRoute() async throws -> Rig {
        let rig = try await Rig()
        try await rig.goOnDuty()
        try rig.offer("J1")
        try await rig.unit.waitForStatus("offered") { $0.state == "offered" }
        #expect(try rig.press("accept") == "Job J1 accepted, sent. Go to Bahnhofplatz 1")
        try await rig.unit.waitForStatus("en route") { $0.state == "en_route" }
        return rig
    }

    func cancelRequests(_ rig: Rig) -> [[String: Any]] {
        var seen = Set<String>()
        return rig.events().filter { $0["type"] as? String == "cancel_request" && seen.insert($0["id"] as? String ?? "").inserted }
    }

    func waitForCancelRequests(_ rig: Rig, _ count: Int) async throws {
        try await rig.recorder.waitFor("\(count) cancel request(s)") { _ in cancelRequests(rig).count >= count }
    }

    @Test func aConfirmedRequestEndsTheJob() async throws {
        let rig = try await enRoute()
        #expect(try rig.press("drop unreachable") == "Drop of job J1 asked (passenger_unreachable): sent, the job stands until dispatch answers")
        try await waitForCancelRequests(rig, 1)
        let request = try #require(cancelRequests(rig).first)
        #expect(request["job"] as? String == "J1")
        #expect(request["reason"] as? String == "passenger_unreachable")
        #expect(request["state"] as? String == "en_route")
        #expect(request["unit"] as? String == rig.unit.unitID)
        #expect(try rig.refusedPress("drop other") == "Drop already asked; waiting for dispatch")
        #expect(try rig.unit.status().state == "en_route", "the job stands until the dispatcher answers")
        #expect(try rig.unit.status().job?.cancelRequested == "passenger_unreachable")

        try rig.publish("job/cancel", #"{"job":"J1","reason":"passenger_unreachable"}"#)
        try await rig.unit.waitForStatus("available after the confirmation") { $0.state == "available" }
        try await rig.recorder.waitFor("the cancelled transition") { _ in
            rig.events().contains { $0["to"] as? String == "available" && $0["reason"] as? String == "cancelled" }
        }
        #expect(cancelRequests(rig).count == 1, "the refused second request sent nothing")
        #expect(try rig.refusedPress("drop") == "No job to drop")
        rig.stop()
    }

    @Test func aRefusedRequestLeavesTheJobGoingOn() async throws {
        let rig = try await enRoute()
        #expect(try rig.press("arrived") == "At pickup. Passenger on board?")
        _ = try rig.press("drop vehicle")
        try await waitForCancelRequests(rig, 1)
        #expect(cancelRequests(rig).first?["state"] as? String == "at_pickup")

        try rig.publish("job/update", #"{"job":"J1","cancel_refused":true,"note":"Call dispatch","update":"J1-refused"}"#)
        let shown = try await rig.waitForReply("J1", "shown")
        #expect(shown["re"] as? String == "job/update")
        #expect(shown["update"] as? String == "J1-refused")
        #expect(try rig.unit.status().state == "at_pickup")
        // The question is answered: the driver may ask again, and the refusal alone did not drop anything.
        _ = try rig.press("drop other")
        try await waitForCancelRequests(rig, 2)
        #expect(try rig.unit.status().state == "at_pickup")
        rig.stop()
    }

    @Test func aPendingRequestSurvivesARestart() async throws {
        let rig = try await enRoute()
        _ = try rig.press("drop unreachable")
        try await waitForCancelRequests(rig, 1)
        rig.unit.killHard()
        try await rig.unit.start()
        let resumed = try await rig.unit.waitForStatus("en route after the restart") { $0.state == "en_route" && $0.broker.connected }
        #expect(resumed.job?.cancelRequested == "passenger_unreachable")
        #expect(try rig.refusedPress("drop vehicle") == "Drop already asked; waiting for dispatch")
        try rig.publish("job/cancel", #"{"job":"J1"}"#)
        try await rig.unit.waitForStatus("available after the confirmation") { $0.state == "available" }
        #expect(cancelRequests(rig).count == 1)
        rig.stop()
    }

    /// The same `add_pickup` update twice through the broker, with an id and without one: each
    /// pickup is added once and each copy is answered as the first one was.
    @Test func aRedeliveredUpdateIsAppliedOnce() async throws {
        let rig = try await enRoute()
        let withID = #"{"job":"J1","add_pickup":{"lat":46.51,"lon":7.5,"address":"Markt 3","passengers":1},"update":"R-77-joined"}"#
        try rig.publish("job/update", withID)
        try await rig.recorder.waitFor("the first answer") { _ in rig.replies(job: "J1").filter { $0["re"] as? String == "job/update" }.count >= 1 }
        try rig.publish("job/update", withID)
        try await rig.recorder.waitFor("the second answer") { _ in rig.replies(job: "J1").filter { $0["re"] as? String == "job/update" }.count >= 2 }
        let answers = rig.replies(job: "J1").filter { $0["re"] as? String == "job/update" }
        #expect(Set(answers.map { "\($0["reply"]!) \($0["update"]!) \($0["t"]!)" }).count == 1, "answered as the first time: \(answers)")
        #expect(try rig.unit.status().job?.passengers == 2, "one added passenger, not two")

        let withoutID = #"{"job":"J1","add_pickup":{"lat":46.52,"lon":7.5,"address":"Markt 9"}}"#
        try rig.publish("job/update", withoutID)
        try await rig.recorder.waitFor("the third answer") { _ in rig.replies(job: "J1").filter { $0["re"] as? String == "job/update" }.count >= 3 }
        try rig.publish("job/update", withoutID)
        try await rig.recorder.waitFor("the fourth answer") { _ in rig.replies(job: "J1").filter { $0["re"] as? String == "job/update" }.count >= 4 }
        #expect(try rig.unit.status().job?.passengers == 3)
        rig.stop()
    }
}
