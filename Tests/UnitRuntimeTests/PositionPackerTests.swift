import Foundation
import LocalCache
import TaxiProtocol
import TestHarness
import Testing
import UnitCore
@testable import UnitRuntime

/// How the outbox pump packs queued fixes into `pos` messages, on a real SQLite file.
@Suite struct PositionPackerTests {
    let scratch: ScratchDirectory
    let path: String
    let packer = PositionPacker(unit: "T1", batchMax: 50)

    init() throws {
        scratch = try ScratchDirectory("packer")
        path = scratch.file("unit.sqlite")
    }

    @Test func queuedFixesArePackedOnceNewestLiveThenHistoryInBatches() throws {
        let store = try LocalCache(path: path)
        try QueuedPositions.queue(store, 0..<123)
        #expect(store.hasFreshFix)
        let live = try #require(try store.write { try packer.live(in: $0, at: 1) })
        #expect(live.lane == .livePosition)
        #expect(try QueuedPositions.points(of: live).map(\.t) == [QueuedPositions.fix(122).time.milliseconds])
        #expect(!store.hasFreshFix)
        var batches = try store.write { try packer.backfill(in: $0, messages: 2, at: 1) }
        batches += try store.write { try packer.backfill(in: $0, messages: 2, at: 1) }
        #expect(try store.write { try packer.backfill(in: $0, messages: 1, at: 1) }.isEmpty)
        #expect(try batches.map { try QueuedPositions.points(of: $0).count } == [50, 50, 22])
        #expect(try batches.flatMap { try QueuedPositions.points(of: $0) }.map(\.t) == (0..<122).map { QueuedPositions.fix($0).time.milliseconds })
        #expect(!store.hasQueuedPositions)
        #expect(try store.outboxDepth().position == 123)

        // Delivered rows leave the count, then the file, in small batches.
        try store.write { try $0.markDelivered(([live] + batches).map(\.rowID), at: 2) }
        #expect(try store.outboxDepth().position == 0)
        #expect(try store.purgeDelivered(limit: 3) == 3)
        #expect(try store.purgeDelivered(limit: 3) == 1)
    }

    /// The outbox's ids are version 7 UUIDs in lowercase, never repeated, carrying the creation time;
    /// sequence numbers count up per topic with no gap, also across the several backfill messages packed in one go.
    @Test func messageIDsAreFreshUUIDsAndSequencesHaveNoGaps() throws {
        let store = try LocalCache(path: path)
        try QueuedPositions.queue(store, 0..<230)
        let live = try #require(try store.write { try packer.live(in: $0, at: 1) })
        let batches = try store.write { try packer.backfill(in: $0, messages: 3, at: 1) }
        let more = try store.write { try packer.backfill(in: $0, messages: 3, at: 1) }
        var eventIDs: [String] = []
        for _ in 0..<500 {
            try store.write { try $0.enqueue(topic: "event", messageClass: .event, createdAt: 1) { _, id in eventIDs.append(id); return [] } }
        }
        let positions = [live] + batches + more
        let seqs = try positions.map { message in
            try #require(try JSONSerialization.jsonObject(with: Data(message.payload)) as? [String: Any])["seq"] as? Int
        }
        // The live message took seq 1: not on the wire, it is the last digit of its short id.
        #expect(seqs == [nil] + Array(2...6).map(Optional.some))
        let liveID = try #require(try JSONSerialization.jsonObject(with: Data(live.payload)) as? [String: Any])["id"] as? String
        #expect(liveID == LivePositionID.make(time: QueuedPositions.fix(229).time.milliseconds, seq: 1))
        let ids = positions.map(\.messageID) + eventIDs
        #expect(Set(ids).count == ids.count)
        let shape = /[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}/
        #expect(ids.allSatisfy { $0.wholeMatch(of: shape) != nil })
        #expect(ids.allSatisfy { UUID(uuidString: $0) != nil })
        // createdAt 1 ms: the 48-bit time prefix.
        #expect(ids.allSatisfy { $0.hasPrefix("00000000-0001-7") })
    }
}
