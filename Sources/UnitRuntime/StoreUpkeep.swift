import LocalCache
import Logging
import UnitConfig
import UnitCore

/// An outgoing message before it is in the store. Kept in memory only while the store refuses
/// writes; the sequence number and id are assigned when it is finally stored.
struct UnstoredMessage {
    let topic: String
    let messageClass: MessageClass
    let createdAt: Int64
    let encode: (_ seq: Int64, _ id: String) throws -> [UInt8]

    /// Returns the message id the store gave it.
    @discardableResult
    func enqueue(in transaction: LocalCache.Transaction) throws -> String {
        var messageID = ""
        try transaction.enqueue(topic: topic, messageClass: messageClass, createdAt: createdAt) { seq, id in
            messageID = id
            return try encode(seq, id)
        }
        return messageID
    }

    /// Alarms and replies are fsync'd before anyone is told they were sent.
    func store(in store: LocalCache) throws {
        try store.write(Durability(for: messageClass)) { try enqueue(in: $0) }
    }
}

/// The store's periodic chores, run from the engine loop: retrying the messages the store refused
/// (kept here meanwhile), purging delivered rows, retention, the size bound and the WAL checkpoint.
struct StoreUpkeep {
    static let interval = Duration.seconds(2)
    /// Delivered rows removed per run: small, so the pump never waits long for the writer.
    static let purgeBatch = 500
    /// Retention scans the whole queue, so it runs rarely.
    static let retentionEveryMs: Int64 = 10 * 60 * 1000

    private let store: LocalCache
    /// `max_mb` and `retention_days`; the fleet may change them.
    var limits: UnitConfiguration.Store
    private let logger: Logger
    /// Positions lost while the store was not writable, not yet added to its counter.
    private var uncountedLostPositions = 0
    private var lastRetentionRun: Int64 = 0
    private var lastDepth: OutboxDepth?
    /// Messages the store refused (disk full, read-only), oldest first.
    private(set) var unstored: [UnstoredMessage] = []

    init(store: LocalCache, settings: UnitConfiguration.Store, logger: Logger) {
        self.store = store
        limits = settings
        self.logger = logger
    }

    mutating func positionsLost(_ count: Int) {
        uncountedLostPositions = uncountedLostPositions.saturatingAdd(count)
    }

    /// Keeps what the store refused, after what already waits, until a run stores it.
    mutating func keepUnstored(_ messages: [UnstoredMessage]) {
        unstored += messages
    }

    var holdsUnstoredAlarm: Bool { unstored.contains { $0.messageClass == .alarm } }

    /// Returns true when the thinned/dropped counters changed, so the retained status is stale.
    /// `depth` reads what waits for the broker (the outbox pump's count).
    mutating func run(now: Int64, retentionClockTrusted: Bool, depth: () throws -> OutboxDepth) -> Bool {
        while let message = unstored.first {
            do {
                try message.store(in: store)
                unstored.removeFirst()
                logger.notice("stored a message that had waited in memory", metadata: ["topic": "\(message.topic)"])
            } catch {
                break
            }
        }
        do {
            if uncountedLostPositions > 0 {
                try store.countDroppedPositions(uncountedLostPositions)
                logger.warning("positions were lost while the store was not writable", metadata: ["count": "\(uncountedLostPositions)"])
                uncountedLostPositions = 0
            }
            try store.purgeDelivered(limit: Self.purgeBatch)
            if retentionClockTrusted, now.saturatingSubtract(lastRetentionRun) >= Self.retentionEveryMs {
                lastRetentionRun = now
                let retentionMs = Int64(millisecondsOf: limits.retentionDays * 86_400) ?? .max
                let dropped = try store.dropPositions(createdBefore: now.saturatingSubtract(retentionMs))
                if dropped > 0 { logger.notice("dropped undelivered positions past retention", metadata: ["count": "\(dropped)"]) }
            }
            let bound = try store.enforceBound(maxBytes: Int64(limits.maxMB * 1024 * 1024))
            if bound.thinned > 0 || bound.dropped > 0 {
                logger.warning("store reached its size bound", metadata: [
                    "thinned": "\(bound.thinned)", "dropped": "\(bound.dropped)", "history_removed": "\(bound.historyRemoved)",
                ])
            }
            if bound.stillAbove {
                logger.error("store is above its size bound with only alarms, replies and events left; keeping them")
            }
            try store.checkpointIfDue()
        } catch {
            logger.error("store upkeep failed", metadata: ["error": "\(error)"])
        }
        let before = lastDepth
        let after = refreshDepth(depth)
        return before.map { $0.thinned != after.thinned || $0.dropped != after.dropped } ?? false
    }

    /// What waits, counting messages still in memory; the last known figures if the store cannot be read.
    mutating func refreshDepth(_ read: () throws -> OutboxDepth) -> OutboxDepth {
        var depth = (try? read()) ?? lastDepth ?? OutboxDepth()
        lastDepth = depth
        for message in unstored {
            switch message.messageClass {
            case .alarm: depth.alarm += 1
            case .reply: depth.reply += 1
            case .event: depth.event += 1
            case .position: depth.position += 1
            }
        }
        depth.dropped += uncountedLostPositions
        return depth
    }
}
