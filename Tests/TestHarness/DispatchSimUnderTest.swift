import Foundation

/// A real dispatchsim process on the test broker. Passenger requests and withdrawals go in over MQTT
/// (`book`/`withdraw` through any `MQTTRecorder`), so tests decide when they happen.
public final class DispatchSimUnderTest: @unchecked Sendable {
    public let process: ChildProcess
    public let fleet: String
    public let statsPath: String

    /// `zones`: id → polygon as (lat, lon) pairs. `scenarioTOML` may add [dispatch] settings.
    public init(
        mqttPort: Int, fleet: String = "test", zones: [(id: String, polygon: [(Double, Double)])], in directory: ScratchDirectory,
        scenarioTOML: String = "", arguments: [String] = []
    ) async throws {
        self.fleet = fleet
        let zonesPath = directory.file("zones.toml")
        try Self.zonesTOML(zones).write(toFile: zonesPath, atomically: true, encoding: .utf8)
        let scenarioPath = directory.file("scenario.toml")
        try scenarioTOML.write(toFile: scenarioPath, atomically: true, encoding: .utf8)
        statsPath = directory.file("dispatchsim-stats.json")
        process = try ChildProcess(
            Corpus.binary("dispatchsim"),
            ["--zones", zonesPath, "--scenario", scenarioPath, "--port", String(mqttPort), "--fleet", fleet, "--stats-json", statsPath]
                + arguments,
            logPath: directory.file("dispatchsim.log"))
        try await waitForLog("dispatchsim connected", "connected to the broker")
        // SUBACK is not reported; give the broker a moment to register the subscriptions.
        try await Task.sleep(for: .milliseconds(200))
    }

    /// `[[zones]]` as the units and dispatchsim read them.
    public static func zonesTOML(_ zones: [(id: String, polygon: [(Double, Double)])]) -> String {
        zones.map { zone in
            let vertices = zone.polygon.map { "[\($0.0), \($0.1)]" }.joined(separator: ", ")
            return "[[zones]]\nid = \"\(zone.id)\"\npolygon = [\(vertices)]\n"
        }.joined(separator: "\n")
    }

    /// A square of `halfSideDeg` around a point.
    public static func square(around lat: Double, _ lon: Double, halfSideDeg: Double = 0.01) -> [(Double, Double)] {
        [(lat - halfSideDeg, lon - halfSideDeg), (lat - halfSideDeg, lon + halfSideDeg), (lat + halfSideDeg, lon + halfSideDeg), (lat + halfSideDeg, lon - halfSideDeg)]
    }

    public var log: String { process.log }

    /// Lines of the live log, without their time stamps.
    public var lines: [String] {
        log.split(separator: "\n").map { line in
            let text = String(line)
            guard let space = text.firstIndex(of: " ") else { return text }
            return String(text[text.index(after: space)...])
        }
    }

    @discardableResult
    public func waitForLog(_ what: String, timeoutS: Double = 20, _ fragment: String) async throws -> [String] {
        try await waitUntil(what, timeoutS: timeoutS, detail: { "dispatchsim log:\n\(self.log)" }) {
            if lines.contains(where: { $0.contains(fragment) }) { return true }
            if !process.isRunning { throw HarnessError("dispatchsim exited; its log:\n\(log)") }
            return false
        }
        return lines
    }

    /// `meetingTime` (ms since the epoch) makes it a reservation.
    public func book(_ id: String, lat: Double, lon: Double, via client: MQTTRecorder, passengers: Int = 1, meetingTime: Int64? = nil) throws {
        let meeting = meetingTime.map { #","meeting_time":\#($0)"# } ?? ""
        try client.publish(
            "dispatchsim/\(fleet)/request", #"{"id":"\#(id)","pickup":{"lat":\#(lat),"lon":\#(lon)},"passengers":\#(passengers)\#(meeting)}"#)
    }

    public func withdraw(_ id: String, via client: MQTTRecorder) throws {
        try client.publish("dispatchsim/\(fleet)/cancel", #"{"id":"\#(id)"}"#)
    }

    /// SIGTERM, then the summary numbers it wrote on its way out.
    public func stop() throws -> [String: Any] {
        process.stop()
        let data = try Data(contentsOf: URL(fileURLWithPath: statsPath))
        guard let stats = try JSONSerialization.jsonObject(with: data) as? [String: Any] else { throw HarnessError("bad stats file") }
        return stats
    }

    deinit { process.stop() }
}
