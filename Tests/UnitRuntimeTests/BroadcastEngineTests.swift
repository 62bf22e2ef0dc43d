import ControlSocket
import Foundation
import TestHarness
import Testing
@testable import UnitRuntime

/// The broadcast subscriptions in-process: the engine performs what the core's steps decide, on a
/// recording broker whose subscriptions outlive a connection as a persistent session's do.
@Suite(.serialized) struct BroadcastEngineTests {
    static let zones = """
        [[zones]]
        id = "north"
        polygon = [[46.60, 7.49], [46.60, 7.50], [46.61, 7.50], [46.61, 7.49]]

        [[zones]]
        id = "south"
        polygon = [[46.50, 7.49], [46.50, 7.50], [46.51, 7.50], [46.51, 7.49]]
        """

    @Test func theZoneSubscriptionFollowsTheTaxiAndIsPutRightAtTheNextConnection() async throws {
        let unit = try EngineUnderTest(Self.zones)
        // The taxi was in south before the restart; the broker kept the session.
        unit.broker.holdInSession("taxi/f/zone/south/msg")
        try await unit.start()
        unit.broker.acceptConnection()
        try await unit.eventually("the fleet's broadcasts subscribed") { unit.broker.subscriptions.contains("taxi/f/msg") }
        #expect(!unit.broker.subscriptions.contains { $0.contains("/zone/") }, "in no zone yet: south left")

        unit.fixes.fix(latitude: 46.605, longitude: 7.495)
        try await unit.eventually("north's broadcasts subscribed") { unit.broker.subscriptions.contains("taxi/f/zone/north/msg") }

        // Moved while the broker is away: the session keeps north until the unit is back.
        unit.broker.loseConnection()
        unit.fixes.fix(latitude: 46.505, longitude: 7.495)
        try await unit.eventually("in south") { try await unit.status().zone == "south" }
        #expect(unit.broker.subscriptions.contains("taxi/f/zone/north/msg"))
        unit.broker.acceptConnection()
        try await unit.eventually("north left, south joined") {
            let subscribed = unit.broker.subscriptions
            return subscribed.contains("taxi/f/zone/south/msg") && !subscribed.contains("taxi/f/zone/north/msg") && subscribed.contains("taxi/f/msg")
        }

        // The same broadcast on the zone's and the fleet's topic, and one for the zone left: one kept.
        unit.broker.receive("taxi/f/zone/south/msg", #"{"id":"b1","text":"Hello south"}"#)
        unit.broker.receive("taxi/f/msg", #"{"id":"b1","text":"Hello south"}"#)
        unit.broker.receive("taxi/f/zone/north/msg", #"{"id":"b2","text":"Hello north"}"#)
        unit.broker.receive("taxi/f/msg", #"{"id":"b3","text":"Old news"}"#, retained: true)
        let read = try await unit.press("msg")
        #expect(read.message == "Message b1 (1/1): Hello south")
        try await unit.eventually("the receipt") { unit.published(on: "msg/read").count == 1 }
        #expect(unit.published(on: "msg/read").first?.json["msg"] as? String == "b1")
        await unit.stop()
    }
}
