import Foundation
@testable import LocalCache
import TaxiProtocol
import TestHarness
import Testing
import UnitCore

/// The driver session's tables, and privacy's reach over rides and what waits to be sent, on a
/// real SQLite file.
@Suite struct DriverStoreTests {
    let scratch: ScratchDirectory
    let path: String

    init() throws {
        scratch = try ScratchDirectory("driverstore")
        path = scratch.file("unit.sqlite")
    }

    @Test func theSessionAndPreferencesSurviveReopeningAndBadRowsReadAsAbsent() throws {
        do {
            let store = try LocalCache(path: path)
            #expect(try store.driverSession() == DriverSessionRecord())
            try store.saveDriverSession(DriverSessionRecord(driver: "42", failures: 2, lockedUntil: 5000, loggedInAt: 4000))
            try store.saveDriverPreferences(DriverPreferences(language: "zu", alert: .blink), for: "42")
            try store.saveDriverPreferences(DriverPreferences(language: "it"), for: "42")
        }
        let store = try LocalCache(path: path)
        #expect(try store.driverSession() == DriverSessionRecord(driver: "42", failures: 2, lockedUntil: 5000, loggedInAt: 4000))
        #expect(try store.driverPreferences("42") == DriverPreferences(language: "it"))
        #expect(try store.driverPreferences("7") == DriverPreferences())
        // Whatever else wrote the file: out-of-range values read as absent or bounded.
        try store.write { transaction in
            try transaction.db.execute(sql: "UPDATE driver_session SET driver = 'a b', failures = -5")
            try transaction.db.execute(sql: "INSERT INTO driver_preferences VALUES ('9', '../../etc', 'siren')")
        }
        #expect(try store.driverSession() == DriverSessionRecord(driver: nil, failures: 0, lockedUntil: 5000))
        #expect(try store.driverPreferences("9") == DriverPreferences())
    }

    func ride(dropTime: UnitTime) -> RideSummary {
        RideSummary(job: "J\(dropTime)", passengers: 1, pickupTime: dropTime - .milliseconds(100), dropTime: dropTime, pickupFix: nil, dropFix: nil)
    }

    @Test func retentionAlsoRemovesOldRides() throws {
        let store = try LocalCache(path: path)
        try store.write { transaction in
            try transaction.insertRide(ride(dropTime: 1_000))
            try transaction.insertRide(ride(dropTime: 9_000))
        }
        try store.dropPositions(createdBefore: 5_000)
        #expect(try store.rides().map(\.job) == ["J9000"])
    }

    /// What the fleet's `purge` does in its transaction: rides and undelivered positions, queued or
    /// packed, go too; other messages stay.
    @Test func purgeReachesRidesAndPositionsWaitingToBeSent() throws {
        let store = try LocalCache(path: path)
        try QueuedPositions.queue(store, 0..<30, createdAt: 1_000)
        #expect(try store.write { try $0.packBackfill(limit: 20, createdAt: 1_000) }.count == 1)
        try QueuedPositions.queue(store, 30..<35, createdAt: 9_000)
        try store.write { try $0.enqueue(topic: "event", messageClass: .event, createdAt: 1_000) { _, id in Array(id.utf8) } }
        try store.write { transaction in
            try transaction.insertRide(ride(dropTime: 2_000))
            try transaction.insertRide(ride(dropTime: 9_500))
        }
        let (rides, points) = try store.write { transaction in
            (try transaction.deleteRides(droppedBefore: 5_000), try transaction.dropQueuedPositions(createdBefore: 5_000))
        }
        #expect(rides == 1)
        #expect(points == 30)
        #expect(try store.rides().map(\.job) == ["J9500"])
        let depth = try store.outboxDepth()
        #expect(depth.position == 5 && depth.event == 1 && depth.dropped == 30)
    }
}
