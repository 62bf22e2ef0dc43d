import TaxiProtocol
import Testing
import UnitCore

@Suite struct ReportingPolicyTests {
    let policy = ReportingPolicy()
    let start = Fix(time: 1_780_000_000_000, latitude: 46.5, longitude: 7.5, speed: 10, track: 90)

    /// `start` moved `metres` north after `seconds`, with the given course and speed.
    func later(_ seconds: Double, north metres: Double = 0, track: Double? = 90, speed: Double? = 10) -> Fix {
        Fix(time: start.time + .checkedSeconds(seconds), latitude: start.latitude + metres / 111_195, longitude: start.longitude, speed: speed, track: track)
    }

    @Test func theFirstFixIsAlwaysReported() {
        for state in ReportingPolicy.stateNames {
            #expect(policy.shouldReport(start, lastReported: nil, state: state))
        }
    }

    @Test(arguments: [("off_duty", 300.0), ("available", 30), ("en_route", 5), ("at_pickup", 5), ("on_board", 5)])
    func anIntervalAloneTriggersAReport(state: String, intervalS: Double) {
        let standing = { (seconds: Double) in later(seconds, track: nil, speed: 0) }
        #expect(!policy.shouldReport(standing(intervalS - 1), lastReported: start, state: state))
        #expect(policy.shouldReport(standing(intervalS), lastReported: start, state: state))
    }

    @Test(arguments: [("off_duty", 500.0), ("available", 100), ("en_route", 30), ("at_pickup", 30), ("on_board", 30)])
    func aDistanceAloneTriggersAReport(state: String, distanceM: Double) {
        #expect(!policy.shouldReport(later(1, north: distanceM - 2), lastReported: start, state: state))
        #expect(policy.shouldReport(later(1, north: distanceM + 2), lastReported: start, state: state))
    }

    @Test(arguments: [("available", 30.0), ("en_route", 20), ("at_pickup", 20), ("on_board", 20)])
    func aHeadingChangeWhileMovingTriggersAReport(state: String, headingDeg: Double) {
        #expect(!policy.shouldReport(later(1, track: 90 + headingDeg - 1), lastReported: start, state: state))
        #expect(policy.shouldReport(later(1, track: 90 + headingDeg), lastReported: start, state: state))
        #expect(policy.shouldReport(later(1, track: 90 - headingDeg), lastReported: start, state: state))
    }

    @Test func headingChangesAcrossNorthAreMeasuredTheShortWay() {
        let northbound = Fix(time: start.time, latitude: 46.5, longitude: 7.5, speed: 10, track: 355)
        #expect(!policy.shouldReport(later(1, track: 10), lastReported: northbound, state: "en_route"))
        #expect(policy.shouldReport(later(1, track: 16), lastReported: northbound, state: "en_route"))
    }

    @Test func headingChangesAtWalkingSpeedAreNoise() {
        #expect(!policy.shouldReport(later(1, track: 180, speed: 1.5), lastReported: start, state: "en_route"))
        #expect(!policy.shouldReport(later(1, track: 180, speed: nil), lastReported: start, state: "en_route"))
        #expect(!policy.shouldReport(later(1, track: nil), lastReported: start, state: "en_route"))
    }

    @Test func offDutyIgnoresHeading() {
        #expect(!policy.shouldReport(later(1, track: 270), lastReported: start, state: "off_duty"))
    }

    @Test func panicReportsEveryFix() {
        #expect(policy.shouldReport(later(0.1, track: 90, speed: 0), lastReported: start, state: "panic"))
    }

    @Test func aFixOlderThanTheLastReportIsReported() {
        #expect(policy.shouldReport(later(-60), lastReported: start, state: "off_duty"))
    }

    @Test func theHeartbeatFollowsTheIntervalButNeverRunsWild() {
        #expect(policy.heartbeatInterval(for: "off_duty") == .seconds(300))
        #expect(policy.heartbeatInterval(for: "available") == .seconds(30))
        #expect(policy.heartbeatInterval(for: "panic") == .seconds(1))
        var everyFix = ReportingPolicy()
        everyFix.rules["en_route"]?.intervalS = 0
        #expect(everyFix.heartbeatInterval(for: "en_route") == .checkedSeconds(ReportingPolicy.shortestHeartbeatS))
    }

    @Test func everyJobStateHasARule() {
        #expect(Set(ReportingPolicy.stateNames) == ["off_duty", "available", "paused", "offered", "en_route", "at_pickup", "on_board", "panic", "ignition_off"])
    }
}
