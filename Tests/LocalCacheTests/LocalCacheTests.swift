import CSQLite
import Foundation
@testable import LocalCache
import TaxiProtocol
import TestHarness
import Testing
import UnitCore

/// The store on a real SQLite file.
@Suite struct LocalCacheTests {
    let scratch: ScratchDirectory
    let path: String

    init() throws {
        scratch = try ScratchDirectory("localcache")
        path = scratch.file("unit.sqlite")
    }

    func event(_ store: LocalCache, createdAt: UnitTime = 1000) throws {
        try store.write { try $0.enqueue(topic: "event", messageClass: .event, createdAt: createdAt) { _, id in Array(id.utf8) } }
    }

    /// Ids made later sort after earlier ones, so the unique index on them grows at its end; ids
    /// made in the same millisecond, or with the clock set back, still never meet.
    @Test func messageIDsSortByTheirTimeAndNeverRepeatWithinAMillisecond() {
        let now = TestClock.milliseconds()
        let times: [Int64] = [now, now + 1, now + 60_000, 281_474_976_710_655]
        let ordered = times.map { MessageID.timeOrdered(at: UnitTime(milliseconds: $0)) }
        #expect(ordered == ordered.sorted())
        let hex = String(repeating: "0", count: 12 - String(now, radix: 16).count) + String(now, radix: 16)
        #expect(ordered[0].hasPrefix("\(hex.prefix(8))-\(hex.suffix(4))-7"), "the first 48 bits are the time in milliseconds")
        #expect(ordered[3].hasPrefix("ffffffff-ffff-7"))
        let sameMillisecond = (0..<10_000).map { _ in MessageID.timeOrdered(at: UnitTime(milliseconds: times[0])) }
        #expect(Set(sameMillisecond).count == sameMillisecond.count)
    }

    /// The pump packs inside the engine's transaction: what that transaction queued counts already,
    /// and what it asked to do after the commit happens only when it commits.
    @Test func aTransactionSeesItsOwnFixAndRunsAfterCommitOnlyOnCommit() throws {
        let store = try LocalCache(path: path)
        var committed: [String] = []
        try store.write { transaction in
            #expect(!transaction.hasFreshFix)
            try transaction.queuePosition(QueuedPositions.fix(0), createdAt: 1)
            #expect(transaction.hasFreshFix && transaction.hasQueuedPositions)
            #expect(!store.hasFreshFix, "others see it once committed")
            let live = try #require(try transaction.packLive(createdAt: 1))
            #expect(transaction.newestRowID(in: .livePosition) == live.rowID)
            #expect(!transaction.hasFreshFix)
            #expect(try transaction.packBackfill(limit: 50, createdAt: 1).isEmpty)
            #expect(!transaction.hasQueuedPositions)
            transaction.afterCommit { committed.append("first") }
        }
        #expect(committed == ["first"])
        #expect(!store.hasFreshFix && !store.hasQueuedPositions && store.newestRowID(in: .livePosition) > 0)

        struct Abandon: Error {}
        #expect(throws: Abandon.self) {
            try store.write { transaction in
                try transaction.queuePosition(QueuedPositions.fix(1), createdAt: 1)
                transaction.afterCommit { committed.append("rolled back") }
                throw Abandon()
            }
        }
        #expect(committed == ["first"])
        #expect(!store.hasFreshFix)
        #expect(try store.outboxDepth().position == 1, "the rolled-back fix is not queued")
        // The writer is usable again after the rollback.
        try QueuedPositions.queue(store, 2..<3)
        #expect(store.hasFreshFix)
    }

    /// The pump packs inside the engine's commit: its failure must not cost the engine's fix.
    @Test func aFailedUndoableStepLeavesTheRestOfTheTransaction() throws {
        let store = try LocalCache(path: path)
        struct PackingFailed: Error {}
        try store.write { transaction in
            try transaction.queuePosition(QueuedPositions.fix(0), createdAt: 1)
            #expect(throws: PackingFailed.self) {
                try transaction.undoingOnFailure {
                    _ = try transaction.packLive(createdAt: 1)
                    throw PackingFailed()
                }
            }
            try transaction.queuePosition(QueuedPositions.fix(1), createdAt: 1)
            let kept = try transaction.undoingOnFailure { try transaction.packBackfill(limit: 1, createdAt: 1) }
            #expect(try kept.flatMap { try QueuedPositions.points(of: $0) }.map(\.t) == [QueuedPositions.fix(0).time.milliseconds])
        }
        #expect(try store.outboxDepth().position == 2, "the undone live message's fix is queued again, nothing lost")
        let batches = try store.write { try $0.packBackfill(limit: 50, createdAt: 1) }
        #expect(try batches.flatMap { try QueuedPositions.points(of: $0) }.map(\.t) == [QueuedPositions.fix(1).time.milliseconds])
        #expect(try store.pendingLivePositions().isEmpty, "the undone live message is gone")
    }

    /// No checkpoint inside a commit: the WAL grows past SQLite's usual 1000 pages until the
    /// upkeep tick's `checkpointIfDue`, after which the next commit starts it over, cut back to
    /// its size limit.
    @Test func theWALIsCheckpointedByTheUpkeepNotByCommits() throws {
        let store = try LocalCache(path: path)
        let wal = path + "-wal"
        func walBytes() throws -> Int { try FileManager.default.attributesOfItem(atPath: wal)[.size] as? Int ?? 0 }
        #expect(try store.checkpointIfDue() == false)
        // SQLite's own checkpoint would start the WAL over at 1000 pages (4 MB), never reaching 6.
        var index = 0
        while try walBytes() <= 6 * 1024 * 1024, index < 3000 * 40 {
            try QueuedPositions.queue(store, index..<(index + 40))
            index += 40
        }
        #expect(try walBytes() > 6 * 1024 * 1024)
        for _ in 0..<LocalCache.commitsPerCheckpoint { try event(store) }
        #expect(try store.checkpointIfDue())
        #expect(try store.checkpointIfDue() == false, "nothing committed since")
        try event(store)
        #expect(try walBytes() <= 4 * 1024 * 1024)
        #expect(try store.outboxDepth().position == index, "every queued fix is still there")
    }

    /// The WAL is counted: past half its share of the budget, the upkeep's checkpoint runs however
    /// few commits went by, and the next commit starts the WAL over within that share.
    @Test func aWALPastItsShareIsCheckpointedAndCutBack() throws {
        let store = try LocalCache(path: path)
        let share: Int64 = 256 * 1024
        try store.limitWAL(toBytes: share / 2)
        try QueuedPositions.queue(store, 0..<8000)
        #expect(store.walFileBytes() > share)
        #expect(try store.checkpointIfDue(walBytes: share), "due by size, far fewer than \(LocalCache.commitsPerCheckpoint) commits")
        #expect(try store.checkpointIfDue(walBytes: share) == false, "nothing committed since")
        try event(store)
        #expect(store.walFileBytes() <= share / 2)
        #expect(store.fileBytes() >= store.walFileBytes() + (try store.usedBytes()), "the footprint counts the database, its WAL and index")
        #expect(try store.checkpointIfDue(walBytes: share) == false)
    }

    /// A message numbered while the store refused it keeps its seq and id when stored; one the broker
    /// took from memory only moves the topic's numbers past it.
    @Test func aMessageNumberedBeforeItIsStoredKeepsItsNumber() throws {
        let store = try LocalCache(path: path)
        try event(store)
        #expect(try store.lastSequence(of: "event") == 1)
        let id = LocalCache.newMessageID(at: 2000)
        let row = try store.write { try $0.enqueue(topic: "event", lane: .event, createdAt: 2000, seq: 2, messageID: id, payload: [1]) }
        #expect(row.messageID == id && row.payload == [1])
        try store.write { try $0.advanceSequence(of: "event", to: 3) }
        try store.write { try $0.advanceSequence(of: "event", to: 2) }
        #expect(try store.lastSequence(of: "event") == 3, "never back")
        let next = try store.write { try $0.reserveSequence(for: "event", count: 1) }
        #expect(next == 4)
        #expect(try store.lastSequence(of: "never-used") == 0)
    }

    @Test func retentionDropsOnlyOldUndeliveredPositionsAndCountsThem() throws {
        let store = try LocalCache(path: path)
        try QueuedPositions.queue(store, 0..<60, createdAt: 1_000)
        try QueuedPositions.queue(store, 60..<70, createdAt: 9_000)
        #expect(try store.write { try $0.packBackfill(limit: 20, createdAt: 1_000) }.count == 1)
        try event(store, createdAt: 1_000)
        #expect(try store.dropPositions(createdBefore: 5_000) == 60)
        let depth = try store.outboxDepth()
        #expect(depth.position == 10 && depth.event == 1 && depth.dropped == 60)
    }

    @Test func theBoundThinsFirstThenDropsAndNeverTouchesOtherClasses() throws {
        let store = try LocalCache(path: path)
        for _ in 0..<10 { try event(store) }
        try QueuedPositions.queue(store, 0..<40_000)
        let full = try store.usedBytes()

        let thinning = try store.enforceBound(maxBytes: full * 2 / 3)
        #expect(thinning.thinned > 0 && thinning.dropped == 0)
        #expect(try store.usedBytes() <= full * 2 / 3)
        var depth = try store.outboxDepth()
        #expect(depth.event == 10)
        #expect(depth.position + depth.thinned == 40_000 && depth.thinned == thinning.thinned)

        // What is left still goes out oldest first.
        let batch = try #require(try store.write { try $0.packBackfill(limit: 50, createdAt: 1) }.first)
        let times = try QueuedPositions.points(of: batch).map(\.t)
        #expect(times == times.sorted() && times.count == 50)

        let dropping = try store.enforceBound(maxBytes: 64 * 1024)
        #expect(dropping.dropped > 0)
        depth = try store.outboxDepth()
        #expect(depth.event == 10, "events are never dropped")
        #expect(depth.position + depth.thinned + depth.dropped == 40_000)
    }

    @Test func aVersion1StoreKeepsItsPendingMessages() throws {
        do {
            let v1 = try Database(path: path, busyTimeoutMs: 5000)
            try v1.execute(sql: """
                BEGIN IMMEDIATE;
                CREATE TABLE grdb_migrations (identifier TEXT NOT NULL PRIMARY KEY);
                INSERT INTO grdb_migrations VALUES ('v1');
                CREATE TABLE positions (id INTEGER PRIMARY KEY AUTOINCREMENT, t INTEGER NOT NULL, lat REAL NOT NULL,
                    lon REAL NOT NULL, spd REAL, hdg REAL, acc REAL);
                CREATE TABLE outbox (id INTEGER PRIMARY KEY AUTOINCREMENT, message_id TEXT NOT NULL UNIQUE, topic TEXT NOT NULL,
                    class INTEGER NOT NULL, qos INTEGER NOT NULL, payload BLOB NOT NULL, created_at INTEGER NOT NULL, delivered_at INTEGER);
                CREATE INDEX outbox_pending ON outbox(class, id) WHERE delivered_at IS NULL;
                CREATE TABLE topic_sequence (topic TEXT PRIMARY KEY, last_seq INTEGER NOT NULL);
                CREATE TABLE unit_state (key TEXT PRIMARY KEY, value BLOB NOT NULL);
                INSERT INTO outbox (message_id, topic, class, qos, payload, created_at) VALUES ('a', 'pos', 3, 1, x'7b7d', 1);
                INSERT INTO outbox (message_id, topic, class, qos, payload, created_at) VALUES ('b', 'event', 2, 1, x'7b7d', 1);
                INSERT INTO outbox (message_id, topic, class, qos, payload, created_at, delivered_at) VALUES ('c', 'event', 2, 1, x'7b7d', 1, 5);
                COMMIT;
                """)
        }
        let store = try LocalCache(path: path)
        let depth = try store.outboxDepth()
        #expect(depth.position == 1 && depth.event == 1, "the delivered row stays delivered")
        #expect(store.newestRowID(in: .backfill) == 1 && store.newestRowID(in: .event) == 2)
        let pending = try store.write { try $0.pendingMessages(in: .backfill, after: 0, limit: 10) }
        #expect(pending.map(\.messageID) == ["a"])
        #expect(try store.write { try $0.pendingMessages(in: .event, after: 0, limit: 10) }.map(\.messageID) == ["b"])
        #expect(try store.purgeDelivered(limit: 10) == 1)
        #expect(try store.outboxOverview(limitPerClass: 10).oldest.map(\.messageID) == ["b", "a"])
    }

    @Test func aFleetRecordKeepsItsTopicsAndItsTrialsStartAndWindow() throws {
        let store = try LocalCache(path: path)
        let record = ConfigScopeRecord(
            seenVersion: 3,
            applied: AppliedConfigDocument(version: 3, payload: Array("{}".utf8), topic: "taxi/north/config"),
            probation: .init(lastGood: AppliedConfigDocument(version: 2, payload: Array("[]".utf8), topic: "cab/north/config"), startedAt: TestClock.now(), windowS: 90))
        try store.write { try $0.saveFleetConfig(record, for: .fleet, at: 1) }
        let plain = ConfigScopeRecord(seenVersion: 1, applied: AppliedConfigDocument(version: 1, payload: Array("{}".utf8), topic: "taxi/north/T1/config"))
        try store.write { try $0.saveFleetConfig(plain, for: .unit, at: 1) }
        #expect(try store.fleetConfigRecords() == [.fleet: record, .unit: plain])
    }

    @Test func aCorruptFileIsMovedAsideAndAFreshStoreStarts() throws {
        do {
            let store = try LocalCache(path: path)
            try QueuedPositions.queue(store, 0..<5000)
        }
        let handle = try #require(FileHandle(forWritingAtPath: path))
        try handle.seek(toOffset: 10 * 4096)
        try handle.write(contentsOf: Data(repeating: 0x5A, count: 8192))
        try handle.close()
        let store = try LocalCache(path: path)
        let aside = try #require(store.fileSetAside?.path)
        #expect(FileManager.default.fileExists(atPath: aside))
        #expect(try store.outboxDepth().position == 0)
    }

    @Test func garbageInsteadOfADatabaseIsMovedAside() throws {
        try Data(repeating: 0x42, count: 10_000).write(to: URL(fileURLWithPath: path))
        let store = try LocalCache(path: path)
        #expect(store.fileSetAside != nil)
    }

    /// SQLite's default page cache (2 MiB per connection) is most of a drain's peak memory.
    @Test func everyConnectionKeepsTheSmallPageCache() throws {
        do {
            let store = try LocalCache(path: path)
            try QueuedPositions.queue(store, 0..<20000)
        }
        let store = try LocalCache(path: path)
        let writer = try store.database.write { db in try Int.fetchOne(db, sql: "PRAGMA cache_size") }
        let reader = try store.database.read { db in try Int.fetchOne(db, sql: "PRAGMA cache_size") }
        #expect(writer == LocalCache.cacheSizePragma && reader == LocalCache.cacheSizePragma)
        #expect(LocalCache.cacheSizePragma == -256)
        // The start-up check read the whole file (well over the cache) through a reader; that memory
        // is given back.
        let cached = try store.database.read { db in
            var used: Int32 = 0, highwater: Int32 = 0
            sqlite3_db_status(db.sqliteConnection, SQLITE_DBSTATUS_CACHE_USED, &used, &highwater, 0)
            return used
        }
        #expect(cached < 64 * 1024)
    }
}
