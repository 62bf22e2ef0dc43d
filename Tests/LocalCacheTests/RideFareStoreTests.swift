import Foundation
@testable import LocalCache
import TaxiProtocol
import TestHarness
import Testing
import UnitCore

/// The ride history keeps the fare exact (integer minor units, its currency and source), the
/// payment and the job's pickup address, on a real SQLite file; a row whose fare columns do not
/// make a fare does not fit.
@Suite struct RideFareStoreTests {
    let scratch: ScratchDirectory
    let path: String

    init() throws {
        scratch = try ScratchDirectory("ridefare")
        path = scratch.file("unit.sqlite")
    }

    @Test func theFarePaymentAndPickupAddressSurviveReopeningAndARideWithoutThemReadsAsNone() throws {
        do {
            let store = try LocalCache(path: path)
            try store.write { transaction in
                try transaction.insertRide(RideSummary(
                    job: "Q", passengers: 1, pickupTime: 1, dropTime: 2, pickupFix: nil, dropFix: nil,
                    fare: Fare(amount: 99_999_999, currency: "EUR", source: .quoted), payment: "card", pickupAddress: "Via Roma 12, Milano"))
                try transaction.insertRide(RideSummary(job: "N", passengers: 1, pickupTime: 3, dropTime: 4, pickupFix: nil, dropFix: nil))
            }
        }
        let rides = try LocalCache(path: path).rides()
        #expect(rides.map(\.fare) == [Fare(amount: 99_999_999, currency: "EUR", source: .quoted), nil])
        #expect(rides.map(\.payment) == ["card", nil])
        #expect(rides.map(\.pickupAddress) == ["Via Roma 12, Milano", nil])
    }

    /// The history pages' rides: those that ended since the shift started, oldest first.
    @Test func theRidesEndedSinceATimeComeOldestFirst() throws {
        let store = try LocalCache(path: path)
        try store.write { transaction in
            for (job, drop) in [("A", 10), ("B", 20), ("C", 30)] {
                try transaction.insertRide(RideSummary(job: job, passengers: 1, pickupTime: 1, dropTime: UnitTime(milliseconds: Int64(drop)), pickupFix: nil, dropFix: nil))
            }
        }
        #expect(try store.rides(endedSince: UnitTime(milliseconds: 20)).map(\.job) == ["B", "C"])
        #expect(try store.rides(endedSince: UnitTime(milliseconds: 31)).isEmpty)
    }

    @Test func fareColumnsThatDoNotMakeAFareDoNotFit() throws {
        let store = try LocalCache(path: path)
        for columns in ["2350, NULL, 'typed'", "2350, 'EUR', 'guessed'", "-1, 'EUR', 'typed'", "2350, 'eur', 'typed'"] {
            try store.write { transaction in
                try transaction.db.execute(sql: "DELETE FROM rides")
                try transaction.db.execute(sql: """
                    INSERT INTO rides (job, passengers, pickup_time, drop_time, distance_m, fare, currency, fare_source)
                    VALUES ('J', 1, 1, 2, 0, \(columns))
                    """)
            }
            #expect(throws: (any Error).self, "\(columns)") { try store.rides() }
        }
    }
}
