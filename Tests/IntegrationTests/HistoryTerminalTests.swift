import Foundation
import TestHarness
import Testing

/// The shift's history on the real parts: the daemon, mosquitto, the SQLite file and the serial
/// terminal over a PTY. A ride finished with a fare and a payment is read back from the store by
/// the history key, then the totals, then the state's screen again.
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
        #expect(ride.rows[1] == "H1                  ")
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
}
