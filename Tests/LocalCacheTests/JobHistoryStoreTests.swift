import Foundation
@testable import LocalCache
import TaxiProtocol
import TestHarness
import Testing

/// The jobs that ended without a ride, on a real SQLite file: newest first, bounded, and purged
/// with the rides by `[store] retention_days`.
@Suite struct JobHistoryStoreTests {
    let scratch: ScratchDirectory
    let path: String
    let t = TestClock.now()

    init() throws {
        scratch = try ScratchDirectory("jobhistory")
        path = scratch.file("unit.sqlite")
    }

    @Test func outcomesSurviveReopeningNewestFirst() throws {
        do {
            let store = try LocalCache(path: path)
            try store.write { transaction in
                try transaction.insertJobOutcome(JobOutcomeRecord(job: "R1", time: t, outcome: .rejected))
                try transaction.insertJobOutcome(JobOutcomeRecord(job: "N1", time: t + .seconds(60), outcome: .noShow))
                try transaction.insertJobOutcome(JobOutcomeRecord(job: "C1", time: t + .seconds(120), outcome: .cancelled))
            }
        }
        let outcomes = try LocalCache(path: path).jobOutcomes(last: 20)
        #expect(outcomes.map(\.job) == ["C1", "N1", "R1"])
        #expect(outcomes.map(\.outcome) == [.cancelled, .noShow, .rejected])
        #expect(outcomes.last?.time == t)
        #expect(try LocalCache(path: path).jobOutcomes(last: 1).map(\.job) == ["C1"])
    }

    @Test func theTableKeepsOnlyTheNewestOutcomes() throws {
        let store = try LocalCache(path: path)
        let limit = LocalCache.Transaction.jobHistoryLimit
        try store.write { transaction in
            for index in 0..<(limit + 5) {
                try transaction.insertJobOutcome(JobOutcomeRecord(job: "J\(index)", time: t, outcome: .timedOut))
            }
        }
        let outcomes = try store.jobOutcomes(last: limit * 2)
        #expect(outcomes.count == limit)
        #expect(outcomes.first?.job == "J\(limit + 4)" && outcomes.last?.job == "J5")
    }

    @Test func retentionPurgesTheOlderOutcomes() throws {
        let store = try LocalCache(path: path)
        try store.write { transaction in
            try transaction.insertJobOutcome(JobOutcomeRecord(job: "OLD", time: t - .seconds(86_400 * 8), outcome: .rejected))
            try transaction.insertJobOutcome(JobOutcomeRecord(job: "NEW", time: t, outcome: .cancelled))
        }
        try store.dropPositions(createdBefore: t - .seconds(86_400 * 7))
        #expect(try store.jobOutcomes(last: 20).map(\.job) == ["NEW"])
    }

    @Test func aRowThisReleaseCannotReadIsLeftOut() throws {
        let store = try LocalCache(path: path)
        try store.write { transaction in
            try transaction.db.execute(sql: "INSERT INTO job_history (job, t, outcome) VALUES ('X', 1, 'vanished')")
            try transaction.insertJobOutcome(JobOutcomeRecord(job: "R1", time: t, outcome: .rejected))
        }
        #expect(try store.jobOutcomes(last: 20).map(\.job) == ["R1"])
    }
}
