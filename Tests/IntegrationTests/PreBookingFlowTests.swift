import ControlSocket
import Foundation
import TestHarness
import Testing

/// Pre-bookings and the stacked next job on the real parts: mosquitto, the daemon binary,
/// taxiunitctl, SQLite.
@Suite(.serialized) struct PreBookingFlowTests {
    typealias Rig = JobFlowTests.Rig

    /// `taxiunitctl jobs --upcoming --json`: the jobs ahead.
    func upcoming(_ rig: Rig) throws -> [[String: Any]] {
        let (output, code) = try runCommand(Corpus.binary("taxiunitctl"), ["jobs", "--upcoming", "--json", "--socket", rig.unit.controlSocket])
        guard code == 0 else { throw HarnessError("jobs --upcoming failed (\(code)): \(output)") }
        return try #require(try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [[String: Any]])
    }

    func retainedStatus(_ rig: Rig) -> [String: Any]? {
        rig.recorder.messages(onTopic: rig.unit.topicBase + "status").last?.json
    }

    @Test func aPreBookingWaitsWhileAnImmediateJobIsDoneThenItsWindowOpens() async throws {
        // The window opens 1 min before the meeting time; a job is assumed to take 1 min.
        let rig = try await Rig(extraTOML: "[job]\nreservation_lead_min = 1\nexpected_job_min = 1\n")
        defer { rig.stop() }
        try await rig.goOnDuty()
        // Meeting 140 s ahead: the window opens in 80 s, room for an immediate job of 1 min first.
        let meeting = TestClock.milliseconds() + 140_000
        try rig.offer("R1", extra: #","meeting_time":\#(meeting)"#)
        try await rig.unit.waitForStatus("R1 offered") { $0.job?.id == "R1" }
        #expect(try rig.press("accept").hasPrefix("Reservation R1 accepted"))
        try await rig.waitForReply("R1", "accept")
        let booked = try await rig.unit.waitForStatus("available with R1 ahead") { $0.state == "available" && $0.upcoming?.first?.id == "R1" }
        #expect(booked.upcoming?.first?.meetingTime == meeting)
        #expect(try upcoming(rig).map { $0["id"] as? String } == ["R1"])
        _ = try await rig.recorder.waitFor("R1 in the retained status") { _ in
            (retainedStatus(rig)?["upcoming"] as? [[String: Any]])?.first?["job"] as? String == "R1"
        }

        // An immediate job fits before the window.
        try rig.offer("J1")
        try await rig.unit.waitForStatus("J1 offered") { $0.job?.id == "J1" }
        try rig.press("accept")
        try await rig.waitForReply("J1", "accept")
        for input in ["arrived", "pob", "clear"] { try rig.press(input) }
        let free = try await rig.unit.waitForStatus("available after J1") { $0.state == "available" }
        #expect(free.upcoming?.map(\.id) == ["R1"], "the pre-booking is still ahead")

        // The window opens: R1 becomes the job in hand by itself.
        let started = try await rig.unit.waitForStatus("R1 en route", timeoutS: 120) { $0.state == "en_route" && $0.job?.id == "R1" }
        #expect(started.upcoming == nil)
        _ = try await rig.recorder.waitFor("the reservation event") { _ in
            rig.events().contains { $0["to"] as? String == "en_route" && $0["job"] as? String == "R1" && $0["reason"] as? String == "reservation" }
        }
    }

    @Test func aNextJobOfferedOnBoardStartsEnRouteAfterClear() async throws {
        let rig = try await Rig()
        defer { rig.stop() }
        try await rig.goOnDuty()
        try rig.offer("J1")
        try await rig.unit.waitForStatus("J1 offered") { $0.job?.id == "J1" }
        for input in ["accept", "arrived", "pob"] { try rig.press(input) }
        try await rig.unit.waitForStatus("on board") { $0.state == "on_board" }

        try rig.offer("J2", extra: #","next":true"#)
        // Shown beside the ride, it changes no state: accept is refused until the offer has arrived.
        var told = ""
        _ = try await rig.recorder.waitFor("J2 accepted beside the ride") { _ in
            told = (try? rig.press("accept")) ?? ""
            return !told.isEmpty
        }
        #expect(told.hasPrefix("Next job J2 accepted"), "\(told)")
        try await rig.waitForReply("J2", "accept")
        let stacked = try await rig.unit.waitForStatus("J2 stacked") { $0.next?.id == "J2" }
        #expect(stacked.state == "on_board" && stacked.job?.id == "J1")
        #expect(try upcoming(rig).map { $0["id"] as? String } == ["J2"])

        // A second next job is refused while one is stacked.
        try rig.offer("J3", extra: #","next":true"#)
        let refused = try await rig.waitForReply("J3", "busy")
        #expect(refused["reason"] as? String == "next job J2 already stacked")

        try rig.press("clear")
        let next = try await rig.unit.waitForStatus("J2 en route") { $0.state == "en_route" && $0.job?.id == "J2" }
        #expect(next.next == nil)
        _ = try await rig.recorder.waitFor("the next event") { _ in
            rig.events().contains { $0["to"] as? String == "en_route" && $0["job"] as? String == "J2" && $0["reason"] as? String == "next" }
        }
    }

    /// The same `add_pickup` update to a pre-booking twice through the broker, with an immediate job
    /// taken in between: the pickup is added once and the copy is answered as the first one was.
    @Test func aRedeliveredUpdateToAPreBookingIsAppliedOnce() async throws {
        let rig = try await Rig(extraTOML: "[job]\nreservation_lead_min = 60\nexpected_job_min = 10\n")
        defer { rig.stop() }
        try await rig.goOnDuty()
        let meeting = TestClock.milliseconds() + 3 * 3_600_000
        try rig.offer("R1", extra: #","meeting_time":\#(meeting)"#)
        try await rig.unit.waitForStatus("R1 offered") { $0.job?.id == "R1" }
        try rig.press("accept")
        try await rig.unit.waitForStatus("R1 ahead") { $0.state == "available" && $0.upcoming?.first?.id == "R1" }

        let update = #"{"job":"R1","add_pickup":{"lat":46.51,"lon":7.5,"address":"Markt 3","passengers":1},"update":"R-1-joined"}"#
        func answers() -> [[String: Any]] { rig.replies(job: "R1").filter { $0["re"] as? String == "job/update" } }
        try rig.publish("job/update", update)
        try await rig.recorder.waitFor("the first answer") { _ in answers().count >= 1 }
        // The job in hand changes between the copies; the pre-booking stays held.
        try rig.offer("J1")
        try await rig.unit.waitForStatus("J1 offered") { $0.job?.id == "J1" }
        try rig.press("accept")
        try await rig.unit.waitForStatus("J1 en route") { $0.state == "en_route" && $0.job?.id == "J1" }
        try rig.publish("job/update", update)
        try await rig.recorder.waitFor("the second answer") { _ in answers().count >= 2 }
        #expect(Set(answers().map { "\($0["reply"]!) \($0["update"]!) \($0["t"]!)" }).count == 1, "answered as the first time: \(answers())")
        let held = try #require(try rig.unit.status().upcoming?.first)
        #expect(held.id == "R1" && held.passengers == 2, "one added passenger, not two")
    }

    /// `job/update` with `meeting_time` through the broker: a later time moves the pre-booking, a
    /// past one is refused and changes nothing, and a time whose window is open starts it.
    @Test func aPreBookingsMeetingTimeIsMovedByAnUpdate() async throws {
        let rig = try await Rig(extraTOML: "[job]\nreservation_lead_min = 1\nexpected_job_min = 1\n")
        defer { rig.stop() }
        try await rig.goOnDuty()
        let now = TestClock.milliseconds()
        try rig.offer("R1", extra: #","meeting_time":\#(now + 3 * 3_600_000)"#)
        try await rig.unit.waitForStatus("R1 offered") { $0.job?.id == "R1" }
        try rig.press("accept")
        try await rig.unit.waitForStatus("R1 ahead") { $0.state == "available" && $0.upcoming?.first?.id == "R1" }
        func answer(_ id: String) -> [String: Any]? { rig.replies(job: "R1").first { $0["update"] as? String == id } }

        let later = now + 4 * 3_600_000
        try rig.publish("job/update", #"{"job":"R1","meeting_time":\#(later),"update":"later"}"#)
        _ = try await rig.recorder.waitFor("the later time shown") { _ in answer("later") != nil }
        #expect(answer("later")?["reply"] as? String == "shown")
        let moved = try await rig.unit.waitForStatus("R1 meets later") { $0.upcoming?.first?.meetingTime == later }
        #expect(moved.state == "available")
        _ = try await rig.recorder.waitFor("the new time in the retained status") { _ in
            ((retainedStatus(rig)?["upcoming"] as? [[String: Any]])?.first?["meeting_time"] as? NSNumber)?.int64Value == later
        }

        try rig.publish("job/update", #"{"job":"R1","meeting_time":\#(now - 60_000),"note":"ring twice","update":"past"}"#)
        _ = try await rig.recorder.waitFor("the past time refused") { _ in answer("past") != nil }
        #expect(answer("past")?["reply"] as? String == "invalid" && answer("past")?["reason"] as? String == "meeting_time has passed")
        let held = try #require(try rig.unit.status().upcoming?.first)
        #expect(held.meetingTime == later && held.note == nil, "the refused update changed nothing")

        // Its window (a minute before) is already open: the pre-booking starts.
        try rig.publish("job/update", #"{"job":"R1","meeting_time":\#(TestClock.milliseconds() + 50_000),"update":"soon"}"#)
        let started = try await rig.unit.waitForStatus("R1 en route") { $0.state == "en_route" && $0.job?.id == "R1" }
        #expect(started.upcoming == nil)
        _ = try await rig.recorder.waitFor("the move answered") { _ in answer("soon") != nil }
        #expect(answer("soon")?["reply"] as? String == "shown")
    }
}
