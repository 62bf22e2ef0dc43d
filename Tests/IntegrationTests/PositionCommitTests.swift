import ControlSocket
import Foundation
import LocalCache
import TestHarness
import Testing
import UnitCore

/// `[store] position_commit_ms`: a fast receiver's fixes are committed in groups, none is lost
/// to it, and a driver's input never waits for it (docs/protocol.md, "pos").
@Suite(.serialized) struct PositionCommitTests {
    /// nmea-rtk is a 10 Hz receiver; at this gpsfake cycle gpsd reports about 10 valid fixes a second.
    static let tenHertzCycleS = 0.05

    @Test func aTenHertzReceiverHasEveryFixStoredAndPublished() async throws {
        let scratch = try ScratchDirectory("commit-10hz")
        let broker = try MosquittoBroker(in: scratch)
        let gps = try FakeGPS(log: Corpus.log("nmea-rtk.log"), in: scratch, cycleS: Self.tenHertzCycleS)
        let unit = try UnitUnderTest(mqttPort: broker.port, gpsdPort: gps.port, in: scratch, reportingIntervalS: 0)
        let recorder = try await MQTTRecorder(port: broker.port, subscribe: [unit.topicBase + "pos"])
        try await unit.start()
        try await unit.waitForStatus("fixes stored", timeoutS: 30) { $0.storedPositions >= 40 }
        // gpsd gone: the unit commits what it holds at once.
        gps.stop()
        try await unit.waitForStatus("gpsd gone") { !$0.gps.connected }
        let stored = try LocalCache(path: unit.storePath).storedFixes()
        let storedTimes = Set(stored.map(\.time.milliseconds))
        let topic = unit.topicBase + "pos"
        let messages = try await recorder.waitFor("every stored fix published", timeoutS: 30) { messages in
            Set(ReceivedPositions.all(messages, topic: topic).flatMap { $0.points.map(\.t) }).isSuperset(of: storedTimes)
        }
        let published = ReceivedPositions.firstArrivals(ReceivedPositions.all(messages, topic: topic))
        #expect(Set(published.flatMap { $0.points.map(\.t) }) == storedTimes, "every fix published is a stored one")
        #expect(published.flatMap(\.points).count == stored.count, "each fix in exactly one message")
        #expect(published.count < stored.count / 3, "\(published.count) messages for \(stored.count) fixes: the fixes were committed in groups")
        unit.stop()
    }

    /// A unit fed at 10 Hz, every fix reported, with no broker: what is queued stays in the store.
    static func unitWithoutBroker(_ name: String, commitWindowMs: Int) async throws -> (FakeGPS, UnitUnderTest) {
        let scratch = try ScratchDirectory(name)
        let gps = try FakeGPS(log: Corpus.log("nmea-rtk.log"), in: scratch, cycleS: tenHertzCycleS)
        let unit = try UnitUnderTest(
            mqttPort: try Loopback.freePort(), gpsdPort: gps.port, in: scratch, reportingIntervalS: 0,
            storeTOML: "position_commit_ms = \(commitWindowMs)")
        try await unit.start()
        return (gps, unit)
    }

    @Test func aPressWhileFixesWaitIsCommittedAtOnceAndTakesThemAlong() async throws {
        // A window no test outlasts: after the first commit only the press commits.
        let (gps, unit) = try await Self.unitWithoutBroker("commit-press", commitWindowMs: 60_000)
        defer { gps.stop() }
        let held = try await unit.waitForStatus("fixes coming") { $0.gps.lastFixTime != nil }
        try await Task.sleep(for: .milliseconds(500))
        let beforePress = try unit.status()
        #expect(beforePress.gps.lastFixTime != held.gps.lastFixTime)
        #expect(beforePress.storedPositions == held.storedPositions, "fixes wait for the window")
        let pressed = try unit.request(ControlRequest(cmd: .press, input: "duty"))
        #expect(pressed.ok)
        unit.killHard()

        let store = try LocalCache(path: unit.storePath)
        // The transition and the shift's start, in the press's own commit.
        #expect(try store.outboxOverview(limitPerClass: 10).depth[.event] == 2, "the events were stored before the driver was answered")
        let storedTimes = try store.storedFixes().map(\.time.milliseconds)
        #expect(storedTimes.contains(try #require(held.gps.lastFixTime)))
        #expect(storedTimes.contains(try #require(beforePress.gps.lastFixTime)), "the fixes held at the press were committed with it")
        #expect(storedTimes == storedTimes.sorted(), "in the order they came")
    }

    @Test func aKillLosesAtMostTheFixesOfOneWindow() async throws {
        let (gps, unit) = try await Self.unitWithoutBroker("commit-kill", commitWindowMs: 500)
        defer { gps.stop() }
        let seen = try await unit.waitForStatus("fixes coming") { $0.storedPositions > 5 && $0.gps.lastFixAgeS ?? 9 < 0.5 }
        // Well past the window: its commit has happened, whatever the load.
        try await Task.sleep(for: .seconds(2))
        unit.killHard()
        let storedTimes = try LocalCache(path: unit.storePath).storedFixes().map(\.time.milliseconds)
        #expect(storedTimes.contains(try #require(seen.gps.lastFixTime)), "a fix older than the window survives a kill")
    }
}
