import Foundation
@testable import LocalCache
import TaxiProtocol
import TestHarness
import Testing
import UnitCore

/// A whole store as a release wrote it, every table populated through the store's own API. The file
/// of a release is never regenerated: units in the field hold such files, and every later release
/// must open them. To freeze the store the current code writes, as a new release's file:
/// `TAXIUNITD_WRITE_GOLDENS=<release> swift test --filter StoreGoldenTests`.
enum StoreGolden {
    static let unit = "T-0042"
    static let t0: UnitTime = 1_800_000_000_000

    static func path(_ release: String) -> String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/release-\(release)/store.sqlite").path
    }

    /// The history: every other fix lacks the optional values.
    static let fixes: [Fix] = (0..<12).map { index in
        let time = t0 + .seconds(index)
        let latitude = 46.948 + Double(index) * 1.25e-4, longitude = 7.4395 - Double(index) * 2.5e-5
        return index.isMultiple(of: 2)
            ? Fix(time: time, latitude: latitude, longitude: longitude, speed: 8.5 + Double(index) / 4, track: 10 * Double(index), accuracy: 4.5)
            : Fix(time: time, latitude: latitude, longitude: longitude)
    }
    /// Queued for `pos`: the newest goes live, the 3 oldest into a backfill message, 4 stay queued.
    static let queued = Array(fixes[4..<12])
    /// The first with a fare, a payment and the job's pickup address; the second with none of them.
    static let rides = [
        RideSummary(
            job: "J-1001", passengers: 2, pickupTime: t0 + .milliseconds(3000), dropTime: t0 + .milliseconds(9000), pickupFix: fixes[3], dropFix: fixes[9],
            fare: Fare(amount: 2350, currency: "CHF", source: .quoted), payment: "card", pickupAddress: "Bahnhofplatz 1"),
        RideSummary(job: "J-1002", passengers: 1, pickupTime: t0 + .milliseconds(10_000), dropTime: t0 + .milliseconds(11_000), pickupFix: nil, dropFix: nil),
    ]
    static let jobOutcomes = [
        JobOutcomeRecord(job: "J-0999", time: t0 + .milliseconds(500), outcome: .rejected),
        JobOutcomeRecord(job: "J-1000", time: t0 + .milliseconds(2500), outcome: .noShow),
    ]
    static let fleetConfig: [ConfigScope: ConfigScopeRecord] = [
        .fleet: ConfigScopeRecord(seenVersion: 4, applied: AppliedConfigDocument(version: 3, payload: Array(#"{"version":3,"job":{"offer_timeout_s":45}}"#.utf8))),
        .unit: ConfigScopeRecord(
            seenVersion: 7, applied: AppliedConfigDocument(version: 7, payload: Array(#"{"version":7,"mqtt":{"keepalive_s":30}}"#.utf8)),
            probation: .init(lastGood: AppliedConfigDocument(version: 6, payload: Array(#"{"version":6}"#.utf8)))),
    ]
    /// Expiry per command id; `expired` is forgotten when a later command is remembered.
    static let commands: [String: UnitTime] = ["cmd-0193-a": t0 + .milliseconds(86_400_000), "cmd-0193-b": t0 + .milliseconds(3_600_000)]
    static let snapshot = UnitSnapshot(
        state: .onBoard(
            Job(id: "J-1003", pickup: Place(lat: 46.948, lon: 7.4395, address: "Bahnhofplatz 1"), passengers: 2, note: "two cases"),
            since: RideStart(time: t0 + .milliseconds(11_000), fix: fixes[11])),
        panic: Panic(raisedAt: t0 + .milliseconds(11_500), messageID: "0193f7a2-c4e8-7b3d-9a1c-2e4f6a8b0c1d"),
        answeredOffers: [
            AnsweredOffer(job: "J-1002", reply: JobReply(job: "J-1002", reply: .accept, t: t0 + .milliseconds(1000))),
            AnsweredOffer(job: "J-0999", reply: nil),
            AnsweredOffer(job: "J-1003", reply: JobReply(job: "J-1003", reply: .accept, t: t0 + .milliseconds(2000)), lastSentAt: t0 + .milliseconds(2500)),
        ])

    /// `{"seq":…,"n":…}`: payloads whose sequence number shows they went through the topic's counter.
    static func payload(_ n: Int) -> (Int64, String) throws -> [UInt8] {
        { seq, _ in Array(#"{"seq":\#(seq),"n":\#(n)}"#.utf8) }
    }

    /// The crash-loop breaker's start count (UnitRuntime), in its stored shape.
    struct EarlyStarts: Codable, Equatable {
        var boot: String
        var starts: Int
    }

    /// Writes the store the way the daemon does, one table after the other.
    static func write(to path: String) throws {
        let store = try LocalCache(path: path)
        // Set aside first: setting aside empties the table it comes from.
        try store.write { try $0.saveValue(["state": ["enRoute": [String: Int]()]], forKey: "unit_snapshot") }
        try store.setAsideValue(forKey: "unit_snapshot", kind: .snapshot, reason: "keyNotFound _0", at: t0 - .milliseconds(9000))
        try store.write { try $0.saveFleetConfig(ConfigScopeRecord(seenVersion: 1, applied: AppliedConfigDocument(version: 1, payload: [0xFF])), for: .fleet, at: t0 - .milliseconds(8000)) }
        try store.setAsideFleetConfig(reason: "not UTF-8", at: t0 - .milliseconds(8000))
        try store.write { try $0.rememberCommand("cmd-0192-z", expiresAt: t0 + .milliseconds(1000), now: t0 - .milliseconds(7000)) }
        try store.setAsideExecutedCommands(reason: "unreadable", at: t0 - .milliseconds(7000))
        try store.write { transaction in
            let row = try transaction.enqueue(topic: "event", messageClass: .event, createdAt: t0 - .milliseconds(6000), encode: payload(0))
            try transaction.setAsideOutboxRow(row, reason: "unreadable: qos 7")
        }

        try store.write { transaction in
            for (index, fix) in fixes.enumerated() { try transaction.insertPosition(fix, createdAt: t0 + .milliseconds(index * 1000 + 200)) }
            for ride in rides { try transaction.insertRide(ride) }
            for outcome in jobOutcomes { try transaction.insertJobOutcome(outcome) }
        }
        try store.write { transaction in
            for (index, fix) in queued.enumerated() { try transaction.queuePosition(fix, createdAt: t0 + .milliseconds((index + 4) * 1000 + 200)) }
        }
        let delivered = try store.write { transaction in
            let live = try transaction.packLive(unit: unit, createdAt: t0 + .milliseconds(12_000))
            _ = try transaction.packBackfill(unit: unit, limit: 3, createdAt: t0 + .milliseconds(12_000))
            let alarm = try transaction.enqueue(topic: "sos", messageClass: .alarm, createdAt: t0 + .milliseconds(11_500), encode: payload(1))
            try transaction.enqueue(topic: "sos", messageClass: .alarm, createdAt: t0 + .milliseconds(11_600), encode: payload(2))
            try transaction.enqueue(topic: "reply", messageClass: .reply, createdAt: t0 + .milliseconds(2000), encode: payload(3))
            let event = try transaction.enqueue(topic: "event", messageClass: .event, createdAt: t0 + .milliseconds(3000), encode: payload(4))
            try transaction.enqueue(topic: "event", messageClass: .event, createdAt: t0 + .milliseconds(9000), encode: payload(5))
            return [live?.rowID, alarm, event].compactMap { $0 }
        }
        try store.write { try $0.markDelivered(delivered, at: t0 + .milliseconds(12_500)) }
        try store.countDroppedPositions(3)
        try store.write { try LocalCache.add(5, to: .thinned, $0.db) }
        try store.write { transaction in
            for (scope, record) in fleetConfig.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
                try transaction.saveFleetConfig(record, for: scope, at: t0 + .milliseconds(500))
            }
            for (id, expiry) in commands.sorted(by: { $0.key < $1.key }) { try transaction.rememberCommand(id, expiresAt: expiry, now: t0) }
            try transaction.saveValue(snapshot, forKey: "unit_snapshot")
            try transaction.saveValue(EarlyStarts(boot: "6f1c3d52-8d2e-4a57-b4a0-2a7e8c1e9b10", starts: 0), forKey: "early_starts")
        }
        // One self-contained file, as a unit holds it after a clean stop.
        try store.database.writeWithoutTransaction { _ = try $0.checkpoint(.truncate) }
    }
}

@Suite struct StoreGoldenTests {
    let scratch: ScratchDirectory

    init() throws {
        scratch = try ScratchDirectory("storegolden")
    }

    @Test(.enabled(if: ProcessInfo.processInfo.environment["TAXIUNITD_WRITE_GOLDENS"] != nil))
    func writeGolden() throws {
        let release = try #require(ProcessInfo.processInfo.environment["TAXIUNITD_WRITE_GOLDENS"])
        let written = scratch.file("store.sqlite")
        try StoreGolden.write(to: written)
        let target = StoreGolden.path(release)
        try #require(!FileManager.default.fileExists(atPath: target), "a release's store is never regenerated")
        try FileManager.default.createDirectory(atPath: (target as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: written, toPath: target)
    }

    /// A copy of the release's file, opened (and migrated) by this release.
    func open(_ release: String) throws -> LocalCache {
        let path = scratch.file("golden.sqlite")
        try FileManager.default.copyItem(atPath: StoreGolden.path(release), toPath: path)
        let store = try LocalCache(path: path)
        #expect(store.fileSetAside == nil)
        return store
    }

    @Test func theStoreOfRelease038dd7aOpensAndEveryRowReadsBack() throws {
        let store = try open("038dd7a")
        let t0 = StoreGolden.t0

        #expect(try store.storedFixes() == StoreGolden.fixes)
        #expect(try store.lastPosition() == StoreGolden.fixes.last)
        #expect(try store.rides().map(\.job) == ["J-1001", "J-1002"])
        let measured = try #require(try store.rides().first)
        #expect(measured.pickupPosition == Coordinate(StoreGolden.fixes[3]) && measured.dropPosition == Coordinate(StoreGolden.fixes[9]))
        #expect(measured.distanceM == Coordinate.pathLength(StoreGolden.fixes[3...9].map(Coordinate.init)))
        #expect(try store.rides().last == RideRecord(
            job: "J-1002", passengers: 1, pickupTime: t0 + .milliseconds(10_000), dropTime: t0 + .milliseconds(11_000), pickupPosition: nil, dropPosition: nil, distanceM: 0))
        #expect(try store.fleetConfigRecords() == StoreGolden.fleetConfig)
        #expect(try store.executedCommands(now: t0) == StoreGolden.commands)
        #expect(try store.executedCommands(now: t0 + .milliseconds(3_600_000)) == ["cmd-0193-a": t0 + .milliseconds(86_400_000)])
        #expect(try store.loadValue(UnitSnapshot.self, forKey: "unit_snapshot") == StoreGolden.snapshot)
        #expect(try store.loadValue(StoreGolden.EarlyStarts.self, forKey: "early_starts")?.boot == "6f1c3d52-8d2e-4a57-b4a0-2a7e8c1e9b10")
        #expect(try store.asideCounts() == [.snapshot: 1, .fleetConfig: 1, .executedCommands: 1, .outboxRow: 1])
        let aside = try store.database.read { try AsideRow.fetchAll($0, sql: "SELECT * FROM aside ORDER BY id") }
        #expect(aside.map { [$0.kind, $0.reason, "\(($0.at - t0).wholeMilliseconds)"] } == [
            ["snapshot", "keyNotFound _0", "-9000"], ["fleet_config", "not UTF-8", "-8000"], ["executed_commands", "unreadable", "-7000"],
            ["outbox_row", "unreadable: qos 7", "-6000"],
        ])
        #expect(aside.map { String(decoding: $0.data ?? Data(), as: UTF8.self) } == [
            #"{"state":{"enRoute":{}}}"#, #"{"scope":"fleet","version":1,"document":"\#u{FFFD}"}"#, #"["cmd-0192-z"]"#, #"{"seq":1,"n":0}"#,
        ])

        // The outbox: what was acknowledged is not pending, what was not goes out in lane order.
        #expect(try store.outboxDepth() == OutboxDepth(alarm: 1, reply: 1, event: 1, position: 3 + 4, thinned: 5, dropped: 3))
        let pending = try store.write { transaction in
            try OutboxLane.allCases.flatMap { try transaction.pendingMessages(in: $0, after: 0, limit: 10) }
        }
        #expect(pending.map(\.lane) == [.alarm, .reply, .event, .backfill])
        #expect(pending.map(\.topic) == ["sos", "reply", "event", "pos"])
        #expect(pending.allSatisfy { $0.qos == 1 })
        #expect(pending.prefix(3).map { String(decoding: $0.payload, as: UTF8.self) } == [
            #"{"seq":2,"n":2}"#, #"{"seq":1,"n":3}"#, #"{"seq":3,"n":5}"#,
        ])
        let backfill = try #require(pending.last)
        let batch = try #require(try JSONSerialization.jsonObject(with: Data(backfill.payload)) as? [String: Any])
        #expect(batch["unit"] as? String == StoreGolden.unit && batch["id"] as? String == backfill.messageID && batch["seq"] as? Int == 2)
        #expect(try store.pendingLivePositions().isEmpty, "the live message was acknowledged")

        // The queue keeps the 4 fixes not packed yet, and the topic counters go on where they were.
        let next = try store.write { transaction in
            (try transaction.packLive(unit: StoreGolden.unit, createdAt: t0 + .milliseconds(13_000)),
             try transaction.packBackfill(unit: StoreGolden.unit, limit: 10, createdAt: t0 + .milliseconds(13_000)))
        }
        let live = try #require(next.0)
        // The newest queued fix, and the topic counter went on (seq 3, in the id's last digit).
        #expect(live.payload == (try LivePositionMessage(point: PositionPoint(StoreGolden.queued[6]), seq: 3).json()))
        #expect(next.1.map(\.lane) == [.backfill] && next.1.first?.payload.isEmpty == false)
        #expect(try store.write { try $0.reserveSequence(for: "event", count: 1) } == 4)
    }

    /// The store of the release that added the ride's pickup address (v11): the rides keep it with
    /// their fare and payment, and the jobs that ended without a ride read back.
    @Test func theStoreOfRelease7999bffKeepsTheRidesPickupAddressFareAndPayment() throws {
        let store = try open("7999bff")
        let rides = try store.rides()
        #expect(rides.map(\.job) == ["J-1001", "J-1002"])
        #expect(rides.map(\.pickupAddress) == ["Bahnhofplatz 1", nil])
        #expect(rides.map(\.fare) == [Fare(amount: 2350, currency: "CHF", source: .quoted), nil])
        #expect(rides.map(\.payment) == ["card", nil])
        #expect(try store.rides(endedSince: StoreGolden.t0 + .milliseconds(10_000)).map(\.job) == ["J-1002"])
        #expect(try store.jobOutcomes(last: 10) == StoreGolden.jobOutcomes.reversed())
        #expect(try store.storedFixes() == StoreGolden.fixes)
        #expect(try store.loadValue(UnitSnapshot.self, forKey: "unit_snapshot") == StoreGolden.snapshot)
    }

    /// Every migration this release knows ran on the old file, and left it with the schema a new
    /// store gets: a released migration whose SQL changed would leave the two apart.
    @Test(arguments: ["038dd7a", "7999bff"])
    func theStoreOfAReleaseMigratesToTheSchemaOfANewStore(release: String) throws {
        let old = try open(release)
        let new = try LocalCache(path: scratch.file("new.sqlite"))
        func schema(_ store: LocalCache) throws -> [String] {
            try store.database.read { db in
                try String.fetchAll(db, sql: "SELECT type || ' ' || name || ': ' || COALESCE(sql, '') FROM sqlite_master ORDER BY type, name")
            }
        }
        #expect(try schema(old) == schema(new))
        let applied = try old.database.read { try LocalCache.migrator.appliedIdentifiers($0) }
        #expect(applied == Set(LocalCache.migrator.migrations))
        // Released migrations keep their names and their order; new ones go after them.
        #expect(LocalCache.migrations.prefix(6).map(\.identifier) == [
            "v1", "v2-rides", "fleet-config", "v2-lanes-position-queue-counters", "v3-outbox-acknowledged", "v4-aside",
        ])
    }
}
