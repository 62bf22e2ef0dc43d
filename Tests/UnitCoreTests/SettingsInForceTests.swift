import TaxiProtocol
import Testing
import UnitCore

/// A fleet document's settings are in force from the step that applies them: everything the core
/// makes from settings follows at once, with no restart.
@Suite struct SettingsInForceTests {
    let t = Scenario.t0

    /// A fix `seconds` after t0, 1 km north of the pickup (no arrival), moving a little each time.
    func fix(_ seconds: Double) -> UnitEvent {
        .gps(Scenario.sample(t.seconds + seconds, lat: 46.509 + seconds * 1e-6))
    }

    func reported(_ machine: inout UnitStateMachine, from: Int, to: Int) -> Int {
        (from..<to).reduce(0) { count, second in count + machine.handle(fix(Double(second))).fixes.filter(\.report).count }
    }

    @Test func theReportingIntervalChangesAtTheNextFix() {
        var machine = Scenario.machine(in: .available, settings: UnitSettings(reportingIntervalS: 60))
        _ = machine.handle(fix(0))
        #expect(reported(&machine, from: 1, to: 21) <= 1, "one in a minute")
        _ = machine.use(UnitSettings(reportingIntervalS: 1))
        #expect(reported(&machine, from: 21, to: 41) == 20, "one a second from the next fix on")
    }

    @Test func offDutyPositionsTurnedOffStopsReportingStoringAndZones() {
        let zone = Zone(id: "Z1", polygon: [.init(latitude: 46.4, longitude: 7.4), .init(latitude: 46.6, longitude: 7.4),
                                            .init(latitude: 46.6, longitude: 7.6), .init(latitude: 46.4, longitude: 7.6)])
        let open = UnitSettings(positions: PositionSettings(zones: [zone], offDutyPositions: true))
        var machine = Scenario.machine(in: .offDuty, settings: open)
        #expect(!machine.handle(fix(1)).fixes.isEmpty, "off duty and public: the fix is recorded")
        var closed = open
        closed.positions.offDutyPositions = false
        _ = machine.use(closed)
        for second in 2..<30 {
            let step = machine.handle(fix(Double(second)))
            #expect(step.fixes.isEmpty && step.messages.isEmpty, "nothing recorded, reported or zone-matched")
        }
        let heartbeat = machine.handle(.timerFired(.heartbeat, at: t + .milliseconds(3_600_000)))
        #expect(heartbeat.messages.isEmpty, "the heartbeat repeats nothing")
        #expect(machine.settings == closed)
    }

    @Test func newZonesAreMatchedAndTheZoneTheTaxiIsInIsKept() {
        func square(_ id: String, lat: Double) -> Zone {
            Zone(id: id, polygon: [.init(latitude: lat - 0.01, longitude: 7.49), .init(latitude: lat + 0.01, longitude: 7.49),
                                   .init(latitude: lat + 0.01, longitude: 7.51), .init(latitude: lat - 0.01, longitude: 7.51)])
        }
        var settings = UnitSettings(positions: PositionSettings(zones: [square("North", lat: 46.509)]))
        var machine = Scenario.machine(in: .available, settings: settings)
        _ = machine.handle(fix(1))
        #expect(machine.positions.zones.current == "North")
        // The same zones again: no change is reported for the zone the taxi is still in.
        _ = machine.use(settings)
        #expect(!machine.handle(fix(2)).messages.contains { if case .zone = $0 { true } else { false } })
        // North is gone, Centre covers the taxi: the next fix says it moved from North to Centre.
        settings.positions.zones = [square("Centre", lat: 46.509)]
        _ = machine.use(settings)
        let moved = machine.handle(fix(3))
        #expect(moved.messages.contains { if case .zone(let change, _) = $0 { change == ZoneChange(from: "North", to: "Centre") } else { false } })
    }

    @Test func jobTimingsAndSeatsFollowAtOnce() {
        var machine = Scenario.machine(in: .available, settings: UnitSettings(offerTimeout: .seconds(60), seats: 4))
        let changed = machine.use(UnitSettings(offerTimeout: .seconds(15), seats: 2))
        #expect(changed.status?.seatsLeft == 2)
        let offered = machine.handle(.inbound(.offer(Scenario.offer("J9")), receivedAt: t))
        #expect(offered.timers.contains(.start(.offerDeadline(job: "J9"), fireAt: t + .milliseconds(15_000))))
    }

    /// The no-show wait runs on the unit clock from arrival, whichever way the receiver's own GPS
    /// time is off: an hour behind or an hour ahead of the synchronised system clock.
    @Test(arguments: [-3_600.0, 3_600.0])
    func theNoShowWaitAndTheWaitingTimeAreOnTheUnitClock(gpsAheadS: Double) {
        var machine = Scenario.machine(in: .enRoute, settings: UnitSettings(noShowWait: .seconds(10)))
        let arrival = t.seconds
        let onThePickup = GPSSample(mode: 3, time: arrival + gpsAheadS, latitude: Scenario.pickup.lat, longitude: Scenario.pickup.lon)
        _ = machine.handle(.gps(onThePickup, at: ClockSample(system: UnitTime(seconds: arrival), systemSynchronised: true, monotonic: .checkedSeconds(0))))
        #expect(machine.state == .atPickup(Job(Scenario.offer("J1")), arrivedAt: t), "arrived at the unit clock's time")
        #expect(Scenario.refused(machine.handle(.driver(.noShow, at: t + .milliseconds(3_000)))) == [.noShowTooEarly(secondsLeft: 7)])
        var boarding = machine
        _ = boarding.handle(.driver(.passengersOnBoard(1), at: t + .milliseconds(4_000)))
        let ride = boarding.handle(.driver(.clear, at: t + .milliseconds(60_000))).ride
        #expect(ride?.waiting == .seconds(4))
        #expect(machine.handle(.driver(.noShow, at: t + .milliseconds(10_000))).messages.contains { if case .event = $0 { true } else { false } })
        #expect(machine.state == .available)
    }
}
