import Foundation
import LocalCache
import Logging
import MQTTLink
import TaxiProtocol
import TestHarness
import Testing
@testable import UnitRuntime

/// The poison-message guard on a real SQLite file: a "death" is a guard dropped while a message is
/// in hand, and the next start is a new guard on the same store.
@Suite struct PoisonGuardTests {
    let directory = NSTemporaryDirectory() + "taxiunitd-poison-\(UUID().uuidString)"
    let logger = Logger(label: "poison-test")
    let poison = MQTTMessage(topic: "taxi/f/config", payload: Array(#"{"version":1}"#.utf8), qos: 1, retained: true)
    let harmless = MQTTMessage(topic: "taxi/f/T1/job/offer", payload: Array(#"{"job":"J1"}"#.utf8), qos: 1, retained: false)

    func start(_ store: LocalCache) -> PoisonGuard {
        PoisonGuard(store: store, at: TestClock.now(), logger: logger)
    }

    @Test func aMessageTheUnitDiesHandlingTwiceIsSetAsideAndRefusedAfter() throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try LocalCache(path: directory + "/unit.sqlite")
        var guardian = start(store)
        guardian.handling(harmless)
        guardian.handled()
        guardian.handling(poison)
        // Died: the next start suspects it; a message handled in between does not clear that.
        guardian = start(store)
        #expect(guardian.setAsideAtStart == nil && !guardian.isPoison(poison))
        guardian.handling(harmless)
        guardian.handled()
        guardian.handling(poison)
        // Died again on it: set aside, counted, remembered.
        guardian = start(store)
        #expect(guardian.setAsideAtStart == PoisonGuard.Message(topic: poison.topic, payload: Data(poison.payload), deaths: 2))
        #expect(try store.asideCounts()[.inboundMessage] == 1)
        #expect(try store.loadValue(PoisonGuard.Message.self, forKey: PoisonGuard.inHandKey) == nil)
        // Its next copy is refused on every later start; other messages are not.
        guardian = start(store)
        #expect(guardian.setAsideAtStart == nil && guardian.isPoison(poison) && !guardian.isPoison(harmless))
    }

    @Test func aMessageHandledAfterOneDeathIsNoLongerSuspect() throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try LocalCache(path: directory + "/unit.sqlite")
        var guardian = start(store)
        guardian.handling(poison)
        guardian = start(store)
        guardian.handling(poison)
        guardian.handled()
        guardian.handling(poison)
        // One death after it was handled once is a first death again.
        guardian = start(store)
        #expect(guardian.setAsideAtStart == nil && !guardian.isPoison(poison))
        #expect(try store.asideCounts()[.inboundMessage] == nil)
    }
}
