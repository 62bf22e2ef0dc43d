import Foundation
import TestHarness
import Testing

/// The pre-bookings page on the real parts: the daemon, mosquitto, the SQLite file and the serial
/// terminal over a PTY. Reservations accepted from the terminal are held as pre-bookings and shown
/// one per page with the pre-bookings key.
@Suite(.serialized) struct PreBookingTerminalTests {
    typealias Rig = DriverTerminalTests.Rig

    /// `HH:MM` of `ms` in the local time zone, as the unit shows it.
    func localClock(_ ms: Int64) -> String {
        let seconds = ms / 1000 + Int64(TimeZone.current.secondsFromGMT(for: Date(timeIntervalSince1970: Double(ms) / 1000)))
        let minuteOfDay = (seconds / 60 % 1440 + 1440) % 1440
        return String(format: "%02d:%02d", minuteOfDay / 60, minuteOfDay % 60)
    }

    @Test func acceptedPreBookingsAreShownOnePerPageAndAnyOtherKeyReturns() async throws {
        let rig = try await Rig(extraTOML: "[job]\nreservation_lead_min = 60\nexpected_job_min = 20\n")
        defer { rig.stop() }
        try await rig.screen.press("d")
        try await rig.waitForRow(0, "AVAILABLE")

        try await rig.screen.press("k")
        let none = try await rig.waitForRow(0, "PRE-BOOKING")
        #expect(none.rows[0...1] == ["PRE-BOOKING         ", "No pre-bookings     "])
        try await rig.screen.press("k")
        try await rig.waitForRow(0, "AVAILABLE")

        let now = TestClock.milliseconds()
        let first = now + 3 * 3_600_000, second = now + 5 * 3_600_000
        for (job, meeting, pickup, passengers) in [
            ("R1", first, #"{"lat":46.5,"lon":7.5,"address":"Via Roma 12, Milano Centrale"}"#, 2), ("R2", second, #"{"lat":46.51,"lon":7.5}"#, 1),
        ] {
            try rig.publish("job/offer", #"{"job":"\#(job)","pickup":\#(pickup),"passengers":\#(passengers),"meeting_time":\#(meeting)}"#)
            try await rig.waitForRow(0, "NEW JOB")
            try await rig.screen.press("a")
            try await rig.waitForReply(job, "accept")
            try await rig.unit.waitForStatus("\(job) held") { $0.state == "available" && $0.upcoming?.contains { $0.id == job } == true }
        }
        try await rig.waitForRow(0, "AVAILABLE")

        try await rig.screen.press("k")
        let page1 = try await rig.waitForRow(0, "PRE-BOOKING      1/2")
        #expect(page1.rows[1].hasPrefix("Meet \(localClock(first)) in 3h"), "\(page1.rows)")
        #expect(page1.rows[2] == "Via Roma 12, Milano ")
        #expect(page1.rows[3] == "R1             2 pax")
        try await rig.screen.press("k")
        let page2 = try await rig.waitForRow(0, "PRE-BOOKING      2/2")
        #expect(page2.rows[1].hasPrefix("Meet \(localClock(second)) in 5h"), "\(page2.rows)")
        #expect(page2.rows[2] == "46.51, 7.5          ")
        #expect(page2.rows[3] == "R2             1 pax")
        try await rig.screen.press("k")
        try await rig.waitForRow(0, "AVAILABLE")

        // Any other key returns to the state's screen.
        try await rig.screen.press("k")
        try await rig.waitForRow(0, "PRE-BOOKING      1/2")
        try await rig.screen.press("s")
        let back = try await rig.waitForRow(0, "AVAILABLE")
        #expect(back.rows[3] == "Free seats 3        ")
    }
}
