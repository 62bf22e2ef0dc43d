import FleetConsole
import Foundation
import TaxiProtocol
import Testing
import UnitCore

/// What the live page is sent: units, zones and the rollout of the last push. Times come from the
/// clock at each test's start.
@Suite struct LiveFleetTests {
    let topics = FleetTopics(fleet: "north")
    let now = Int64(Date().timeIntervalSince1970 * 1000)

    func live(_ t: Int64, lat: Double, lon: Double) throws -> [UInt8] {
        Array(try JSONEncoder().encode(LivePositionMessage(point: PositionPoint(t: t, lat: lat, lon: lon, spd: nil, hdg: nil, acc: nil), seq: 1)))
    }

    func ack(_ unit: String, _ version: Int, _ result: String, scope: String = "fleet") -> [UInt8] {
        Array(#"{"errors":["e1"],"id":"x","reason":"invalid","result":"\#(result)","scope":"\#(scope)","seq":1,"t":1,"unit":"\#(unit)","version":\#(version)}"#.utf8)
    }

    @Test func livePositionsMoveATaxiButBackfillAndOlderFixesDoNot() throws {
        var fleet = LiveFleet(topics: topics)
        var changed: Bool
        changed = fleet.take(topic: "taxi/north/T1/pos/last", payload: try live(now - 5000, lat: 40.75, lon: -73.99))
        #expect(changed)
        changed = fleet.take(topic: "taxi/north/T1/pos", payload: try live(now - 1000, lat: 40.76, lon: -73.98))
        #expect(changed)
        #expect(fleet.state.units["T1"]?.lastPosition?.lat == 40.76)
        changed = fleet.take(topic: "taxi/north/T1/pos", payload: try live(now - 3000, lat: 40.70, lon: -73.90))
        #expect(!changed, "an older fix arriving late")
        changed = fleet.take(topic: "taxi/north/T1/pos", payload: Array(#"{"backfill":true,"id":"x","points":[]}"#.utf8))
        #expect(!changed)
        #expect(fleet.state.units["T1"]?.lastPosition?.lat == 40.76)
    }

    @Test func theRolloutFollowsTheRetainedDocumentAndItsAcks() throws {
        var fleet = LiveFleet(topics: topics)
        var changed: Bool
        let document = #"{"settings":{"zones":[{"id":"station","polygon":[[46.29,7.88],[46.29,7.89],[46.30,7.89]]},{"id":"bad","polygon":[[1,2]]}]},"signature":"s","version":3}"#
        changed = fleet.take(topic: "taxi/north/config", payload: Array(document.utf8))
        #expect(changed)
        #expect(fleet.zones.map(\.id) == ["station"], "a polygon of fewer than three points is no zone")
        fleet.take(topic: "taxi/north/T1/status", payload: Array(#"{"config_versions":{"fleet":3},"online":true,"t":\#(now),"unit":"T1"}"#.utf8))
        fleet.take(topic: "taxi/north/T2/status", payload: Array(#"{"config_versions":{"fleet":2},"online":true,"t":\#(now),"unit":"T2"}"#.utf8))
        changed = fleet.take(topic: "taxi/north/T1/config/ack", payload: ack("T1", 3, "applied"))
        #expect(changed)
        changed = fleet.take(topic: "taxi/north/T2/config/ack", payload: ack("T2", 3, "rejected"))
        #expect(changed)
        changed = fleet.take(topic: "taxi/north/T2/config/ack", payload: ack("T2", 2, "applied"))
        #expect(!changed, "an ack of an older version")
        changed = fleet.take(topic: "taxi/north/T2/config/ack", payload: ack("T2", 3, "applied", scope: "unit"))
        #expect(!changed)
        let rollout = try #require(fleet.snapshot(now: now)["rollout"]).text
        #expect(rollout == #"{"holding":1,"refusals":[{"errors":["e1"],"id":"x","reason":"invalid","result":"rejected","scope":"fleet","seq":1,"t":1,"unit":"T2","version":3}],"results":{"applied":1,"rejected":1},"units":2,"version":3}"#)
        // A newer push seen by its acks starts the rollout afresh.
        fleet.take(topic: "taxi/north/T1/config/ack", payload: ack("T1", 4, "applied"))
        let newer = fleet.snapshot(now: now)["rollout"]?.text
        #expect(newer == #"{"holding":1,"refusals":[],"results":{"applied":1},"units":2,"version":4}"#, "T1 acked version 4")
        let snapshot = fleet.snapshot(now: now).text
        #expect(snapshot.contains(#""zones":[{"id":"station","polygon":[[46.29,7.88],[46.29,7.89],[46.3,7.89]]}]"#), "\(snapshot)")
        #expect(snapshot.contains(#""fleet":"north""#))
    }

    @Test func onlyChangesCountAsRevisions() {
        var fleet = LiveFleet(topics: topics)
        var changed: Bool
        fleet.take(topic: "taxi/north/T1/status", payload: Array(#"{"online":true,"unit":"T1"}"#.utf8))
        let revision = fleet.revision
        changed = fleet.take(topic: "taxi/north/T1/job/reply", payload: Array("{}".utf8))
        #expect(!changed)
        changed = fleet.take(topic: "taxi/north/config", payload: Array("not json".utf8))
        #expect(!changed)
        #expect(fleet.revision == revision)
    }
}
