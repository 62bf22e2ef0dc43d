import Foundation
import TestHarness
import Testing

/// taxifleet serve's live page in a real headless Chromium driven by selenium
/// (Tests/browser/fleet_page.py), showing a fleet of real units: one driving the demo's route
/// through Midtown from a real gpsd, one without a fix that the test stops.
@Suite(.serialized) struct TaxiFleetPageTests {
    @Test func thePageShowsTheFleetLiveAsATaxiMovesAndAUnitGoesOffline() async throws {
        var fleet = try await TaxiFleetTests.Fleet(online: ["T2"], offline: [])
        let route = Corpus.packageRoot + "/demo/manhattan-midtown.nmea"
        let gps = try FakeGPS(log: route, in: fleet.scratch, cycleS: 0.1)
        defer { gps.stop() }
        try await fleet.addUnit("T1", trusting: fleet.signer.fleetSection(), gpsdPort: gps.port)
        let port = try Loopback.freePort()
        let server = try ChildProcess(
            Corpus.binary("taxifleet"),
            ["serve", "--listen", "127.0.0.1:\(port)"] + fleet.connectionArguments(account: "office"),
            logPath: fleet.scratch.file("serve.log"))
        defer { _ = server.stop() }
        try await waitUntil("taxifleet serve to listen", timeoutS: 20, detail: { server.log }) { Loopback.accepts(port: port) }

        let signals = fleet.scratch.file("signals")
        try FileManager.default.createDirectory(atPath: signals, withIntermediateDirectories: true)
        let browser = try ChildProcess(
            "/usr/bin/python3", [Corpus.packageRoot + "/Tests/browser/fleet_page.py", "http://127.0.0.1:\(port)/", signals, "T1", "T2"],
            logPath: fleet.scratch.file("browser.log"))
        defer { _ = browser.stop() }
        try await waitUntil("the page to show the units", timeoutS: 60, detail: { browser.log + "\nserve:\n" + server.log }) {
            if !browser.isRunning { throw HarnessError("the browser script ended early:\n\(browser.log)") }
            return FileManager.default.fileExists(atPath: signals + "/loaded")
        }
        // The demo's zones as the fleet's document, pushed while the page is open: the map draws
        // them and the rollout shows version 1 applied by both units.
        let pushed = try fleet.taxifleet(["push", "--wait", "30", Corpus.packageRoot + "/demo/zones.toml"])
        #expect(pushed.exitCode == 0, "\(pushed.output)")
        try await waitUntil("the page to show the fleet and the taxi to move", timeoutS: 90, detail: { browser.log + "\nserve:\n" + server.log }) {
            if !browser.isRunning { throw HarnessError("the browser script ended early:\n\(browser.log)") }
            return FileManager.default.fileExists(atPath: signals + "/ready")
        }
        fleet.units["T2"]?.stop()
        FileManager.default.createFile(atPath: signals + "/stopped", contents: nil)
        try await waitUntil("the browser script to end", timeoutS: 60, detail: { browser.log }) { !browser.isRunning }
        #expect(browser.exitCode == 0, "\(browser.log)")
        #expect(browser.log.contains("PASS"), "\(browser.log)")
        fleet.stopAll()
    }
}
