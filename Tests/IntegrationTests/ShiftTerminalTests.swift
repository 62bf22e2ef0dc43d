import ControlSocket
import Foundation
import TestHarness
import Testing

/// The driver's shift on the real parts: the daemon with gpsd (gpsfake) and mosquitto, the serial
/// terminal over a PTY. A shift limit set tiny by the unit's file is warned about ahead and when
/// reached, on the terminal, and the dispatcher gets the `shift` events.
@Suite(.serialized) struct ShiftTerminalTests {
    typealias Rig = DriverTerminalTests.Rig

    func shiftEvents(_ rig: Rig, _ what: String) -> [[String: Any]] {
        rig.recorder.messages(onTopic: rig.unit.topicBase + "event").compactMap(\.json)
            .filter { $0["type"] as? String == "shift" && $0["what"] as? String == what }
    }

    @Test func aShiftLimitIsWarnedAheadAndWhenReachedAndTheDispatcherHearsIt() async throws {
        let rig = try await Rig(withGPS: true, extraTOML: "[shift]\nmax_shift_min = 1\nwarn_before_min = 1\n")
        try await rig.unit.waitForStatus("a fix") { $0.gps.lastFixTime != nil }
        try await rig.screen.press("d")
        try await rig.recorder.waitFor("the shift start") { _ in !shiftEvents(rig, "start").isEmpty }
        let start = try #require(shiftEvents(rig, "start").first)
        #expect(start["shift_s"] as? Int == 0 && start["driving_s"] as? Int == 0)

        // A minute's shift with a minute's warning: warned at the next fix, reached a minute later.
        try await rig.screen.waitFor("the warning ahead", timeoutS: 15) { $0.rows[3].hasPrefix("Shift ends in 1m") }
        try await rig.screen.waitFor("the limit reached", timeoutS: 90) { $0.rows[3].hasPrefix("SHIFT LIMIT REACHED") }
        try await rig.recorder.waitFor("the limit event") { _ in !shiftEvents(rig, "limit").isEmpty }
        let limit = try #require(shiftEvents(rig, "limit").first)
        #expect(limit["limit"] as? String == "shift_length")
        #expect((limit["shift_s"] as? Int ?? 0) >= 60 && (limit["on_duty_s"] as? Int ?? 0) >= 60)
        #expect(shiftEvents(rig, "limit").count == 1, "once, not at every fix")

        // Ending it needs off duty first; then the dispatcher gets the end with the odometer.
        #expect(try rig.unit.request(.init(cmd: .press, input: "shift end 1234")).message == "Go off duty first")
        try await rig.screen.press("d")
        try await rig.waitForRow(0, "OFF DUTY")
        _ = try rig.unit.request(.init(cmd: .press, input: "shift end 1234"))
        try await rig.recorder.waitFor("the shift end") { _ in !shiftEvents(rig, "end").isEmpty }
        #expect(shiftEvents(rig, "end").first?["odometer_km"] as? Int == 1234)
        let problems = try ContractCheck.problems(in: rig.recorder.messages)
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
        rig.stop()
    }
}
