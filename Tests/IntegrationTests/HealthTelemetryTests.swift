import Foundation
import MQTTLink
import TestHarness
import Testing

/// Health and telemetry on the real parts: `taxiunitctl health` with gpsd, the broker and the store taken
/// away, `taxiunitctl config` with a drop-in and fleet documents, the telemetry on mosquitto and in
/// the textfile, and the log level changed while the daemon runs.
@Suite(.serialized) struct HealthTelemetryTests {
    func ctl(_ arguments: [String]) throws -> (output: String, exitCode: Int32) {
        try runCommand(Corpus.binary("taxiunitctl"), arguments)
    }

    @Test func healthNamesNoFixBrokerDownAndAFullOutbox() async throws {
        let scratch = try ScratchDirectory()
        let broker = try MosquittoBroker(in: scratch)
        let gps = try FakeGPS(log: Corpus.log(Corpus.steadyLog), in: scratch, cycleS: 0.02)
        let unit = try UnitUnderTest(mqttPort: broker.port, gpsdPort: gps.port, in: scratch)
        try await unit.start()
        try await unit.waitForStatus("a fix and the broker") { $0.broker.connected && $0.gps.lastFixAgeS != nil }
        let socket = ["--socket", unit.controlSocket]

        let healthy = try ctl(["health"] + socket)
        #expect(healthy.exitCode == 0 && healthy.output == "healthy\n", "\(healthy)")

        gps.stop()
        try await unit.waitForStatus("the last fix 2 s old") { ($0.gps.lastFixAgeS ?? 0) >= 2 }
        let noFix = try ctl(["health", "--no-fix-s", "2"] + socket)
        #expect(noFix.exitCode == 2, "\(noFix)")
        #expect(noFix.output.contains(/^gps: no fix for \d+ s \(gpsd (not )?connected\)\n$/), "\(noFix.output)")

        broker.stop()
        try await unit.waitForStatus("the broker down for 1 s") { !$0.broker.connected && ($0.broker.downForS ?? 0) >= 1 }
        #expect(try ctl(["press", "duty"] + socket).exitCode == 0)
        let degraded = try ctl(["health", "--no-fix-s", "3600", "--broker-down-s", "1", "--max-outbox", "0"] + socket)
        #expect(degraded.exitCode == 2, "\(degraded)")
        let lines = degraded.output.split(separator: "\n").map(String.init)
        #expect(lines.count == 2, "\(degraded.output)")
        #expect(lines.first?.contains(/^broker: down for \d+ s/) == true, "\(degraded.output)")
        #expect(lines.last?.contains(/^outbox: \d+ messages waiting \(more than 0\)$/) == true, "\(degraded.output)")

        let json = try ctl(["health", "--json", "--no-fix-s", "3600", "--broker-down-s", "1"] + socket)
        #expect(json.exitCode == 2)
        let report = try #require(try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any])
        #expect(report["healthy"] as? Bool == false)
        #expect((report["problems"] as? [String])?.count == 1, "\(json.output)")
        unit.stop()
    }

    @Test(.enabled(if: getuid() == 0, "mounting a tmpfs needs root"))
    func healthNamesTheVolatileStoreOfAReadOnlyDisk() async throws {
        let scratch = try ScratchDirectory()
        let disk = try OutboxTests.SmallDisk(in: scratch, kilobytes: 1024)
        try disk.remount(readOnly: true)
        let broker = try MosquittoBroker(in: scratch)
        let unit = try UnitUnderTest(unitID: "HRO\(getpid())", mqttPort: broker.port, gpsdPort: try Loopback.freePort(), in: scratch)
        try OutboxTests.moveStore(of: unit, to: disk.path)
        try await unit.start()
        let status = try await unit.waitForStatus("connected") { $0.broker.connected }
        let volatile = try #require(status.volatileStore)
        let result = try ctl(["health", "--no-fix-s", "3600", "--socket", unit.controlSocket])
        #expect(result.exitCode == 2, "\(result)")
        #expect(result.output == "store: the store could not be opened; running on the volatile fallback \(volatile), lost on restart\n")
        unit.stop()
        try? FileManager.default.removeItem(atPath: volatile)
    }

    @Test func configNamesTheFileTheDropInAndTheFleetsDocuments() async throws {
        let setup = try await FleetControlFlowTests.Setup()
        let unit = setup.unit
        let dropIns = setup.scratch.file("conf.d")
        try FileManager.default.createDirectory(atPath: dropIns, withIntermediateDirectories: true)
        try "[unit]\nseats = 3\n".write(toFile: dropIns + "/50-seats.toml", atomically: true, encoding: .utf8)
        try setup.push(1, #"{"reporting":{"interval_s":30}}"#)
        try await setup.waitForAck("the fleet document", FleetControlFlowTests.ack(1, "applied"))
        try setup.push(2, #"{"mqtt":{"max_inflight":4},"reporting":{"interval_s":20}}"#, to: setup.unitTopic)
        try await setup.waitForAck("the unit document", FleetControlFlowTests.ack(2, "applied"))
        let arguments = ["config", "--config", unit.configPath, "--socket", unit.controlSocket]

        let online = try ctl(arguments)
        #expect(online.exitCode == 0, "\(online)")
        let lines = Set(online.output.split(separator: "\n").map(String.init))
        #expect(lines.contains("unit.id = \"\(unit.unitID)\"  # \(unit.configPath)"), "\(online.output)")
        #expect(lines.contains("unit.seats = 3  # \(dropIns)/50-seats.toml"), "\(online.output)")
        #expect(lines.contains("reporting.interval_s = 20  # unit document version 2"), "\(online.output)")
        #expect(lines.contains("mqtt.max_inflight = 4  # unit document version 2"), "\(online.output)")
        #expect(!online.output.hasPrefix("#"), "no note when the daemon answered with documents")

        // The fleet scope's own setting shows where the unit scope does not override it.
        try setup.push(3, #"{"mqtt":{"max_inflight":4}}"#, to: setup.unitTopic)
        try await setup.waitForAck("the unit document without reporting", FleetControlFlowTests.ack(3, "applied"))
        let json = try ctl(arguments + ["--json"])
        let settings = try #require(try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [[String: String]])
        #expect(settings.first { $0["key"] == "reporting.interval_s" } == ["key": "reporting.interval_s", "value": "30", "origin": "fleet document version 1"])

        let offline = try ctl(arguments + ["--offline"])
        #expect(offline.exitCode == 0)
        #expect(offline.output.hasPrefix("# --offline: the local files only\n"), "\(offline.output)")
        #expect(offline.output.contains("\nreporting.interval_s = 0.5  # \(unit.configPath)\n"), "\(offline.output)")
        let notRunning = try ctl(["config", "--config", unit.configPath, "--socket", setup.scratch.file("nothing.sock")])
        #expect(notRunning.output.hasPrefix("# taxiunitd is not running: the local files only\n"), "\(notRunning.output)")
        unit.stop()
    }

    @Test func telemetryIsPublishedRetainedAndWrittenForNodeExporter() async throws {
        let scratch = try ScratchDirectory()
        let broker = try MosquittoBroker(in: scratch)
        let gps = try FakeGPS(log: Corpus.log(Corpus.steadyLog), in: scratch, cycleS: 0.02)
        let textfile = scratch.file("taxiunitd.prom")
        let unit = try UnitUnderTest(
            mqttPort: broker.port, gpsdPort: gps.port, in: scratch, extraTOML: "[telemetry]\ninterval_s = 1\ntextfile = \"\(textfile)\"\n")
        let topic = unit.topicBase + "telemetry"
        let recorder = try await MQTTRecorder(port: broker.port, subscribe: [topic])
        // The service's UMask=0077, which must not keep node_exporter (another user) from the textfile.
        try await unit.start(launcher: ["/bin/sh", "-c", "umask 077; exec \"$0\" \"$@\""])
        let messages = try await recorder.waitFor("telemetry counting fixes and acknowledgements") { messages in
            messages.contains { message in
                let counters = message.json?["counters"] as? [String: Any]
                return (counters?["fixes_received"] as? Int ?? 0) > 0 && (counters?["messages_acknowledged"] as? Int ?? 0) > 0
            }
        }
        #expect(try ContractCheck.problems(in: messages) == [])
        let last = try #require(messages.last?.json)
        #expect(last["unit"] as? String == unit.unitID)
        let gauges = try #require(last["gauges"] as? [String: Any])
        #expect(gauges["broker_connected"] as? Int == 1 && gauges["gpsd_connected"] as? Int == 1, "\(gauges)")
        #expect(gauges["volatile_store"] as? Int == 0)

        // Retained: a dispatcher that subscribes later gets the last one at once.
        let late = try await MQTTRecorder(port: broker.port, subscribe: [topic])
        let retained = try await late.waitFor("the retained telemetry") { !$0.isEmpty }
        #expect(retained.first?.retained == true)

        // node_exporter's text format: every sample line is a known metric of this unit with a number.
        try await waitUntil("the textfile", timeoutS: 10) { FileManager.default.fileExists(atPath: textfile) }
        let text = try String(contentsOfFile: textfile, encoding: .utf8)
        var names: Set<String> = []
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            let sample = try #require(line.wholeMatch(of: /(taxiunitd_[a-z_]+)\{fleet="test",unit="T1"[^}]*\} (-?[0-9.e+]+)/), "\(line)")
            #expect(Double(sample.2) != nil, "\(line)")
            names.insert(String(sample.1))
        }
        #expect(names.isSuperset(of: ["taxiunitd_fixes_received_total", "taxiunitd_messages_published_total", "taxiunitd_outbox_depth"]), "\(names)")
        #expect(text.contains("# TYPE taxiunitd_fixes_received_total counter\n"))
        #expect(text.contains("taxiunitd_build_info{fleet=\"test\",unit=\"T1\",protocol=\"2\",version=\"") && text.contains("taxiunitd_last_fix_age_seconds{"))
        let promtool = try runCommand("/bin/sh", ["-c", "exec /usr/bin/promtool check metrics < \"$0\"", textfile])
        #expect(promtool.exitCode == 0 && promtool.output.isEmpty, "promtool: \(promtool.output)")
        #expect(!FileManager.default.fileExists(atPath: textfile + ".tmp"))
        #expect(try FileManager.default.attributesOfItem(atPath: textfile)[.posixPermissions] as? Int == 0o644)
        unit.stop()
        late.stop()
        recorder.stop()
    }

    @Test func theLogLevelChangesWhileTheDaemonRuns() async throws {
        let scratch = try ScratchDirectory()
        // No broker: every status the unit tries to publish is logged at debug as not sent.
        let unit = try UnitUnderTest(mqttPort: try Loopback.freePort(), gpsdPort: try Loopback.freePort(), in: scratch)
        try await unit.start(arguments: ["--log-level", "info"])
        let socket = ["--socket", unit.controlSocket]
        #expect(try ctl(["log-level"] + socket).output == "info\n")
        #expect(try ctl(["press", "duty"] + socket).exitCode == 0)
        try await unit.waitForStatus("available") { $0.state == "available" }
        #expect(!unit.log.contains("status not published now"), "--log-level info overrides [log] level = debug")

        let set = try ctl(["log-level", "debug"] + socket)
        #expect(set.exitCode == 0 && set.output == "debug\n", "\(set)")
        #expect(try ctl(["press", "duty"] + socket).exitCode == 0)
        try await waitUntil("a debug line", timeoutS: 10, detail: { unit.log }) { unit.log.contains("<7>taxiunitd: status not published now") }
        #expect(unit.log.contains("<5>taxiunitd: log level changed from=info to=debug"), "\(unit.log)")

        // A usage error of taxiunitctl's own (64), in the daemon's words.
        let wrong = try ctl(["log-level", "loud"] + socket)
        #expect(wrong.exitCode == 64)
        #expect(wrong.output.contains("unknown log level loud; one of trace, debug, info, notice, warning, error, critical"), "\(wrong.output)")
        unit.stop()

        let refused = try runCommand(Corpus.binary("taxiunitd"), ["--config", unit.configPath, "--log-level", "loud", "--check"])
        #expect(refused.exitCode != 0)
        #expect(refused.output.contains("--log-level must be one of"), "\(refused.output)")
    }
}
