import Testing
import UnitCore

/// `soon`: on board, the driver tells the dispatcher when the taxi will be clear.
@Suite struct SoonClearTests {
    let t = Scenario.t0

    @Test func onBoardTheAnnouncementIsSentAndNothingElseChanges() {
        var settings = UnitSettings()
        settings.soonClearMin = 7
        var machine = Scenario.machine(in: .onBoard, settings: settings)
        let before = machine.state
        let step = machine.handle(.driver(.soonClear(minutes: nil), at: t))
        #expect(step.messages == [.soonClear(SoonClear(job: "J1", minutes: 7), at: t)])
        #expect(step.told == ["Clear in 7 min: sent"])
        #expect(step.durability == .promised, "the driver is told it is sent")
        #expect(machine.state == before)
        #expect(machine.handle(.driver(.soonClear(minutes: 2), at: t)).messages == [.soonClear(SoonClear(job: "J1", minutes: 2), at: t)])
    }

    @Test func theWordTakesMinutesWithinBounds() {
        #expect(DriverInput.parse("soon") == .success(.soonClear(minutes: nil)))
        #expect(DriverInput.parse("soon 10") == .success(.soonClear(minutes: 10)))
        #expect(DriverInput.parse("soon 0") == .failure(.badArgument(input: "soon", problem: "minutes must be a whole number from 1 to 120, found \"0\"")))
        #expect(DriverInput.parse("soon 121") != .success(.soonClear(minutes: 121)))
    }
}
