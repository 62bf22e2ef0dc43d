import TaxiProtocol

/// A job that ended without a ride: an offer rejected or not answered in time, a no-show, a cancel.
public struct JobOutcomeRecord: Sendable, Equatable {
    public enum Outcome: String, Sendable, CaseIterable {
        case rejected, timedOut = "timed_out", noShow = "no_show", cancelled
    }

    public var job: String
    /// Unit clock.
    public var time: UnitTime
    public var outcome: Outcome

    public init(job: String, time: UnitTime, outcome: Outcome) {
        self.job = job
        self.time = time
        self.outcome = outcome
    }
}

extension LocalCache.Transaction {
    /// The most outcomes kept: the oldest go first, like every table that grows with the unit's work.
    public static let jobHistoryLimit = 500

    public func insertJobOutcome(_ record: JobOutcomeRecord) throws {
        try db.execute(
            sql: "INSERT INTO job_history (job, t, outcome) VALUES (?, ?, ?)", arguments: [record.job, record.time, record.outcome.rawValue])
        try db.execute(
            sql: "DELETE FROM job_history WHERE id <= (SELECT MAX(id) FROM job_history) - ?", arguments: [Self.jobHistoryLimit])
    }

    /// Outcomes before `cutoff` (unit clock): `[store] retention_days`, like the rides.
    public func deleteJobOutcomes(before cutoff: UnitTime) throws {
        try db.execute(sql: "DELETE FROM job_history WHERE t < ?", arguments: [cutoff])
    }
}

extension LocalCache {
    /// The last `limit` outcomes, newest first; a row this release cannot read is left out.
    public func jobOutcomes(last limit: Int) throws -> [JobOutcomeRecord] {
        try database.read { db in
            try Row.fetchAll(db, sql: "SELECT job, t, outcome FROM job_history ORDER BY id DESC LIMIT ?", arguments: [max(0, limit)]).compactMap { row in
                let job: String = try row.decode(forColumn: "job")
                let time: UnitTime = try row.decode(forColumn: "t")
                let outcome: String = try row.decode(forColumn: "outcome")
                return JobOutcomeRecord.Outcome(rawValue: outcome).map { JobOutcomeRecord(job: job, time: time, outcome: $0) }
            }
        }
    }
}
