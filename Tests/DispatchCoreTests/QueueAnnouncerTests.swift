import DispatchCore
import TaxiProtocol
import Testing
import UnitCore

@Suite struct QueueAnnouncerTests {
    func positions(_ due: [(unit: String, position: QueuePosition)]) -> [String: String] {
        Dictionary(uniqueKeysWithValues: due.map { ($0.unit, "\($0.position.zone) \($0.position.position)/\($0.position.of)") })
    }

    @Test func everyoneIsToldFirstThenOnlyThoseWhosePlaceChanged() {
        var announcer = QueueAnnouncer(refreshMs: 300_000, minIntervalMs: 0)
        let first = announcer.announcements(for: ["A": ["T1", "T2", "T3"], "B": ["T9"]], now: 1000)
        #expect(positions(first) == ["T1": "A 1/3", "T2": "A 2/3", "T3": "A 3/3", "T9": "B 1/1"])
        #expect(first.allSatisfy { $0.position.t == 1000 })
        #expect(announcer.announcements(for: ["A": ["T1", "T2", "T3"], "B": ["T9"]], now: 2000).isEmpty)
        // T1 took a job: everyone behind moves up; B is untouched.
        #expect(positions(announcer.announcements(for: ["A": ["T2", "T3"], "B": ["T9"]], now: 3000)) == ["T2": "A 1/2", "T3": "A 2/2"])
        // A newcomer at the back changes the length for everyone ahead of it.
        #expect(positions(announcer.announcements(for: ["A": ["T2", "T3", "T4"], "B": ["T9"]], now: 4000))
            == ["T2": "A 1/3", "T3": "A 2/3", "T4": "A 3/3"])
    }

    @Test func everyoneIsToldAgainEveryRefreshSoNoUnitShowsAStalePlace() {
        var announcer = QueueAnnouncer(refreshMs: 300_000, minIntervalMs: 0)
        #expect(announcer.refreshDue(now: 0))
        _ = announcer.announcements(for: ["A": ["T1"]], now: 0)
        #expect(!announcer.refreshDue(now: 299_999))
        #expect(announcer.announcements(for: ["A": ["T1"]], now: 299_999).isEmpty)
        #expect(announcer.refreshDue(now: 300_000))
        #expect(positions(announcer.announcements(for: ["A": ["T1"]], now: 300_000)) == ["T1": "A 1/1"])
        #expect(MessageLimits.queueFreshMs > 300_000)
    }

    /// A busy zone moves everyone's place all the time: each taxi hears of it at most once per
    /// interval, then the newest place; one whose place went back to what it was told hears nothing.
    @Test func aTaxiIsToldAtMostOncePerIntervalThenItsNewestPlace() {
        var announcer = QueueAnnouncer(refreshMs: 300_000, minIntervalMs: 5_000)
        #expect(positions(announcer.announcements(for: ["A": ["T1", "T2", "T3"]], now: 0)).count == 3)
        #expect(announcer.announcements(for: ["A": ["T2", "T3"]], now: 1_000).isEmpty)
        #expect(announcer.announcements(for: ["A": ["T3"]], now: 2_000).isEmpty)
        #expect(announcer.announcements(for: ["A": ["T3"]], now: 4_999).isEmpty)
        #expect(positions(announcer.announcements(for: ["A": ["T3"]], now: 5_000)) == ["T3": "A 1/1"])
        var later = announcer
        #expect(later.announcements(for: ["A": ["T3"]], now: 20_000).isEmpty)
        // T4 joins and leaves again within T3's interval: T3's place is back to what it was told.
        #expect(positions(announcer.announcements(for: ["A": ["T3", "T4"]], now: 6_000)) == ["T4": "A 2/2"])
        #expect(announcer.announcements(for: ["A": ["T3"]], now: 7_000).isEmpty)
        #expect(announcer.announcements(for: ["A": ["T3"]], now: 20_000).isEmpty)
    }

    /// dispatchsim announces a few places per tick: what a call leaves out goes on the next ones,
    /// a refresh included, even when a queue moved in between.
    @Test func whatALimitLeavesOutComesNextAndARefreshReachesEveryone() {
        var announcer = QueueAnnouncer(refreshMs: 300_000, minIntervalMs: 5_000)
        let queues = ["A": ["T1", "T2", "T3", "T4"]]
        #expect(positions(announcer.announcements(for: queues, now: 0, limit: 3)) == ["T1": "A 1/4", "T2": "A 2/4", "T3": "A 3/4"])
        #expect(positions(announcer.announcements(for: queues, now: 20, limit: 3)) == ["T4": "A 4/4"])
        #expect(announcer.announcements(for: queues, now: 40, limit: 3).isEmpty)

        #expect(positions(announcer.announcements(for: queues, now: 300_000, limit: 2)) == ["T1": "A 1/4", "T2": "A 2/4"])
        // T9 comes to zone B: the queues differ, and T3 and T4 are still owed the refresh.
        let moved = ["A": ["T1", "T2", "T3", "T4"], "B": ["T9"]]
        #expect(positions(announcer.announcements(for: moved, now: 300_020, limit: 2)) == ["T3": "A 3/4", "T4": "A 4/4"])
        #expect(positions(announcer.announcements(for: moved, now: 300_040, limit: 2)) == ["T9": "B 1/1"])
        #expect(announcer.announcements(for: moved, now: 300_060, limit: 2).isEmpty)
    }

    @Test func aQueueLongerThanTheProtocolCanSayIsCutNotTrappedOn() {
        var announcer = QueueAnnouncer()
        let units = (0..<10_001).map { "U\($0)" }
        let due = announcer.announcements(for: ["A": units], now: 0)
        #expect(due.count == 9999)
        #expect(due.allSatisfy { $0.position.of == 9999 && (1...9999).contains($0.position.position) })
    }

    /// The dispatcher's own queue, announced: taxis ahead take jobs, the ones behind move up.
    @Test func placesFollowTheDispatchersQueueAsTaxisAheadTakeJobs() {
        var harness = Harness()
        var announcer = QueueAnnouncer(minIntervalMs: 0)
        harness.queue("T1", "T2", "T3")
        #expect(positions(announcer.announcements(for: harness.dispatcher.queues, now: harness.now)) == ["T1": "A 1/3", "T2": "A 2/3", "T3": "A 3/3"])
        harness.request("R1", at: inA)
        harness.reply("T1", "R1", .accept)
        #expect(positions(announcer.announcements(for: harness.dispatcher.queues, now: harness.now)) == ["T2": "A 1/2", "T3": "A 2/2"])
    }

    func logged(_ actions: [DispatchAction]) -> [String] {
        actions.compactMap { if case .log(let line) = $0 { line.description } else { nil } }
    }

    @Test func repliesAndReceiptsAreLoggedOnceEach() {
        var harness = Harness()
        let answer = harness.feed(.report(unit: "T1", .messageReply(id: "x1", MessageReply(msg: "m1", text: "OK", choice: 1, t: 1))))
        #expect(logged(answer) == ["T1 answered message m1: OK"])
        #expect(harness.feed(.report(unit: "T1", .messageReply(id: "x1", MessageReply(msg: "m1", text: "OK", choice: 1, t: 1)))) == [])
        _ = harness.feed(.report(unit: "T1", .messageRead(id: "x2", MessageRead(msg: "m1", t: 1))))
        let invalid = harness.feed(.report(unit: "T1", .messageReply(id: "x3", MessageReply(msg: "m2", invalid: "text must not be empty", t: 1))))
        #expect(logged(invalid) == ["WARNING T1 refused message m2: text must not be empty"])
        #expect(harness.dispatcher.stats.messagesRead == 1 && harness.dispatcher.stats.messageReplies == 1)
    }
}
