import ControlSocket
import Foundation
import LocalCache
import MQTTLink
import TestHarness
import Testing
import UnitCore

/// A full disk on the real parts: the store on a 3 MB tmpfs that positions fill while the broker is
/// down, then filled to the last block by a file that stays. Mounting needs root: `make test-root`.
@Suite(.serialized) struct FullDiskTests {
    /// Free bytes on the filesystem holding `path`.
    static func freeBytes(_ path: String) throws -> Int64 {
        try (FileManager.default.attributesOfFileSystem(forPath: path)[.systemFreeSize] as? NSNumber)?.int64Value ?? -1
    }

    /// Queues `count` fixes into the unit's store from this process in one commit, numbered from `first`.
    static func queuePositions(into path: String, from first: Int, count: Int) throws {
        let store = try LocalCache(path: path)
        try store.write { transaction in
            for index in first..<(first + count) {
                let fix = OutboxTests.fix(index)
                try transaction.queuePosition(fix, createdAt: fix.time)
            }
        }
    }

    /// What a `press` told the driver: one text, and never both "stored" and "not stored".
    static func press(_ unit: UnitUnderTest, _ input: String) throws -> String {
        let answer = try unit.request(ControlRequest(cmd: .press, input: input))
        #expect(answer.ok, "\(input): \(answer.error ?? "")")
        let told = answer.message ?? ""
        #expect(!(told.contains("NOT STORED") && told.contains("sent")), "\(input): \(told)")
        return told
    }

    @Test(.enabled(if: ProcessInfo.processInfo.environment["TAXIUNITD_ROOT_TESTS"] == "1" && getuid() == 0, "mounts a tmpfs"))
    func aFullDiskLosesNothingTheDriverWasToldIsSent() async throws {
        let scratch = try ScratchDirectory()
        let disk = try OutboxTests.SmallDisk(in: scratch, kilobytes: 3072)
        let broker = try MosquittoBroker(in: scratch)
        let gps = try FakeGPS(log: Corpus.log(Corpus.steadyLog), in: scratch, cycleS: 0.05)
        let unit = try UnitUnderTest(mqttPort: broker.port, gpsdPort: gps.port, in: scratch, reportingIntervalS: 0)
        try OutboxTests.moveStore(of: unit, to: disk.path)
        let storePath = disk.path + "/unit.sqlite"
        let recorder = try await MQTTRecorder(
            port: broker.port, subscribe: [unit.topicBase + "#"], clientID: "recorder-full-disk", persistentSession: true)
        defer {
            unit.stop()
            recorder.stop()
        }
        try await unit.start()
        try await unit.waitForStatus("running") { $0.broker.connected && $0.gps.lastFixTime != nil }

        // Broker down, max_mb at its default of 64: positions pile up until the disk's room is
        // reached. They are queued from here (gpsd cannot make fixes fast enough), a chunk per
        // upkeep tick while the disk has room for one, as the daemon's own fixes would pile up.
        broker.stop()
        var queued = 0
        let deadline = ContinuousClock.now + .seconds(60)
        while try unit.status().outbox.positionsThinned == 0 {
            guard ContinuousClock.now < deadline else {
                throw HarnessError("no position gave way after \(queued) queued: \(String(describing: try unit.status().store))")
            }
            if try Self.freeBytes(disk.path) > 512 * 1024 {
                try Self.queuePositions(into: storePath, from: queued, count: 2000)
                queued += 2000
            }
            try await Task.sleep(for: .milliseconds(2500))
        }
        let bounded = try unit.status()
        let room = try #require(bounded.store)
        #expect(room.limitBytes < 3 * 1024 * 1024, "the filesystem, not max_mb, sets the limit")
        #expect(room.bytes <= room.limitBytes + 64 * 1024, "the WAL is counted: \(room)")

        // Whatever room is left goes to a file that stays.
        try disk.fill()
        #expect(try Self.freeBytes(disk.path) < 64 * 1024)
        try broker.start()
        try await unit.waitForStatus("connected on a full disk") { $0.broker.connected }

        var told: [String] = []
        told.append(try Self.press(unit, "duty"))
        for job in ["J1", "J2", "J3"] {
            // The recorder reconnects to the restarted broker in its own time.
            try await waitUntil("the offer \(job) published", timeoutS: 20) {
                (try? recorder.publish(
                    unit.topicBase + "job/offer", #"{"job":"\#(job)","pickup":{"lat":46.5,"lon":7.5,"address":"Bahnhofplatz 1"},"passengers":1}"#)) != nil
            }
            try await unit.waitForStatus("offer \(job)") { $0.state == "offered" && $0.job?.id == job }
            // The last answer is made with the broker gone.
            if job == "J3" {
                broker.stop()
                try await unit.waitForStatus("broker down") { !$0.broker.connected }
            }
            told.append(try Self.press(unit, "reject"))
        }
        for input in ["pause", "resume", "duty", "duty"] { told.append(try Self.press(unit, input)) }
        // Full again, to the last block, as the broker comes back.
        try disk.fill()
        let transitions = [
            "off_duty>available", "available>offered", "offered>available", "available>offered", "offered>available",
            "available>offered", "offered>available", "available>paused", "paused>available", "available>off_duty", "off_duty>available",
        ]

        func firstArrivals(_ suffix: String) -> [[String: Any]] {
            var seen = Set<String>()
            return recorder.messages(onTopic: unit.topicBase + suffix).compactMap(\.json).filter { json in
                guard let id = json["id"] as? String else { return false }
                return seen.insert(id).inserted
            }
        }
        func transitionsReceived() -> [String] {
            firstArrivals("event").compactMap { json in (json["from"] as? String).flatMap { from in (json["to"] as? String).map { "\(from)>\($0)" } } }
        }
        try broker.start()
        try await recorder.waitFor("every answer and event made while full, within 10 s of the broker's return", timeoutS: 10) { _ in
            firstArrivals("job/reply").count >= 3 && transitionsReceived().count >= transitions.count
        }
        // The filler stays; what the store gave back of its WAL since, it may have taken again.
        let free = try Self.freeBytes(disk.path)
        #expect(free < StoreBudget.filesystemReserve(totalBytes: 3 * 1024 * 1024), "the disk is still full: \(free) bytes free")
        #expect(Set(firstArrivals("job/reply").compactMap { $0["job"] as? String }) == ["J1", "J2", "J3"])
        #expect(transitionsReceived() == transitions, "events in the order they were made")
        for topic in ["job/reply", "event"] {
            let seqs = firstArrivals(topic).compactMap { $0["seq"] as? Int }
            #expect(Set(seqs).count == seqs.count, "\(topic): one seq per message, \(seqs)")
        }

        // Everything stored survives a kill; everything the driver was told is sent is at the broker.
        let before = try await unit.waitForStatus("the outbox drained, the store written on the full disk") { status in
            status.outbox.reply == 0 && status.outbox.event == 0 && status.store.map { $0.inMemory == 0 && $0.writeError == nil } == true
        }
        unit.killHard()
        try await unit.start()
        let after = try await unit.waitForStatus("running again on the full disk") { $0.broker.connected && $0.outbox.reply == 0 && $0.outbox.event == 0 }
        #expect(after.outbox.positionsThinned >= before.outbox.positionsThinned)
        #expect(!unit.log.contains("STORE NOT WRITABLE"), "the store reopens on the full disk")
        let sentJobs = zip(["duty", "J1", "J2", "J3"], told).filter { !$0.1.contains("NOT STORED") }.map(\.0).filter { $0.hasPrefix("J") }
        let replied = Set(firstArrivals("job/reply").compactMap { $0["job"] as? String })
        #expect(Set(sentJobs).isSubset(of: replied), "told sent: \(sentJobs), received: \(replied)")
        #expect(transitionsReceived() == transitions, "nothing sent twice under a new id, nothing lost")
    }
}
