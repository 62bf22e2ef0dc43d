import TaxiProtocol
import Testing
import UnitCore

/// Broadcasts (docs/protocol.md, "Broadcasts"): which zone's topic the unit listens on, decided by
/// the core's step, and what it keeps of what arrives on the fleet's and the zones' topics.
@Suite struct BroadcastTests {
    let now = Scenario.t0
    static let t0S = Scenario.t0.seconds

    static func square(_ id: String, latitude: Double) -> Zone {
        Zone(id: id, polygon: [
            .init(latitude: latitude, longitude: 7.49), .init(latitude: latitude, longitude: 7.50),
            .init(latitude: latitude + 0.01, longitude: 7.50), .init(latitude: latitude + 0.01, longitude: 7.49),
        ])
    }

    static let north = square("north", latitude: 46.60)
    static let south = square("south", latitude: 46.50)

    func machine(zones: [Zone] = [north, south], capacity: Int = 50) -> UnitStateMachine {
        UnitStateMachine(
            settings: UnitSettings(positions: PositionSettings(zones: zones)),
            messages: DriverMessages(settings: DriverMessageSettings(capacity: capacity)))
    }

    /// A fix `second` seconds in, at `latitude` (the zones' middle longitude).
    func fix(_ machine: inout UnitStateMachine, latitude: Double, second: Int) -> Step {
        let sample = GPSSample(mode: 3, time: Self.t0S + Double(second), latitude: latitude, longitude: 7.495, horizontalError: 3)
        return machine.handle(.gps(sample, at: unsynchronised(Double(second))))
    }

    func broadcast(_ id: String, zone: String? = nil, retained: Bool = false) -> UnitEvent {
        .broadcast(TextMessage(id: id, text: "News \(id)"), zone: zone, retained: retained, receivedAt: now)
    }

    // MARK: The zone subscription

    @Test func theZoneSubscriptionFollowsTheZoneChangesOfTheSteps() {
        var unit = machine()
        #expect(fix(&unit, latitude: 46.70, second: 0).broadcastZones == nil, "in no zone: nothing to join")
        #expect(fix(&unit, latitude: 46.605, second: 1).broadcastZones == BroadcastZoneChange(leave: nil, join: "north"))
        #expect(fix(&unit, latitude: 46.606, second: 2).broadcastZones == nil, "still in north")
        #expect(fix(&unit, latitude: 46.505, second: 3).broadcastZones == BroadcastZoneChange(leave: "north", join: "south"))
        #expect(unit.positions.zones.broadcastZone == "south")
        #expect(fix(&unit, latitude: 46.40, second: 4).broadcastZones == BroadcastZoneChange(leave: "south", join: nil))
        #expect(unit.positions.zones.broadcastZone == nil)
    }

    @Test func aFleetDocumentThatRemovesTheTaxisZoneLeavesItsTopicAtOnce() {
        var unit = machine()
        _ = fix(&unit, latitude: 46.605, second: 0)
        let removed = unit.use(UnitSettings(positions: PositionSettings(zones: [Self.south])))
        #expect(removed.broadcastZones == BroadcastZoneChange(leave: "north", join: nil))
        #expect(unit.positions.zones.broadcastZone == nil, "not subscribed again at the next connection")
        #expect(unit.handle(broadcast("z1", zone: "north")).inbox.isEmpty)
        let kept = unit.use(UnitSettings(positions: PositionSettings(zones: [Self.south, Self.north])))
        #expect(kept.broadcastZones == BroadcastZoneChange(leave: nil, join: "north"), "back before any fix: joined again")
        #expect(!unit.handle(broadcast("z2", zone: "north")).inbox.isEmpty)
        var other = machine()
        _ = fix(&other, latitude: 46.605, second: 0)
        let moved = other.use(UnitSettings(positions: PositionSettings(zones: [Self.north, Self.south], zoneHysteresisM: 50)))
        #expect(moved.broadcastZones == nil && other.positions.zones.broadcastZone == "north", "north still configured")
    }

    @Test func aZoneWhoseIdCannotNameATopicHasNoSubscription() {
        for id in ["a/b", "a+", "#", "nul\u{0}"] { #expect(!ContractTopic.isBroadcastZone(id), "\(id)") }
        #expect(ContractTopic.isBroadcastZone("old town"))
        #expect(ZoneChange(from: nil, to: "a/b").broadcastZones == nil)
        #expect(ZoneChange(from: "a/b", to: "north").broadcastZones == BroadcastZoneChange(leave: nil, join: "north"))
        #expect(ZoneChange(from: "north", to: "a+").broadcastZones == BroadcastZoneChange(leave: "north", join: nil))
    }

    @Test func changesInOneStepMoveTheSubscriptionOnceFromTheFirstZoneToTheLast() {
        var step = Step()
        step += Step()
        #expect(step.broadcastZones == nil)
        var first = Step()
        first.broadcastZones = BroadcastZoneChange(leave: "a", join: "b")
        var second = Step()
        second.broadcastZones = BroadcastZoneChange(leave: "b", join: "c")
        #expect((first + second).broadcastZones == BroadcastZoneChange(leave: "a", join: "c"))
        #expect((first + Step()).broadcastZones == BroadcastZoneChange(leave: "a", join: "b"))
    }

    @Test func theZoneTopicIsSpelledByTheCatalogue() {
        #expect(ContractTopic.fleetMsg.topic(prefix: "taxi", fleet: "north", unit: "T1") == "taxi/north/msg")
        #expect(ContractTopic.zoneMsg.topic(prefix: "taxi", fleet: "north", unit: "T1", zone: "Z3") == "taxi/north/zone/Z3/msg")
        #expect(ContractTopic.zoneMsg.topic(prefix: "taxi", fleet: "north", unit: "T1") == "taxi/north/zone/+/msg", "every zone: a filter")
        #expect(ContractTopic.fleetMsg.isFleetWide && ContractTopic.zoneMsg.isFleetWide)
        #expect(!ContractTopic.fleetMsg.isUnitTopic && !ContractTopic.zoneMsg.isUnitTopic)
        #expect(ContractTopic.fleetMsg.publisher == .dispatcher && ContractTopic.zoneMsg.publisher == .dispatcher)
        #expect(ContractTopic.zoneMsg.readers.contains(.unit) && !ContractTopic.zoneMsg.retained)
    }

    // MARK: What is kept

    @Test func aBroadcastIsKeptShownAndReadLikeAMessage() {
        var unit = machine()
        let step = unit.handle(broadcast("b1"))
        guard case .save(let kept) = step.inbox.first else { Issue.record("not stored"); return }
        #expect(kept.id == "b1" && step.durability == .promised)
        #expect(step.told == ["Message b1: News b1"])
        let read = unit.handle(.driver(.message(.read), at: now + .milliseconds(10)))
        #expect(read.messages == [.messageRead(MessageRead(msg: "b1", t: now + .milliseconds(10)))], "the receipt names the broadcast")
    }

    @Test func theSameBroadcastOnBothTopicsOrDeliveredAgainIsShownOnce() {
        var unit = machine()
        _ = fix(&unit, latitude: 46.605, second: 0)
        #expect(!unit.handle(broadcast("b1")).inbox.isEmpty)
        let onTheZonesTopic = unit.handle(broadcast("b1", zone: "north"))
        #expect(onTheZonesTopic.inbox.isEmpty && onTheZonesTopic.told.isEmpty)
        _ = unit.handle(.driver(.message(.read), at: now + .milliseconds(1)))
        let again = unit.handle(broadcast("b1"))
        #expect(again.inbox.isEmpty && again.messages.isEmpty, "read already: no second receipt either")
        #expect(unit.driverMessages.inbox.map(\.id) == ["b1"])
    }

    @Test func aZonesBroadcastReachesOnlyATaxiInThatZone() {
        var unit = machine()
        let outside = unit.handle(broadcast("z1", zone: "north"))
        #expect(outside.inbox.isEmpty && outside.notes == ["zone north broadcast z1 ignored: the taxi is in no zone"])
        _ = fix(&unit, latitude: 46.505, second: 0)
        let elsewhere = unit.handle(broadcast("z2", zone: "north"))
        #expect(elsewhere.inbox.isEmpty && elsewhere.notes == ["zone north broadcast z2 ignored: the taxi is in zone south"])
        _ = fix(&unit, latitude: 46.605, second: 1)
        #expect(!unit.handle(broadcast("z3", zone: "north")).inbox.isEmpty)
        #expect(unit.driverMessages.inbox.map(\.id) == ["z3"])
    }

    @Test func aRetainedBroadcastIsIgnored() {
        var unit = machine()
        let step = unit.handle(broadcast("r1", retained: true))
        #expect(step.inbox.isEmpty && step.driver.isEmpty && step.notes == ["retained fleet broadcast r1 ignored"])
        #expect(unit.driverMessages.inbox.isEmpty)
        #expect(!unit.handle(broadcast("r1")).inbox.isEmpty, "the same one sent live is kept")
    }

    @Test func whatIsKeptOfBroadcastsIsBoundedByTheInbox() {
        var unit = machine(capacity: 3)
        for index in 1...10 { _ = unit.handle(broadcast("b\(index)")) }
        #expect(unit.driverMessages.inbox.map(\.id) == ["b8", "b9", "b10"])
    }
}
