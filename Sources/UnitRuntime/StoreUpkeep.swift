import ControlSocket
import LocalCache
import Logging
import Platform
import TaxiProtocol
import UnitConfig
import UnitCore

/// An outgoing message before it is in the store. Kept in memory only while the store refuses
/// writes. An alarm, reply or event is numbered and encoded as soon as it is kept (`prepared`), so
/// the pump can publish it from memory; it is stored later with that same `seq` and `id`. Positions
/// are numbered when they are finally stored.
struct UnstoredMessage {
    let topic: String
    let messageClass: MessageClass
    let createdAt: UnitTime
    let encode: (_ seq: Int64, _ id: String) throws -> [UInt8]
    var prepared: Prepared?

    struct Prepared {
        let seq: Int64
        let id: String
        let payload: [UInt8]
    }

    init(topic: String, messageClass: MessageClass, createdAt: UnitTime, encode: @escaping (_ seq: Int64, _ id: String) throws -> [UInt8]) {
        self.topic = topic
        self.messageClass = messageClass
        self.createdAt = createdAt
        self.encode = encode
    }

    var lane: OutboxLane { OutboxLane(messageClass) }

    /// The row the store made of it.
    @discardableResult
    func enqueue(in transaction: LocalCache.Transaction) throws -> OutboxMessage {
        if let prepared {
            return try transaction.enqueue(
                topic: topic, lane: lane, createdAt: createdAt, seq: prepared.seq, messageID: prepared.id, payload: prepared.payload)
        }
        return try transaction.enqueue(
            topic: topic, lane: lane, createdAt: createdAt, pointCount: messageClass == .position ? 1 : 0, newestPoint: nil, encode: encode)
    }
}

/// The store's periodic chores, run from the engine loop: the room the store has (StoreBudget) and
/// the WAL checkpoint, purging delivered rows, retention and the size bound; and it keeps the
/// messages the store refused until a commit stores them (StepPerformer).
struct StoreUpkeep {
    static let interval = Duration.seconds(2)
    /// Delivered rows removed per run: small, so the pump never waits long for the writer.
    static let purgeBatch = 500
    /// Retention scans the whole queue, so it runs rarely.
    static let retentionEvery: Duration = .seconds(10 * 60)

    private let store: LocalCache
    /// `max_mb` and `retention_days`; the fleet may change them. A new retention is applied at the
    /// next tick, not at the next of the rare retention passes: it is in force once acknowledged.
    var limits: UnitConfiguration.Store {
        didSet { if limits.retentionDays != oldValue.retentionDays { lastRetentionRun = .epoch } }
    }
    private let logger: Logger
    /// Positions lost while the store was not writable, not yet added to its counter.
    private var uncountedLostPositions = 0
    private var lastRetentionRun = UnitTime.epoch
    private var lastDepth: OutboxDepth?
    /// Messages the store refused (disk full, read-only), oldest first.
    private(set) var unstored: [UnstoredMessage] = []
    /// The room the store had at the last run, and its filesystem (nil: statvfs failed).
    private(set) var budget: StoreBudget?
    private(set) var filesystem: FilesystemSpace?
    /// The WAL size limit set on the store's writer: half its share (`checkpointIfDue`).
    private var walLimit: Int64?

    init(store: LocalCache, settings: UnitConfiguration.Store, logger: Logger) {
        self.store = store
        limits = settings
        self.logger = logger
    }

    mutating func positionsLost(_ count: Int) {
        uncountedLostPositions = uncountedLostPositions.saturatingAdd(count)
    }

    /// Keeps what the store refused, after what already waits, until a commit stores it. Alarms,
    /// replies and events are numbered from the store's last `seq` of their topic (a read, which a
    /// full disk allows), after the ones already held; one that cannot be numbered stays unnumbered,
    /// and so do later ones of its topic, so that the numbers stay in order.
    mutating func keepUnstored(_ messages: [UnstoredMessage]) {
        for var message in messages {
            if message.messageClass != .position, !unstored.contains(where: { $0.topic == message.topic && $0.prepared == nil }) {
                do {
                    let last = try unstored.last { $0.topic == message.topic }?.prepared?.seq ?? store.lastSequence(of: message.topic)
                    let id = LocalCache.newMessageID(at: message.createdAt)
                    message.prepared = .init(seq: last + 1, id: id, payload: try message.encode(last + 1, id))
                } catch {
                    logger.error(
                        "cannot number a message held in memory; it waits for the store",
                        metadata: ["topic": "\(message.topic)", "error": "\(error)"])
                }
            }
            unstored.append(message)
        }
    }

    var holdsUnstoredAlarm: Bool { unstored.contains { $0.messageClass == .alarm } }

    /// A held alarm or reply makes the commit that stores it a synced one.
    var holdsPromise: Bool { unstored.contains { Durability(for: $0.messageClass) == .full } }

    /// Writes the held messages in `transaction`, oldest first; one the broker already acknowledged
    /// from memory (`delivered`, by id) only moves its topic's sequence past it. Returns the rows.
    /// `heldStored()` forgets them once the transaction is committed.
    func storeHeld(in transaction: LocalCache.Transaction, delivered: Set<String>) throws -> [OutboxMessage] {
        var rows: [OutboxMessage] = []
        for message in unstored {
            if let prepared = message.prepared, delivered.contains(prepared.id) {
                try transaction.advanceSequence(of: message.topic, to: prepared.seq)
            } else {
                rows.append(try message.enqueue(in: transaction))
            }
        }
        return rows
    }

    mutating func heldStored() {
        if !unstored.isEmpty { logger.notice("stored the messages that had waited in memory", metadata: ["count": "\(unstored.count)"]) }
        unstored.removeAll()
    }

    /// The room the store has now, and the WAL brought within its share of it. Runs before
    /// anything else writes at the upkeep tick: on a full filesystem, a WAL that starts over is the
    /// room those writes need.
    mutating func makeRoom() {
        let budget = measureBudget()
        do {
            if walLimit != budget.walBytes / 2 {
                try store.limitWAL(toBytes: budget.walBytes / 2)
                walLimit = budget.walBytes / 2
            }
            try store.checkpointIfDue(walBytes: budget.walBytes)
        } catch {
            logger.error("cannot checkpoint the store", metadata: ["error": "\(error)"])
        }
    }

    /// The last write to the store failed, and why; nil once one succeeds.
    private(set) var writeFailure: String?

    mutating func writeFailed(_ error: Error) { writeFailure = "\(error)" }
    mutating func written() { writeFailure = nil }

    /// Returns true when the thinned/dropped counters changed, so the retained status is stale.
    /// `depth` reads what waits for the broker (the outbox pump's count).
    mutating func run(now: UnitTime, retentionClockTrusted: Bool, depth: () throws -> OutboxDepth) -> Bool {
        let budget = self.budget ?? measureBudget()
        do {
            // Delivered rows go first: on a full disk their pages are the room everything else needs.
            try store.purgeDelivered(limit: Self.purgeBatch)
            written()
            if uncountedLostPositions > 0 {
                try store.countDroppedPositions(uncountedLostPositions)
                logger.warning("positions were lost while the store was not writable", metadata: ["count": "\(uncountedLostPositions)"])
                uncountedLostPositions = 0
            }
            if retentionClockTrusted, now - lastRetentionRun >= Self.retentionEvery {
                lastRetentionRun = now
                let dropped = try store.dropPositions(createdBefore: now - .checkedSeconds(limits.retentionDays * 86_400))
                if dropped > 0 { logger.notice("dropped undelivered positions past retention", metadata: ["count": "\(dropped)"]) }
            }
            let bound = try store.enforceBound(maxBytes: budget.positionBytes, walBytes: budget.walBytes)
            if bound.thinned > 0 || bound.dropped > 0 {
                logger.warning("store reached its size bound", metadata: [
                    "thinned": "\(bound.thinned)", "dropped": "\(bound.dropped)", "history_removed": "\(bound.historyRemoved)",
                ])
            }
            if bound.stillAbove {
                logger.error("store is above its size bound with only alarms, replies and events left; keeping them")
            }
        } catch {
            writeFailed(error)
            logger.error("store upkeep failed", metadata: ["error": "\(error)"])
        }
        let before = lastDepth
        let after = refreshDepth(depth)
        return before.map { $0.thinned != after.thinned || $0.dropped != after.dropped } ?? false
    }

    /// For `status` and `health`, as of the last upkeep tick.
    var diskStatus: ControlStatus.Store? {
        guard let budget else { return nil }
        return ControlStatus.Store(
            bytes: store.fileBytes(), limitBytes: budget.footprintBytes, filesystemFreeBytes: filesystem?.availableBytes,
            filesystemFull: budget.footprintBytes < maxBytes
                && (filesystem.map { $0.availableBytes <= StoreBudget.filesystemReserve(totalBytes: $0.totalBytes) } ?? false),
            writeError: writeFailure, inMemory: unstored.count)
    }

    private var maxBytes: Int64 { Int64(limits.maxMB * 1024 * 1024) }

    /// The smaller of `max_mb` and what the store's filesystem holds (StoreBudget).
    private mutating func measureBudget() -> StoreBudget {
        filesystem = try? filesystemSpace(of: store.path)
        let budget = StoreBudget(
            maxBytes: maxBytes, storeFileBytes: store.fileBytes(), walFileBytes: store.walFileBytes(),
            filesystemTotalBytes: filesystem?.totalBytes, filesystemAvailableBytes: filesystem?.availableBytes)
        self.budget = budget
        return budget
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
