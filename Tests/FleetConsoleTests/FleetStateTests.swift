import FleetConsole
import Foundation
import TaxiProtocol
import Testing
import UnitCore

/// The fleet's state as taxifleet reads it from the retained topics. Times come from the clock at
/// each test's start.
@Suite struct FleetStateTests {
    let topics = FleetTopics(fleet: "north")
    let now = Int64(Date().timeIntervalSince1970 * 1000)

    func status(_ unit: String, t: Int64, _ extra: String = "") -> [UInt8] {
        Array(#"{"config_versions":{"fleet":7,"unit":2},"conn":3,"driver":"D-1","fix_age_ms":2000,"online":true,"outbox":{"alarm":0,"dropped":4,"event":1,"position":12,"reply":2,"thinned":9},"protocol":2,"software":"0.300","state":"available","t":\#(t),"unit":"\#(unit)","uptime_s":3600,"zone":"station"\#(extra)}"#.utf8)
    }

    func livePosition(t: Int64, lat: Double, lon: Double) throws -> [UInt8] {
        let message = LivePositionMessage(point: PositionPoint(t: t, lat: lat, lon: lon, spd: nil, hdg: nil, acc: nil), seq: 1)
        return Array(try JSONEncoder().encode(message))
    }

    @Test func aStatusTelemetryAndPositionMakeOneRow() throws {
        var state = FleetState(topics: topics)
        #expect(state.take(topic: "taxi/north/T1/status", payload: status("T1", t: now - 10_000)) == "T1")
        let report = try #require(state.units["T1"])
        #expect(report.online)
        #expect(report.software == "0.300")
        #expect(report.protocolVersion == 2)
        #expect(report.configVersions == ["fleet": 7, "unit": 2])
        #expect(report.outboxDepth == 15, "alarm, reply, event and position; thinned and dropped are history")
        #expect(report.since == now - 10_000 - 3_600_000)
        #expect(report.fixAgeS(now: now) == 12)
        // A newer fix from pos/last wins over the status's age.
        state.take(topic: "taxi/north/T1/pos/last", payload: try livePosition(t: now - 1_000, lat: 46.5, lon: 7.5))
        #expect(state.units["T1"]?.fixAgeS(now: now) == 1)
        #expect(state.units["T1"]?.lastPosition?.lat == 46.5)
        // Telemetry newer than the status gives the outbox depth.
        let telemetry = #"{"counters":{},"gauges":{"last_fix_age_s":0.5,"outbox_depth":3},"t":\#(now - 5_000),"unit":"T1","uptime_s":3595}"#
        state.take(topic: "taxi/north/T1/telemetry", payload: Array(telemetry.utf8))
        #expect(state.units["T1"]?.outboxDepth == 3)
    }

    /// A unit's status is outside data: absurd times give saturated values, never a trap.
    @Test func absurdTimesInAStatusDoNotStopTheConsole() {
        var state = FleetState(topics: topics)
        let absurd = Array(#"{"online":true,"unit":"T9","t":-9223372036854775807,"uptime_s":9223372036854775807,"fix_age_ms":9223372036854775807}"#.utf8)
        #expect(state.take(topic: "taxi/north/T9/status", payload: absurd) == "T9")
        #expect(state.units["T9"]?.since == .min)
        #expect(state.units["T9"]?.lastFixTime == .min)
    }

    @Test func aLastWillIsOfflineAndOtherTopicsAndFleetsAreIgnored() {
        var state = FleetState(topics: topics)
        state.take(topic: "taxi/north/T1/status", payload: status("T1", t: now))
        state.take(topic: "taxi/north/T2/status", payload: Array(#"{"conn":4,"online":false}"#.utf8))
        #expect(state.take(topic: "taxi/south/T3/status", payload: status("T3", t: now)) == nil)
        #expect(state.take(topic: "taxi/north/T4/job/reply", payload: Array("{}".utf8)) == nil)
        #expect(state.take(topic: "taxi/north/T5/status", payload: Array("not json".utf8)) == nil)
        #expect(state.online == ["T1"])
        #expect(state.offline == ["T2"])
        #expect(state.units["T2"]?.since == nil)
        // A cleared retained status forgets it.
        state.take(topic: "taxi/north/T1/status", payload: [])
        #expect(state.online == [])
    }

    @Test func theHighestConfigVersionAmongUnits() {
        var state = FleetState(topics: topics)
        state.take(topic: "taxi/north/T1/status", payload: status("T1", t: now))
        state.take(topic: "taxi/north/T2/status", payload: Array(#"{"config_versions":{"fleet":9},"online":true,"t":\#(now),"unit":"T2"}"#.utf8))
        #expect(state.highestConfigVersion("fleet") == 9)
        #expect(state.highestConfigVersion("fleet", among: ["T1"]) == 7)
        #expect(state.highestConfigVersion("unit") == 2)
        #expect(state.highestConfigVersion("unit", among: ["T2"]) == nil)
    }

    @Test func theTableFiltersSortsAndShowsWhatIsUnknownAsADash() throws {
        var state = FleetState(topics: topics)
        state.take(topic: "taxi/north/T1/status", payload: status("T1", t: now))
        state.take(topic: "taxi/north/T2/status", payload: Array(#"{"conn":4,"online":false}"#.utf8))
        state.take(topic: "taxi/north/T3/status", payload: status("T3", t: now, #","aside":{"snapshot":1}"#).map { $0 })
        state.take(topic: "taxi/north/T3/pos/last", payload: try livePosition(t: now - 400_000, lat: 1, lon: 2))
        var query = StatusQuery()
        #expect(query.rows(of: state, now: now).map(\.unit) == ["T1", "T2", "T3"])
        query.offlineOnly = true
        #expect(query.rows(of: state, now: now).map(\.unit) == ["T2"])
        query = StatusQuery()
        query.staleFixS = 60
        #expect(query.rows(of: state, now: now).map(\.unit) == ["T2"], "T3's status says its fix is 2 s old; T2 never told one")
        query = StatusQuery()
        query.software = "0.300"
        query.sort = .online
        #expect(query.rows(of: state, now: now).map(\.unit) == ["T1", "T3"])
        let table = StatusTable.render(StatusQuery().rows(of: state, now: now), now: now)
        let lines = table.split(separator: "\n").map(String.init)
        #expect(lines.count == 4)
        #expect(lines[0].hasPrefix("UNIT  ONLINE  SINCE"))
        #expect(lines[1].split(separator: " ", omittingEmptySubsequences: true) == ["T1", "yes", "1h00m", "0.300", "2", "f7", "u2", "D-1", "available", "station", "2s", "15", "-"])
        #expect(lines[2].split(separator: " ", omittingEmptySubsequences: true) == ["T2", "no", "-", "-", "-", "-", "-", "-", "-", "-", "-", "-"])
        #expect(lines[3].split(separator: " ").suffix(2) == ["15", "1"], "the set-aside count")
        let json = StatusTable.json(StatusQuery().rows(of: state, now: now), now: now).text
        #expect(json.hasPrefix(#"[{"aside":{},"config_versions":{"fleet":7,"unit":2},"driver":"D-1","fix_age_s":2,"online":true,"outbox":15,"protocol":2,"#), "\(json)")
        #expect(json.contains(#"{"aside":{},"config_versions":{},"online":false,"unit":"T2"}"#), "\(json)")
    }

    @Test func durationsAreShortAndExact() {
        #expect(StatusTable.duration(seconds: 0) == "0s")
        #expect(StatusTable.duration(seconds: 59.9) == "59s")
        #expect(StatusTable.duration(seconds: 425) == "7m05s")
        #expect(StatusTable.duration(seconds: 11_520) == "3h12m")
        #expect(StatusTable.duration(seconds: 187_200) == "2d04h")
        #expect(StatusTable.duration(seconds: -5) == "0s")
    }
}
