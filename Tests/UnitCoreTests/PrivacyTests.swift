import TaxiProtocol
import Testing
import UnitCore

/// `[privacy] off_duty_positions = false`: nothing of an off-duty taxi's whereabouts leaves it.
@Suite struct PrivacyTests {
    static let t0 = 1_780_000_000.0

    func fix(_ machine: inout UnitStateMachine, _ second: Int) -> Step {
        let sample = GPSSample(mode: 3, time: Self.t0 + Double(second), latitude: 46.5 + Double(second) * 0.01, longitude: 7.5)
        return machine.handle(.gps(sample, at: unsynchronised(Double(second))))
    }

    let zone = Zone(id: "centre", polygon: [.init(latitude: 46, longitude: 7), .init(latitude: 48, longitude: 7), .init(latitude: 48, longitude: 8), .init(latitude: 46, longitude: 8)])

    @Test func offDutyFixesAreNeitherReportedStoredNorZonedButTheSOSHasOne() {
        var machine = UnitStateMachine(settings: UnitSettings(positions: PositionSettings(zones: [zone], offDutyPositions: false)))
        for second in 0..<5 {
            let step = fix(&machine, second)
            #expect(step.fixes.isEmpty)
            #expect(step.messages.isEmpty)
        }
        #expect(machine.lastFix != nil)
        let heartbeat = machine.handle(.timerFired(.heartbeat, at: UnitTime(seconds: Self.t0 + 900)))
        #expect(heartbeat.messages.isEmpty)
        let sos = machine.handle(.driver(.sos, at: UnitTime(seconds: Self.t0 + 5)))
        guard case .sos(let alarm)? = sos.messages.first else { Issue.record("no alarm"); return }
        #expect(alarm.fix != nil)
    }

    @Test func onDutyTheSameFixesAreReported() {
        var machine = UnitStateMachine(settings: UnitSettings(positions: PositionSettings(zones: [zone], offDutyPositions: false)))
        _ = machine.handle(.driver(.duty, at: 0))
        let step = fix(&machine, 0)
        #expect(step.fixes.map(\.report) == [true])
        #expect(step.messages.contains { if case .zone = $0 { true } else { false } })
    }

    @Test func byDefaultOffDutyPositionsAreReported() {
        var machine = UnitStateMachine()
        #expect(fix(&machine, 0).fixes.map(\.report) == [true])
    }
}
