import TaxiProtocol

/// The driver's request to drop the job, waiting for the dispatcher's `job/cancel` (confirmed) or a
/// `job/update` with `cancel_refused` (refused). Kept in the snapshot: the job stands meanwhile,
/// and a restart keeps both the job and the question.
public struct CancelRequest: Sendable, Equatable {
    public var job: String
    public var reason: CancelReason
    /// Unit clock when the driver asked, ms.
    public var at: UnitTime

    public init(job: String, reason: CancelReason, at: UnitTime) {
        self.job = job
        self.reason = reason
        self.at = at
    }
}

/// A `job/update` the unit applied, remembered so that a redelivered copy (QoS 1 after a
/// reconnect) is answered as the first one was and changes nothing.
public struct AppliedUpdate: Sendable, Equatable {
    /// `JobUpdate.redeliveryKey` of the update applied.
    public var key: String
    public var reply: JobReply
    /// Unit clock when the answer was last published again for a redelivered copy (as for offers:
    /// at most once per `UnitStateMachine.repeatAnswerAfterMs`).
    public var lastSentAt: UnitTime?

    public init(key: String, reply: JobReply, lastSentAt: UnitTime? = nil) {
        self.key = key
        self.reply = reply
        self.lastSentAt = lastSentAt
    }
}

extension JobUpdate {
    /// What makes two deliveries the same update: the job and the dispatcher's `update` id, or,
    /// without one, the job and everything the update says (an update repeated word for word
    /// changes nothing a second time, and adding the same pickup twice is never meant).
    public var redeliveryKey: String {
        if let id = update { return "\(job)\u{1F}id\u{1F}\(id)" }
        // The decoder refuses control characters in texts: U+0000 marks an absent field unambiguously.
        let absent = "\u{0}"
        let pickup = addPickup.map { "\($0.lat),\($0.lon),\($0.passengers.map(String.init) ?? absent),\($0.address ?? absent)" } ?? absent
        // A meeting time only when given: keys of updates without one stay as they were stored.
        let fields = [passengers.map(String.init) ?? absent, pickup, note ?? absent, cancelRefused.map { "\($0)" } ?? absent]
            + (meetingTime.map { ["meeting_time \($0)"] } ?? [])
        return "\(job)\u{1F}content\u{1F}" + fields.joined(separator: "\u{1F}")
    }
}
