import Foundation
import LocalCache
import MQTTLink
import TaxiProtocol
import TestHarness
import Testing
import UnitCore

/// Store-and-forward on the real parts: the daemon binary, its SQLite file, a real mosquitto.
/// Backlogs are written into the unit's store through `LocalCache` (the daemon's own store code,
/// from this process) because gpsd cannot produce 10,000 fixes in test time.
@Suite(.serialized) struct OutboxTests {
    /// Three days back: room for 259,200 one-second fixes before now, well inside the store's
    /// seven days of retention.
    static let baseTime = TestClock.milliseconds() - 3 * 86_400_000

    /// A taxi driving north-east at about 10 m/s, one fix a second.
    static func fix(_ index: Int) -> Fix {
        Fix(
            time: UnitTime(milliseconds: baseTime) + .seconds(index), latitude: 46.5 + Double(index) * 0.00007, longitude: 7.5 + Double(index) * 0.00009,
            speed: 10 + Double(index % 7) * 0.13, track: Double((index * 3) % 360), accuracy: 4.5)
    }

    struct Injected {
        var eventIDs: [String] = []
        var replyIDs: [String] = []
    }

    /// Writes `fixes` queued positions with `events` events and `replies` replies spread among them,
    /// as the daemon would have produced them with the broker down.
    static func inject(into path: String, fixes: Int, events: Int, replies: Int, firstFix: Int = 0) throws -> Injected {
        let store = try LocalCache(path: path)
        var injected = Injected()
        let others = events + replies
        let spacing = max(1, fixes / max(1, others))
        try store.write { transaction in
            for index in 0..<fixes {
                let fix = fix(firstFix + index)
                try transaction.queuePosition(fix, createdAt: fix.time)
                guard index % spacing == 0, injected.eventIDs.count + injected.replyIDs.count < others else { continue }
                let isReply = injected.replyIDs.count < replies && (injected.eventIDs.count >= events || index % (2 * spacing) == 0)
                let topic = isReply ? "job/reply" : "event"
                var messageID = ""
                try transaction.enqueue(topic: topic, messageClass: isReply ? .reply : .event, createdAt: fix.time) { seq, id in
                    messageID = id
                    return Array(#"{"id":"\#(id)","seq":\#(seq),"test":true}"#.utf8)
                }
                if isReply { injected.replyIDs.append(messageID) } else { injected.eventIDs.append(messageID) }
            }
        }
        #expect(injected.eventIDs.count == events && injected.replyIDs.count == replies)
        return injected
    }

    static func id(of message: MQTTMessage) -> String? { message.json?["id"] as? String }

    /// batch_max 5: a backlog takes many messages, so a drain lasts long enough to interrupt.
    static func useSmallBatches(in unit: UnitUnderTest, maxInflight: Int) throws {
        try String(contentsOfFile: unit.configPath, encoding: .utf8)
            .replacingOccurrences(of: "reconnect_max_s = 1", with: "reconnect_max_s = 1\nbatch_max = 5\nmax_inflight = \(maxInflight)")
            .write(toFile: unit.configPath, atomically: true, encoding: .utf8)
    }

    /// A fix belongs to one message forever: a resend repeats the message, never repacks it.
    static func expectEachFixInOneMessage(_ positions: [ReceivedPositions]) {
        var owner: [Int64: String] = [:]
        for message in positions {
            for point in message.points {
                #expect(owner.updateValue(message.id, forKey: point.t).map { $0 == message.id } ?? true, "fix \(point.t) in two messages")
            }
        }
    }

    @Test func aBacklogDrainsByPriorityWithTheNewestFixFirstAndEachMessageOnce() async throws {
        let scratch = try ScratchDirectory()
        let broker = try MosquittoBroker(in: scratch)
        let unit = try UnitUnderTest(mqttPort: broker.port, gpsdPort: try Loopback.freePort(), in: scratch)
        let recorder = try await MQTTRecorder(
            port: broker.port, subscribe: [unit.topicBase + "#"], clientID: "recorder-backlog", persistentSession: true)
        broker.stop()
        try await unit.start()
        try await unit.waitForStatus("broker down") { !$0.broker.connected }

        let fixes = 10_000
        let injected = try Self.inject(into: unit.storePath, fixes: fixes, events: 20, replies: 5)
        let queued = try await unit.waitForStatus("the backlog visible") { $0.outbox.position == fixes }
        #expect(queued.outbox.event == 20 && queued.outbox.reply == 5)

        try broker.start()
        let posTopic = unit.topicBase + "pos"
        let messages = try await recorder.waitFor("the whole backlog", timeoutS: 60) { messages in
            ReceivedPositions.all(messages, topic: posTopic).reduce(0) { $0 + $1.points.count } >= fixes
                && messages.filter { $0.topic.hasSuffix("/event") || $0.topic.hasSuffix("/job/reply") }.count >= 25
        }
        try await unit.waitForStatus("outbox empty") { $0.outbox.depth == 0 && $0.outbox.inFlight == 0 }
        let sent = messages.filter { $0.topic != unit.topicBase + "status" && $0.topic != unit.topicBase + "pos/last" }

        // Exactly once by id.
        let ids = sent.compactMap(Self.id)
        #expect(ids.count == sent.count)
        #expect(Set(ids).count == ids.count, "no message arrives twice")
        #expect(Set(sent.filter { $0.topic.hasSuffix("/event") }.compactMap(Self.id)) == Set(injected.eventIDs))
        #expect(Set(sent.filter { $0.topic.hasSuffix("/job/reply") }.compactMap(Self.id)) == Set(injected.replyIDs))

        // Replies, then events, then positions.
        let order = sent.map { $0.topic.hasSuffix("/job/reply") ? 0 : $0.topic.hasSuffix("/event") ? 1 : 2 }
        #expect(order == order.sorted(), "replies before events before positions")

        // The newest fix first, then the history in order, nothing missing.
        let positions = ReceivedPositions.all(sent, topic: posTopic)
        let first = try #require(positions.first)
        #expect(!first.backfill)
        #expect(first.points.map(\.t) == [Self.fix(fixes - 1).time.milliseconds], "the first position after reconnect is the newest fix")
        #expect(positions.dropFirst().allSatisfy { $0.backfill })
        let history = positions.dropFirst().flatMap(\.points)
        #expect(history.map(\.t) == (0..<(fixes - 1)).map { Self.fix($0).time.milliseconds }, "the backfill is the history in order")
        #expect(positions.dropFirst().allSatisfy { $0.points.count <= 50 })
        let sample = try #require(history.dropFirst(1234).first)
        let expected = Self.fix(1234)
        #expect(abs(sample.lat - expected.latitude) < 1e-7 && abs(sample.lon - expected.longitude) < 1e-7)
        #expect(abs(sample.spd! - expected.speed!) < 0.01 && abs(sample.hdg! - expected.track!) < 0.1 && abs(sample.acc! - expected.accuracy!) < 0.1)
        unit.stop()
    }

    @Test func sigkillDuringADrainLosesNothingAndResendsLittle() async throws {
        let scratch = try ScratchDirectory()
        let broker = try MosquittoBroker(in: scratch)
        let maxInflight = 10
        let unit = try UnitUnderTest(mqttPort: broker.port, gpsdPort: try Loopback.freePort(), in: scratch)
        // Small batches make the drain long enough to be interrupted twenty times.
        try Self.useSmallBatches(in: unit, maxInflight: maxInflight)
        var fixes = 60_000
        var injected = try Self.inject(into: unit.storePath, fixes: fixes, events: 40, replies: 10)
        let recorder = try await MQTTRecorder(port: broker.port, subscribe: [unit.topicBase + "#"], clientID: "recorder-kill", persistentSession: true)
        let observer = try LocalCache(path: unit.storePath)

        // A kill counts when something was still queued after it. A machine fast enough to finish
        // the backlog between kills gets a new one while the unit is down, so the twenty kills
        // land in drains however fast the drain runs.
        var random = SystemRandomNumberGenerator()
        var killsDuringDrain = 0
        var rounds = 0
        while killsDuringDrain < 20 {
            rounds += 1
            try #require(rounds <= 60, "\(killsDuringDrain) of \(rounds - 1) kills hit a drain in progress")
            if try observer.outboxDepth().total == 0 {
                try #require(fixes + 20_000 <= 259_200, "the backlog stays in the past")
                let more = try Self.inject(into: unit.storePath, fixes: 20_000, events: 10, replies: 5, firstFix: fixes)
                injected.eventIDs += more.eventIDs
                injected.replyIDs += more.replyIDs
                fixes += 20_000
            }
            try await unit.start()
            try await unit.waitForStatus("draining") { $0.broker.connected }
            try await Task.sleep(for: .milliseconds(Int.random(in: 0...120, using: &random)))
            unit.killHard()
            if try observer.outboxDepth().total > 0 { killsDuringDrain += 1 }
        }
        try await unit.start()
        try await unit.waitForStatus("drained", timeoutS: 60) { $0.outbox.depth == 0 && $0.outbox.inFlight == 0 }
        let posTopic = unit.topicBase + "pos"
        let messages = try await recorder.waitFor("everything", timeoutS: 30) { messages in
            Set(ReceivedPositions.all(messages, topic: posTopic).flatMap { $0.points.map(\.t) }).count >= fixes
        }
        unit.stop()

        // Nothing un-acknowledged is lost.
        // status and pos/last are retained state beside the outbox, published again on each connection.
        let received = messages.filter { $0.topic != unit.topicBase + "status" && $0.topic != unit.topicBase + "pos/last" }
        let points = Set(ReceivedPositions.all(received, topic: posTopic).flatMap { $0.points.map(\.t) })
        #expect(points == Set((0..<fixes).map { Self.fix($0).time.milliseconds }))
        let otherIDs = Set(received.filter { !$0.topic.hasSuffix("/pos") }.compactMap(Self.id))
        #expect(otherIDs == Set(injected.eventIDs + injected.replyIDs))

        Self.expectEachFixInOneMessage(ReceivedPositions.all(received, topic: posTopic))
        // Only what was in flight at a kill can come again.
        let duplicates = received.count - Set(received.compactMap(Self.id)).count
        #expect(duplicates <= rounds * maxInflight, "\(duplicates) redeliveries for \(rounds) kills")
    }

    /// The pump packs backfill messages a window ahead of what is in flight. A broker that goes
    /// away in the middle of a drain (twice) costs nothing: every fix arrives, in one message
    /// forever, and a message that comes again is the same bytes under the same id.
    @Test func aBrokerRestartDuringADrainResendsTheSameMessagesAndLosesNothing() async throws {
        let scratch = try ScratchDirectory()
        let broker = try MosquittoBroker(in: scratch)
        let maxInflight = 10
        let unit = try UnitUnderTest(mqttPort: broker.port, gpsdPort: try Loopback.freePort(), in: scratch)
        try Self.useSmallBatches(in: unit, maxInflight: maxInflight)
        let fixes = 40_000
        let injected = try Self.inject(into: unit.storePath, fixes: fixes, events: 10, replies: 0)
        let recorder = try await MQTTRecorder(
            port: broker.port, subscribe: [unit.topicBase + "#"], clientID: "recorder-restart", persistentSession: true,
            receiveMaximum: 1)
        let posTopic = unit.topicBase + "pos"
        func backfillReceived(_ messages: [MQTTMessage]) -> Int {
            ReceivedPositions.all(messages, topic: posTopic).filter(\.backfill).count
        }
        try await unit.start()
        for interruption in 1...2 {
            let before = backfillReceived(recorder.messages)
            _ = try await recorder.waitFor("the drain under way (\(interruption))", timeoutS: 60) { backfillReceived($0) >= before + 200 }
            broker.stop()
            try await unit.waitForStatus("broker gone (\(interruption))") { !$0.broker.connected }
            #expect(try unit.status().outbox.position > 0, "the drain was interrupted")
            try broker.start()
        }
        try await unit.waitForStatus("drained", timeoutS: 60) { $0.outbox.depth == 0 && $0.outbox.inFlight == 0 }
        let messages = try await recorder.waitFor("everything", timeoutS: 30) { messages in
            Set(ReceivedPositions.all(messages, topic: posTopic).flatMap { $0.points.map(\.t) }).count >= fixes
        }
        unit.stop()

        // status and pos/last are retained state beside the outbox, published again on each connection.
        let received = messages.filter { $0.topic != unit.topicBase + "status" && $0.topic != unit.topicBase + "pos/last" }
        let points = Set(ReceivedPositions.all(received, topic: posTopic).flatMap { $0.points.map(\.t) })
        #expect(points == Set((0..<fixes).map { Self.fix($0).time.milliseconds }), "nothing is lost")
        #expect(Set(received.filter { $0.topic.hasSuffix("/event") }.compactMap(Self.id)) == Set(injected.eventIDs))
        var payloads: [String: [UInt8]] = [:]
        for message in received {
            let id = try #require(Self.id(of: message))
            #expect(payloads.updateValue(message.payload, forKey: id).map { $0 == message.payload } ?? true, "a resend is the same message")
        }
        Self.expectEachFixInOneMessage(ReceivedPositions.all(received, topic: posTopic))
        let history = ReceivedPositions.firstArrivals(ReceivedPositions.all(received, topic: posTopic)).filter(\.backfill).flatMap(\.points)
        #expect(history.map(\.t) == history.map(\.t).sorted(), "the backfill stays in order across the restarts")
        // Only what was in flight when the broker went away can come again: from the unit to the
        // broker, and the one message from the broker to the recorder (its receive maximum).
        let duplicates = received.count - payloads.count
        #expect(duplicates <= 2 * (maxInflight + 1), "\(duplicates) redeliveries for 2 restarts")
    }

    @Test func aTinyStoreThinsPositionsAndKeepsRepliesAndEvents() async throws {
        let scratch = try ScratchDirectory()
        let maxMB = 1.0
        // The recorder's persistent session exists before the unit can connect: events go out
        // first, and a recorder subscribing after the broker came back could miss them.
        let broker = try MosquittoBroker(in: scratch)
        let unit = try UnitUnderTest(mqttPort: broker.port, gpsdPort: try Loopback.freePort(), in: scratch)
        let recorder = try await MQTTRecorder(port: broker.port, subscribe: [unit.topicBase + "#"], clientID: "recorder-tiny", persistentSession: true)
        broker.stop()
        try String(contentsOfFile: unit.configPath, encoding: .utf8)
            .replacingOccurrences(of: "[store]\n", with: "[store]\nmax_mb = \(maxMB)\n")
            .write(toFile: unit.configPath, atomically: true, encoding: .utf8)
        try await unit.start()
        let fixes = 40_000
        let injected = try Self.inject(into: unit.storePath, fixes: fixes, events: 20, replies: 5)

        let bounded = try await unit.waitForStatus("thinning", timeoutS: 30) { $0.outbox.positionsThinned > 0 && $0.outbox.position < fixes }
        let outbox = bounded.outbox
        #expect(outbox.reply == 5 && outbox.event == 20, "replies and events are never dropped")
        #expect(outbox.position + outbox.positionsThinned + outbox.positionsDropped == fixes, "every position is counted")
        let observer = try LocalCache(path: unit.storePath)
        #expect(try observer.usedBytes() <= Int64(maxMB * 1024 * 1024))

        try broker.start()
        try await unit.waitForStatus("drained", timeoutS: 30) { $0.outbox.depth == 0 }
        let messages = try await recorder.waitFor("replies and events") { messages in
            messages.filter { !$0.topic.hasSuffix("/pos") && !$0.topic.hasSuffix("/pos/last") && !$0.topic.hasSuffix("/status") }.count >= 25
        }
        let others = Set(messages.filter { !$0.topic.hasSuffix("/pos") && !$0.topic.hasSuffix("/pos/last") && !$0.topic.hasSuffix("/status") }.compactMap(Self.id))
        #expect(others == Set(injected.eventIDs + injected.replyIDs))
        let after = try unit.status().outbox
        #expect(after.positionsThinned == outbox.positionsThinned && after.positionsDropped == outbox.positionsDropped)
        let (human, _) = try runCommand(Corpus.binary("taxiunitctl"), ["status", "--socket", unit.controlSocket])
        let counters = "\\n  positions dropped +\(after.positionsDropped)\\n  positions thinned +\(after.positionsThinned)\\n"
        #expect(human.range(of: counters, options: .regularExpression) != nil, "\(human)")
        let retained = try await recorder.waitFor("a status with the counters") { messages in
            messages.contains { ($0.json?["outbox"] as? [String: Any])?["thinned"] as? Int == after.positionsThinned }
        }
        #expect(!retained.isEmpty)
        unit.stop()
    }

    @Test func aCorruptStoreIsMovedAsideAndTheUnitKeepsWorking() async throws {
        let scratch = try ScratchDirectory()
        let broker = try MosquittoBroker(in: scratch)
        let unit = try UnitUnderTest(mqttPort: broker.port, gpsdPort: try Loopback.freePort(), in: scratch)
        _ = try Self.inject(into: unit.storePath, fixes: 5000, events: 3, replies: 0)
        // Overwrite a page in the middle of the file, as a torn write on a dying SD card would.
        let handle = try #require(FileHandle(forWritingAtPath: unit.storePath))
        try handle.seek(toOffset: 20 * 4096)
        try handle.write(contentsOf: Data(repeating: 0xA5, count: 4096))
        try handle.close()

        let recorder = try await MQTTRecorder(port: broker.port, subscribe: [unit.topicBase + "event"])
        try await unit.start()
        let status = try await unit.waitForStatus("connected on a fresh store") { $0.broker.connected }
        #expect(status.outbox.depth == 0)
        #expect(unit.log.contains("STORE WAS CORRUPT"))
        let files = try FileManager.default.contentsOfDirectory(atPath: scratch.path)
        #expect(files.contains { $0.hasPrefix("T1.sqlite.corrupt-") && !$0.hasSuffix("-wal") && !$0.hasSuffix("-shm") })

        let press = try unit.request(.init(cmd: .press, input: "duty"))
        #expect(press.ok)
        let events = try await recorder.waitFor("a duty event") { !$0.isEmpty }
        #expect(events.first?.json?["to"] as? String == "available")
        unit.stop()
    }

    /// A tmpfs of its own for the store, so it can be filled and made read-only. Needs root.
    final class SmallDisk {
        let path: String
        init(in scratch: ScratchDirectory, kilobytes: Int) throws {
            path = scratch.file("disk")
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            let (output, code) = try runCommand("/bin/mount", ["-t", "tmpfs", "-o", "size=\(kilobytes)k", "tmpfs", path])
            guard code == 0 else { throw HarnessError("cannot mount a tmpfs: \(output)") }
        }
        func fill() throws {
            _ = try runCommand("/bin/dd", ["if=/dev/zero", "of=\(path)/filler", "bs=64k"])
        }
        func free() throws { try FileManager.default.removeItem(atPath: path + "/filler") }
        func remount(readOnly: Bool) throws {
            let (output, code) = try runCommand("/bin/mount", ["-o", "remount,\(readOnly ? "ro" : "rw")", path])
            guard code == 0 else { throw HarnessError("cannot remount: \(output)") }
        }
        deinit { _ = try? runCommand("/bin/umount", ["-l", path]) }
    }

    @Test(.enabled(if: getuid() == 0, "mounting a tmpfs needs root"))
    func aFullStoreKeepsTheUnitWorking() async throws {
        let scratch = try ScratchDirectory()
        let disk = try SmallDisk(in: scratch, kilobytes: 2048)
        let broker = try MosquittoBroker(in: scratch)
        let gps = try FakeGPS(log: Corpus.log(Corpus.steadyLog), in: scratch, cycleS: 0.02)
        let unit = try UnitUnderTest(mqttPort: broker.port, gpsdPort: gps.port, in: scratch, reportingIntervalS: 0)
        try Self.moveStore(of: unit, to: disk.path)
        let recorder = try await MQTTRecorder(port: broker.port, subscribe: [unit.topicBase + "event"])
        try await unit.start()
        let before = try await unit.waitForStatus("running") { $0.broker.connected && $0.gps.lastFixTime != nil }

        try disk.fill()
        // Fixes keep coming and cannot be stored: counted as dropped.
        try await unit.waitForStatus("positions dropped on a full store") { $0.outbox.positionsDropped > before.outbox.positionsDropped + 5 }
        for _ in 0..<2 {
            #expect(try unit.request(.init(cmd: .press, input: "duty")).ok, "the state machine keeps working")
        }
        // Stored in the room the store keeps for them, or published from memory: either way they
        // reach the broker while the disk is still full.
        // Going on duty also starts the driver's shift: its `shift` event comes between the two.
        let events = try await recorder.waitFor("the events with the disk still full", timeoutS: 20) { $0.count >= 3 }
        #expect(FileManager.default.fileExists(atPath: disk.path + "/filler"))
        #expect(Set(events.compactMap(Self.id)).count == 3)
        #expect(events.map { $0.json?["to"] as? String ?? $0.json?["type"] as? String } == ["available", "shift", "off_duty"])

        try disk.free()
        let recovered = try await unit.waitForStatus("store writable again") { $0.outbox.event == 0 && $0.store?.inMemory == 0 }
        #expect(recovered.outbox.positionsDropped > before.outbox.positionsDropped + 5, "the drop count survives into the store")
        #expect(unit.log.contains("cannot store the step; keeping its messages in memory and retrying"))
        unit.stop()
    }

    @Test(.enabled(if: getuid() == 0, "mounting a tmpfs needs root"))
    func aReadOnlyStoreDirectoryStillRunsTheUnit() async throws {
        let scratch = try ScratchDirectory()
        let disk = try SmallDisk(in: scratch, kilobytes: 1024)
        try disk.remount(readOnly: true)
        let broker = try MosquittoBroker(in: scratch)
        let unit = try UnitUnderTest(unitID: "RO\(getpid())", mqttPort: broker.port, gpsdPort: try Loopback.freePort(), in: scratch)
        try Self.moveStore(of: unit, to: disk.path)
        let recorder = try await MQTTRecorder(port: broker.port, subscribe: [unit.topicBase + "event"])
        try await unit.start()
        try await unit.waitForStatus("connected") { $0.broker.connected }
        #expect(unit.log.contains("STORE NOT WRITABLE"))
        #expect(try unit.request(.init(cmd: .press, input: "duty")).ok)
        let events = try await recorder.waitFor("a duty event from the volatile store") { !$0.isEmpty }
        #expect(events.first?.json?["to"] as? String == "available")
        unit.stop()
    }

    static func moveStore(of unit: UnitUnderTest, to directory: String) throws {
        try String(contentsOfFile: unit.configPath, encoding: .utf8)
            .replacingOccurrences(of: unit.storePath, with: directory + "/unit.sqlite")
            .write(toFile: unit.configPath, atomically: true, encoding: .utf8)
    }
}
