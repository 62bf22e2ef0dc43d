import ControlSocket
import Foundation
import MQTTLink
import TestHarness
import Testing
import UnitCore

/// A receiver that reports impossible values (speed and course 1e20, latitude 91, the year 2100),
/// replayed by gpsfake through a real gpsd while the broker is down: the unit drops and counts them,
/// restarts three times with its backlog, and once the broker is back the good fixes drain and none
/// of the poison.
@Suite(.serialized) struct PoisonReceiverTests {
    /// `$…*hh` with the NMEA checksum (XOR of the bytes between `$` and `*`).
    static func sentence(_ body: String) -> String {
        let checksum = body.utf8.reduce(0) { $0 ^ $1 }
        return "$" + body + "*" + String(format: "%02X", checksum)
    }

    /// Today's date, so the fixes are fresh to the unit's synchronised clock.
    static let day: (ddmmyy: String, dd: String, mm: String, yyyy: String) = {
        let parts = Calendar(identifier: .gregorian).dateComponents(in: TimeZone(identifier: "UTC")!, from: Date())
        let (d, m, y) = (parts.day ?? 1, parts.month ?? 1, parts.year ?? 2026)
        return (String(format: "%02d%02d%02d", d, m, y % 100), String(format: "%02d", d), String(format: "%02d", m), String(y))
    }()

    static func rmc(second: Int, lat: String = "4629.9000", speedKnots: String = "10.0", course: String = "90.0", date: String = day.ddmmyy) -> String {
        sentence("GPRMC,0000\(String(format: "%02d", second)).00,A,\(lat),N,00730.0000,E,\(speedKnots),\(course),\(date),,,A")
    }

    static let goodSeconds = [0, 1, 2, 5, 6, 7, 8, 9]
    static let poisonSeconds = [3, 4, 10, 12]

    static func log() -> String {
        var lines: [String] = []
        for second in 0...9 {
            switch second {
            case 3: lines.append(rmc(second: 3, speedKnots: "1e20"))
            case 4: lines.append(rmc(second: 4, course: "1e20"))
            default: lines.append(rmc(second: second))
            }
        }
        lines.append(rmc(second: 10, lat: "9100.0000"))
        // ZDA with the year 2100 sets gpsd's century; the next RMC is dated 2100.
        lines.append(sentence("GPZDA,000011.00,\(day.dd),\(day.mm),2100,00,00"))
        lines.append(rmc(second: 12))
        return lines.joined(separator: "\r\n") + "\r\n"
    }

    @Test func poisonIsDroppedAndCountedTheBacklogSurvivesRestartsAndDrains() async throws {
        let scratch = try ScratchDirectory()
        let broker = try MosquittoBroker(in: scratch)
        broker.stop()
        let logPath = scratch.file("poison.log")
        try Self.log().write(toFile: logPath, atomically: true, encoding: .utf8)
        let gps = try FakeGPS(log: logPath, in: scratch, cycleS: 0.2, once: true)
        defer { gps.stop() }
        let unit = try UnitUnderTest(mqttPort: broker.port, gpsdPort: gps.port, in: scratch, reportingIntervalS: 0.5)
        defer { unit.stop() }
        try await unit.start()
        // gpsd itself refuses some of the poison (a latitude of 91); what it passes on, the unit counts.
        let fed = try await unit.waitForStatus("the replay's fixes and poison seen", timeoutS: 30) {
            ($0.refused?["fixes_out_of_range"] ?? 0) >= 1 && $0.storedPositions >= 4
        }
        #expect(!fed.broker.connected)

        // Three restarts with the backlog queued and the broker still down.
        for restart in 1...3 {
            unit.stop()
            try await unit.start()
            let status = try await unit.waitForStatus("up after restart \(restart)") { _ in true }
            #expect(status.outbox.position >= fed.outbox.position, "the backlog is kept (heartbeats add to it)")
        }
        unit.stop()

        try broker.start()
        let recorder = try await MQTTRecorder(port: broker.port, subscribe: [unit.topicBase + "pos"])
        defer { recorder.stop() }
        try await unit.start()
        try await unit.waitForStatus("drained", timeoutS: 30) { $0.broker.connected && $0.outbox.depth == 0 }

        let midnight = Calendar(identifier: .gregorian).startOfDay(for: Date())
        let base = Int64(midnight.timeIntervalSince1970) * 1000
        var seconds = Set<Int>()
        for received in ReceivedPositions.all(recorder.messages, topic: unit.topicBase + "pos") {
            for point in received.points {
                seconds.insert(Int((point.t - base) / 1000))
                #expect((point.spd ?? 0) < 150 && (point.hdg ?? 0) <= 360, "\(point)")
            }
        }
        #expect(seconds.isDisjoint(with: Self.poisonSeconds), "\(seconds.sorted())")
        #expect(seconds.isSubset(of: Self.goodSeconds), "\(seconds.sorted())")
        #expect(seconds.count >= 4, "\(seconds.sorted())")
    }
}

