import Foundation
import TestHarness
import Testing

/// The shift's history on the real parts: the daemon, mosquitto, the SQLite file and the serial
/// terminal over a PTY. A ride finished with a fare and a payment shows on the history key's pages,
/// then the totals, then the state's screen again; after a restart, read back from the store.
@Suite(.serialized) struct HistoryTerminalTests {
    typealias Rig = DriverTerminalTests.Rig

    @Test func theHistoryKeyShowsTheFinishedRideThenTheShiftsTotals() async throws {
        let rig = try await Rig()
        try await rig.screen.press("d")
        try await rig.waitForRow(0, "AVAILABLE")
        try rig.publish("job/offer", #"{"job":"H1","pickup":{"lat":46.5,"lon":7.5,"address":"Via Roma 12"},"fare":2350,"currency":"EUR"}"#)
        try await rig.waitForRow(0, "NEW JOB")
        for (key, heading) in [("a", "TO PICKUP"), ("h", "AT PICKUP"), ("1", "ON BOARD"), ("c", "PAYMENT")] {
            try await rig.screen.press(key)
            try await rig.waitForRow(0, heading)
        }
        try await rig.screen.press("2")
        try await rig.waitForRow(0, "AVAILABLE")

        try await rig.screen.press("j")
        let ride = try await rig.waitForRow(0, "JOB ")
        #expect(ride.rows[0] == "JOB              1/2")
        #expect(ride.rows[1] == "Via Roma 12         ")
        #expect(ride.rows[2].hasPrefix("EUR 23.50      ") && ride.rows[2].dropFirst(15).contains(":"))
        #expect(ride.rows[3] == "Card                ")

        try await rig.screen.press("j")
        let totals = try await rig.waitForRow(0, "JOBS 1")
        #expect(totals.rows[0] == "JOBS 1           2/2")
        #expect(totals.rows[1].hasPrefix("Driving 0h"))
        #expect(totals.rows[2] == "Card       EUR 23.50")

        try await rig.screen.press("j")
        try await rig.waitForRow(0, "AVAILABLE")
        rig.stop()
    }

    /// Three rides paid three ways, then the daemon restarts: the pages show every ride with its
    /// pickup, and the totals go on to a second page for the third payment.
    @Test func afterARestartTheHistoryShowsTheShiftsRidesAndEveryPayment() async throws {
        let rig = try await Rig()
        try await rig.screen.press("d")
        try await rig.waitForRow(0, "AVAILABLE")
        let rides: [(job: String, pickup: String, fare: Int, key: String)] = [
            ("P1", #""address":"Bahnhofplatz 1""#, 980, "1"), ("P2", #""address":"Corso Buenos Aires 1, Milano""#, 2350, "2"), ("P3", "", 1200, "3"),
        ]
        for ride in rides {
            try rig.publish("job/offer", #"{"job":"\#(ride.job)","pickup":{"lat":46.5,"lon":7.5\#(ride.pickup.isEmpty ? "" : ",")\#(ride.pickup)},"fare":\#(ride.fare),"currency":"EUR"}"#)
            try await rig.waitForRow(0, "NEW JOB")
            for (key, heading) in [("a", "TO PICKUP"), ("h", "AT PICKUP"), ("1", "ON BOARD"), ("c", "PAYMENT"), (ride.key, "AVAILABLE")] {
                try await rig.screen.press(key)
                try await rig.waitForRow(0, heading)
            }
        }
        // The pickup address is personal data: nothing above debug (`<7>`) carries it.
        let logged = rig.unit.log.split(separator: "\n").filter { !$0.hasPrefix("<7>") }
        #expect(logged.contains { $0.contains("ride stored") }, "the ride's own line is there to look at")
        #expect(!logged.contains { $0.contains("Corso Buenos Aires") })
        // Left on a history page: the state's screen after the restart shows the new daemon drew it.
        try await rig.screen.press("j")
        try await rig.waitForRow(0, "JOB ")
        rig.unit.stop()
        try await rig.unit.start()
        try await rig.unit.waitForStatus("broker connected again") { $0.broker.connected }
        try await rig.waitForRow(0, "AVAILABLE")

        // Newest first: no address and no fix (no gpsd here) leaves the job's id.
        var pages: [[String]] = []
        for page in 1...5 {
            try await rig.screen.press("j")
            pages.append(try await rig.screen.waitFor("history page \(page)") { $0.rows[0].hasSuffix(" \(page)/5") }.rows)
        }
        #expect(pages.map { String($0[0].prefix(6)) } == ["JOB   ", "JOB   ", "JOB   ", "JOBS 3", "JOBS 3"])
        #expect(pages[0][1] == "P3                  " && pages[0][3] == "Account             ")
        #expect(pages[1][1] == "Corso Buenos Aires 1" && pages[1][2].hasPrefix("EUR 23.50 "))
        #expect(pages[2][1] == "Bahnhofplatz 1      " && pages[2][3] == "Cash                ")
        #expect(pages[3] == ["JOBS 3           4/5", pages[3][1], "Cash        EUR 9.80", "Card       EUR 23.50"])
        #expect(pages[3][1].hasPrefix("Driving 0h"))
        #expect(pages[4] == ["JOBS 3           5/5", "Account    EUR 12.00", "                    ", "                    "])
        try await rig.screen.press("j")
        try await rig.waitForRow(0, "AVAILABLE")
        rig.stop()
    }
}
