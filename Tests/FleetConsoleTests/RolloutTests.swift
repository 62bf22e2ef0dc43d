import FleetConsole
import Testing

@Suite struct RolloutTests {
    let topics = FleetTopics(fleet: "north")

    func ack(_ unit: String, _ result: String, version: Int = 3, scope: String = "fleet", reason: String? = nil, errors: [String] = []) -> (String, [UInt8]) {
        var json = #"{"id":"x","result":"\#(result)","scope":"\#(scope)","seq":1,"t":1,"unit":"\#(unit)","version":\#(version)"#
        if let reason { json += #","reason":"\#(reason)""# }
        if !errors.isEmpty { json += #","errors":[\#(errors.map { "\"\($0)\"" }.joined(separator: ","))]"# }
        return ("taxi/north/\(unit)/config/ack", Array((json + "}").utf8))
    }

    @Test func allOnlineUnitsApplyingSucceedsWhateverTheOfflineOnesDo() {
        var rollout = Rollout(topics: topics, awaited: .config(scope: "fleet", version: 3), online: ["T2", "T1"], offline: ["T9"])
        #expect(rollout.waiting == ["T1", "T2"])
        #expect(rollout.outcome == .timedOut)
        let (topic, payload) = ack("T1", "applied")
        #expect(rollout.take(topic: topic, payload: payload)?.succeeded == true)
        #expect(!rollout.isComplete)
        let (topic2, payload2) = ack("T2", "applied")
        rollout.take(topic: topic2, payload: payload2)
        #expect(rollout.isComplete)
        #expect(rollout.outcome == .allSucceeded)
        #expect(rollout.stillOffline == ["T9"])
        #expect(rollout.progressLine(barWidth: 10) == "[##########] 2/2 answered: applied 2, rejected 0, rolled back 0, no answer yet 0, offline 1")
        #expect(rollout.summaryLines == ["T1 applied", "T2 applied", "offline: T9", "2/2 answered: applied 2, rejected 0, rolled back 0, no answer yet 0, offline 1"])
    }

    @Test func otherVersionsScopesUnitsAndTopicsAreNotAnswers() {
        var rollout = Rollout(topics: topics, awaited: .config(scope: "fleet", version: 3), online: ["T1"], offline: [])
        for (topic, payload) in [ack("T1", "applied", version: 2), ack("T1", "applied", scope: "unit"), ack("T7", "applied")] {
            #expect(rollout.take(topic: topic, payload: payload) == nil)
        }
        #expect(rollout.take(topic: "taxi/north/T1/status", payload: ack("T1", "applied").1) == nil)
        #expect(rollout.take(topic: "taxi/north/T1/config/ack", payload: Array("{".utf8)) == nil)
        #expect(rollout.answers.isEmpty)
    }

    @Test func aRejectionOrARollbackIsARefusalWithItsErrors() {
        var rollout = Rollout(topics: topics, awaited: .config(scope: "fleet", version: 3), online: ["T1", "T2"], offline: ["T3"])
        let (t1, p1) = ack("T1", "rejected", reason: "invalid", errors: ["reporting.interval_s must be between 0.0 and 86400.0, found -1.0"])
        let answer = rollout.take(topic: t1, payload: p1)
        #expect(answer.map(Rollout.line) == "T1 rejected (invalid): reporting.interval_s must be between 0.0 and 86400.0, found -1.0")
        #expect(rollout.outcome == .someRefused, "a refusal counts even before everyone answered")
        // An offline unit that comes back and answers counts.
        let (t3, p3) = ack("T3", "applied")
        rollout.take(topic: t3, payload: p3)
        #expect(rollout.stillOffline == [])
        // applied then rolled_back: the later answer stands.
        let (t2, p2) = ack("T2", "applied")
        rollout.take(topic: t2, payload: p2)
        let (t2b, p2b) = ack("T2", "rolled_back", reason: "unreachable")
        rollout.take(topic: t2b, payload: p2b)
        #expect(rollout.answers["T2"]?.result == "rolled_back")
        #expect(rollout.json.text.hasPrefix(#"{"answers":[{"errors":["#))
        #expect(rollout.json.text.hasSuffix(#""offline":[],"outcome":"refused","scope":"fleet","version":3,"waiting":[]}"#), "\(rollout.json.text)")
    }

    @Test func commandRepliesMatchEachUnitsCommandID() {
        var rollout = Rollout(topics: topics, awaited: .command(ids: ["T1": "c-1", "T2": "c-2"]), online: ["T1", "T2"], offline: [])
        #expect(rollout.take(topic: "taxi/north/T1/cmd/reply", payload: Array(#"{"cmd_id":"c-2","result":"ok"}"#.utf8)) == nil)
        #expect(rollout.take(topic: "taxi/north/T1/cmd/reply", payload: Array(#"{"cmd":"purge","cmd_id":"c-1","deleted":4,"result":"ok"}"#.utf8))?.succeeded == true)
        #expect(rollout.take(topic: "taxi/north/T2/cmd/reply", payload: Array(#"{"cmd_id":"c-2","errors":["expired at 1"],"result":"expired"}"#.utf8))?.succeeded == false)
        #expect(rollout.outcome == .someRefused)
        #expect(rollout.progressLine(barWidth: 0) == "2/2 answered: ok 1, failed 0, rejected 0, expired 1, unknown 0, no answer yet 0")
    }
}
