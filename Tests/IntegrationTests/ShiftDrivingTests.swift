import ControlSocket
import Foundation
import TestHarness
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The shift's driving time from GPS speed, on the real parts: a real gpsd fed by gpsfake with a
/// track that stands, drives and stands again, the real daemon counting, `taxiunitctl status`
/// and the `shift` event showing what it counted.
@Suite(.serialized) struct ShiftDrivingTests {
    /// One fix of the track: seconds after its start, and speed in knots as the receiver says it.
    struct TrackFix {
        var second: Int64
        var knots: Double
    }

    /// Standing at the rank (0 kn) while the replay gets going, 20 fixes driving east at 20 kn
    /// (10.3 m/s, over `ShiftTracker.drivingSpeed`), then 12 fixes standing at a light (0 kn).
    /// One fix a GPS second; the replay is faster than that, and the unit counts driving on its
    /// own clock, between the fixes as they arrive.
    static let standing = (0..<6).map { TrackFix(second: $0, knots: 0) }
    static let driving = (6..<26).map { TrackFix(second: $0, knots: 20) }
    static let stopped = (26..<38).map { TrackFix(second: $0, knots: 0) }

    /// The track as a receiver's NMEA 0183 (RMC, GGA, GSA each fix), dated from `startS` (Unix s):
    /// east along 46.5° N from 7.5° E, as far each second as the speed takes it.
    static func nmeaLog(startS: Int64) -> String {
        var lines: [String] = []
        var longitudeDegrees = 7.5
        for fix in standing + driving + stopped {
            var time = time_t(startS + fix.second)
            var utc = tm()
            gmtime_r(&time, &utc)
            let clock = String(format: "%02d%02d%02d.00", utc.tm_hour, utc.tm_min, utc.tm_sec)
            let date = String(format: "%02d%02d%02d", utc.tm_mday, utc.tm_mon + 1, utc.tm_year % 100)
            longitudeDegrees += fix.knots * 0.514444 / (111_320 * cos(46.5 * .pi / 180))
            let minutes = (longitudeDegrees - 7) * 60
            let longitude = String(format: "007%07.4f", minutes)
            lines.append(sentence("GPRMC,\(clock),A,4630.0000,N,\(longitude),E,\(String(format: "%.1f", fix.knots)),90.0,\(date),,,A"))
            lines.append(sentence("GPGGA,\(clock),4630.0000,N,\(longitude),E,1,08,0.9,500.0,M,48.0,M,,"))
            lines.append(sentence("GPGSA,A,3,01,02,03,04,05,06,07,08,,,,,1.5,0.9,1.2"))
        }
        return lines.joined(separator: "\r\n") + "\r\n"
    }

    /// `$body*checksum`: the XOR of the body's bytes.
    static func sentence(_ body: String) -> String {
        let checksum = body.utf8.reduce(UInt8(0)) { $0 ^ $1 }
        return "$" + body + "*" + String(format: "%02X", checksum)
    }

    @Test func drivingTimeGrowsWhileMovingAndNotWhileStanding() async throws {
        let scratch = try ScratchDirectory("taxiunitd-driving")
        // GPS time a few minutes back: the replay, faster than the track, never runs ahead of the clock.
        let startS = TestClock.seconds() - 300
        let log = scratch.file("driving.nmea")
        try Self.nmeaLog(startS: startS).write(toFile: log, atomically: true, encoding: .ascii)
        // 0.2 s a sentence: a fix every 0.6 s, 12 s of driving, 7 s standing.
        let gps = try await FakeGPS.held(log: log, in: scratch, cycleS: 0.2)
        defer { gps.stop() }
        let broker = try MosquittoBroker(in: scratch)
        let unit = try UnitUnderTest(mqttPort: broker.port, gpsdPort: gps.port, in: scratch)
        let recorder = try await MQTTRecorder(port: broker.port, subscribe: [unit.topicBase + "#"])
        try await unit.start()
        defer {
            unit.stop()
            recorder.stop()
        }
        try await unit.waitForStatus("broker and gpsd connected") { $0.broker.connected && $0.gps.connected }
        #expect(try unit.request(.init(cmd: .press, input: "duty")).message?.hasPrefix("On duty") == true)
        #expect(try unit.status().shift?.drivingS == 0)
        gps.releaseFeed()

        func fixTime(_ fix: TrackFix) -> Int64 { (startS + fix.second) * 1000 }
        let early = try await unit.waitForStatus("a few fixes driving", timeoutS: 60) { ($0.gps.lastFixTime ?? 0) >= fixTime(Self.driving[4]) }
        let moved = try await unit.waitForStatus("the first fix standing at the light", timeoutS: 60) {
            ($0.gps.lastFixTime ?? 0) >= fixTime(Self.stopped[0])
        }
        let earlyDriving = try #require(early.shift?.drivingS)
        let drivingAfterMoving = try #require(moved.shift?.drivingS)
        #expect(drivingAfterMoving > earlyDriving, "driving grows while moving: \(earlyDriving) s, then \(drivingAfterMoving) s")
        #expect(drivingAfterMoving >= 5, "about 12 s of driving replayed, \(drivingAfterMoving) s counted")
        #expect(moved.shift?.continuousDrivingS == drivingAfterMoving)

        let stood = try await unit.waitForStatus("the last fix standing", timeoutS: 60) { ($0.gps.lastFixTime ?? 0) >= fixTime(Self.stopped.last!) }
        #expect(stood.shift?.drivingS == drivingAfterMoving, "standing adds no driving")
        #expect((stood.shift?.onDutyS ?? 0) > (moved.shift?.onDutyS ?? 0), "while the time on duty goes on")

        // The dispatcher hears the same count with the shift's end.
        _ = try unit.request(.init(cmd: .press, input: "duty"))
        _ = try unit.request(.init(cmd: .press, input: "shift end"))
        func shiftEvents(_ what: String) -> [[String: Any]] {
            recorder.messages(onTopic: unit.topicBase + "event").compactMap(\.json)
                .filter { $0["type"] as? String == "shift" && $0["what"] as? String == what }
        }
        try await recorder.waitFor("the shift end") { _ in !shiftEvents("end").isEmpty }
        #expect(shiftEvents("end").first?["driving_s"] as? Int == Int(drivingAfterMoving))
        let problems = try ContractCheck.problems(in: recorder.messages)
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
    }
}
