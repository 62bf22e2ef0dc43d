import Foundation
import LocalCache
import Logging
import TaxiProtocol
import TestHarness
import Testing
import UnitConfig
import UnitCore
@testable import UnitRuntime

/// Retention ages waiting positions by the unit clock; a clock that jumped years ahead (a receiver's
/// bad date while the system clock is not synchronised) must not purge the queue.
@Suite struct RetentionClockTests {
    @Test func onlyATrustedClockDropsPositionsPastRetention() throws {
        let directory = NSTemporaryDirectory() + "taxiunitd-retention-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try LocalCache(path: directory + "/unit.sqlite")
        let now = TestClock.now()
        try store.write { transaction in
            for index in 0..<20 { try transaction.queuePosition(Fix(time: now + .seconds(index), latitude: 46.5, longitude: 7.5), createdAt: now) }
        }
        let configuration = try UnitConfiguration(document: ConfigValue.parseTOML("[unit]\nid = \"T1\"\nfleet = \"f\"\n[store]\nretention_days = 7\n"))
        var upkeep = StoreUpkeep(store: store, settings: configuration.store, logger: Logger(label: "test"))
        let tenYearsLater = now + .seconds(10 * 365 * 86_400)
        _ = upkeep.run(now: tenYearsLater, retentionClockTrusted: false) { try store.outboxDepth() }
        #expect(try store.outboxDepth().position == 20, "GPS time ten years ahead purges nothing")
        _ = upkeep.run(now: tenYearsLater, retentionClockTrusted: true) { try store.outboxDepth() }
        #expect(try store.outboxDepth().position == 0, "a synchronised clock applies retention")
        #expect(try store.outboxDepth().dropped == 20)
    }
}
