import Foundation
import MQTTLink
import TestHarness
import Testing

/// The daemon as systemd sees it: notifications on a real NOTIFY_SOCKET, the memory policy the unit
/// file imposes, and the unit file's own exposure score.
@Suite(.serialized) struct SystemdServiceTests {
    /// Pings every WATCHDOG_USEC / 3 = 0.5 s.
    static let watchdogEnvironment = ["WATCHDOG_USEC": "1500000"]

    @Test func notifiesReadyStatusWatchdogAndStopping() async throws {
        let scratch = try ScratchDirectory()
        let broker = try MosquittoBroker(in: scratch)
        let gps = try FakeGPS(log: Corpus.log(Corpus.steadyLog), in: scratch)
        let notify = try NotifySocket(path: scratch.file("notify.sock"))
        let unit = try UnitUnderTest(mqttPort: broker.port, gpsdPort: gps.port, in: scratch)
        try await unit.start(environment: Self.watchdogEnvironment.merging(["NOTIFY_SOCKET": notify.path]) { $1 })

        try await notify.waitFor("READY=1") { $0.contains("READY=1") }
        try await notify.waitFor("three watchdog pings while online") { assignments in
            assignments.filter { $0 == "WATCHDOG=1" }.count >= 3 && assignments.contains { $0.hasPrefix("STATUS=") && $0.contains("online") && !$0.contains("offline") }
        }
        let beforeStop = notify.assignments
        #expect(beforeStop.firstIndex(of: "READY=1")! < beforeStop.firstIndex(of: "WATCHDOG=1")!, "READY=1 comes first")
        let status = try #require(beforeStop.last { $0.hasPrefix("STATUS=") })
        #expect(status.range(of: #"^STATUS=\w+, online, \d+ queued$"#, options: .regularExpression) != nil, "\(status)")

        unit.stop()
        #expect(unit.process?.exitCode == 0)
        #expect(notify.assignments.contains("STOPPING=1"))
    }

    /// The libgps thread stopped for real (ptrace) while the rest of the daemon runs: the pings stop,
    /// the log says which thread, and they resume once the thread runs again. (A silent mqtt-loop is
    /// first replaced inside the daemon after 60 s; the watchdog gives it 150 s, so that case takes
    /// too long for a test: HeartbeatTests covers the rule.)
    @Test(arguments: ["gpsd-reader"])
    func aWedgedLibraryThreadStopsTheWatchdogPings(threadName: String) async throws {
        let scratch = try ScratchDirectory()
        let broker = try MosquittoBroker(in: scratch)
        let gps = try FakeGPS(log: Corpus.log(Corpus.steadyLog), in: scratch)
        let notify = try NotifySocket(path: scratch.file("notify.sock"))
        let unit = try UnitUnderTest(mqttPort: broker.port, gpsdPort: gps.port, in: scratch)
        try await unit.start(environment: Self.watchdogEnvironment.merging(["NOTIFY_SOCKET": notify.path]) { $1 })
        try await notify.waitFor("pings while online") { $0.filter { $0 == "WATCHDOG=1" }.count >= 2 && $0.contains { $0.hasPrefix("STATUS=") && $0.contains(", online,") } }

        let freezer = try await ThreadFreezer(pid: unit.process!.pid, threadName: threadName, logPath: scratch.file("freezer.log"))
        // The thread promised at most 1-2 s of silence plus 10 s of slack.
        try await notify.waitFor("STATUS=unhealthy", timeoutS: 20) { $0.contains { $0.hasPrefix("STATUS=unhealthy: ") && $0.contains("thread \(threadName) silent") } }
        let pingsWhenUnhealthy = notify.assignments.filter { $0 == "WATCHDOG=1" }.count
        try await Task.sleep(for: .seconds(2))
        #expect(notify.assignments.filter { $0 == "WATCHDOG=1" }.count == pingsWhenUnhealthy, "no pings while the thread is wedged")
        let logged = unit.log.split(separator: "\n").first { $0.hasPrefix("<3>taxiunitd: unhealthy, withholding the watchdog ping") }
        #expect(logged?.contains("thread \(threadName) silent for") == true, "\(unit.log)")

        freezer.thaw()
        try await notify.waitFor("pings again once the thread runs") { $0.filter { $0 == "WATCHDOG=1" }.count > pingsWhenUnhealthy }
        unit.stop()
    }

    @Test func noWatchdogPingsWithoutWatchdogUsec() async throws {
        let scratch = try ScratchDirectory()
        let broker = try MosquittoBroker(in: scratch)
        let notify = try NotifySocket(path: scratch.file("notify.sock"))
        let unit = try UnitUnderTest(mqttPort: broker.port, gpsdPort: try Loopback.freePort(), in: scratch)
        try await unit.start(environment: ["NOTIFY_SOCKET": notify.path])
        try await notify.waitFor("READY=1") { $0.contains("READY=1") }
        try await Task.sleep(for: .seconds(1))
        #expect(!notify.assignments.contains("WATCHDOG=1"))
        unit.stop()
    }

    @Test func neverReadyWithAnInvalidConfiguration() async throws {
        let scratch = try ScratchDirectory()
        let notify = try NotifySocket(path: scratch.file("notify.sock"))
        let unit = try UnitUnderTest(
            mqttPort: try Loopback.freePort(), gpsdPort: try Loopback.freePort(), in: scratch, mqttTOML: "tls = true")
        let process = try ChildProcess(
            Corpus.binary("taxiunitd"), ["--config", unit.configPath], logPath: scratch.file("daemon.log"),
            environment: ["NOTIFY_SOCKET": notify.path])
        try await waitUntil("the daemon to give up", timeoutS: 15) { !process.isRunning }
        #expect(process.exitCode == 1)
        #expect(process.log.contains("mqtt.tls = true needs cafile"), "\(process.log)")
        #expect(notify.assignments.isEmpty)
    }

    /// The kernel's own write-xor-execute policy (PR_SET_MDWE, what MemoryDenyWriteExecute=yes
    /// enforces with seccomp) set before exec: the Swift runtime, Foundation, libmosquitto and libgps
    /// never ask for writable code, so the whole flow works under it.
    @Test func runsUnderMemoryDenyWriteExecute() async throws {
        let scratch = try ScratchDirectory()
        let broker = try MosquittoBroker(in: scratch)
        let gps = try FakeGPS(log: Corpus.log(Corpus.steadyLog), in: scratch, cycleS: 0.02)
        let notify = try NotifySocket(path: scratch.file("notify.sock"))
        let unit = try UnitUnderTest(mqttPort: broker.port, gpsdPort: gps.port, in: scratch, reportingIntervalS: 0)
        let recorder = try await MQTTRecorder(port: broker.port, subscribe: [unit.topicBase + "#"])
        let launcher = """
            import ctypes, os, sys
            libc = ctypes.CDLL(None, use_errno=True)
            PR_SET_MDWE, PR_GET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN = 65, 66, 1
            if libc.prctl(PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN, 0, 0, 0) != 0 or libc.prctl(PR_GET_MDWE, 0, 0, 0, 0) != 1:
                sys.exit("cannot set PR_SET_MDWE: errno %d" % ctypes.get_errno())
            print("MDWE set", flush=True)
            os.execv(sys.argv[1], sys.argv[1:])
            """
        try await unit.start(
            environment: Self.watchdogEnvironment.merging(["NOTIFY_SOCKET": notify.path]) { $1 },
            launcher: ["python3", "-c", launcher])
        #expect(unit.log.hasPrefix("MDWE set"))
        try await recorder.waitFor("positions published under MDWE") { $0.filter { $0.topic == unit.topicBase + "pos" }.count >= 5 }
        try await notify.waitFor("watchdog pings under MDWE") { $0.filter { $0 == "WATCHDOG=1" }.count >= 2 }
        unit.stop()
        #expect(unit.process?.exitCode == 0)
    }

    /// The shipped unit opens no device (the shipped configuration names none), and every
    /// `DeviceAllow=` docs/boards.md tells an operator to add passes `systemd-analyze verify` as a
    /// drop-in on top of it.
    @Test func unitFileAllowsNoDeviceAndTheDocumentedDropInsVerify() throws {
        let shipped = try String(contentsOfFile: Corpus.packageRoot + "/systemd/taxiunitd.service", encoding: .utf8)
        let settings = shipped.split(separator: "\n").filter { !$0.hasPrefix("#") }
        #expect(settings.contains("DevicePolicy=closed"))
        #expect(!settings.contains { $0.hasPrefix("DeviceAllow=") }, "\(settings)")

        let boards = try String(contentsOfFile: Corpus.packageRoot + "/docs/boards.md", encoding: .utf8)
        let documented = boards.split(separator: "\n").filter { $0.hasPrefix("DeviceAllow=") }
        #expect(documented.count >= 4, "the drop-ins in docs/boards.md: \(documented)")

        let scratch = try ScratchDirectory()
        let unitDirectory = scratch.file("system")
        try FileManager.default.createDirectory(atPath: unitDirectory + "/taxiunitd.service.d", withIntermediateDirectories: true)
        // verify checks that ExecStart= exists.
        try shipped.replacingOccurrences(of: "/usr/local/bin/taxiunitd", with: Corpus.binary("taxiunitd"))
            .write(toFile: unitDirectory + "/taxiunitd.service", atomically: true, encoding: .utf8)
        try (["[Service]"] + documented).joined(separator: "\n").appending("\n")
            .write(toFile: unitDirectory + "/taxiunitd.service.d/devices.conf", atomically: true, encoding: .utf8)
        // A trailing colon keeps systemd's own directories (sysinit.target ...) in the path.
        let verify = try runCommand(
            "/usr/bin/systemd-analyze", ["verify", "--man=no", unitDirectory + "/taxiunitd.service"],
            environment: ["SYSTEMD_UNIT_PATH": unitDirectory + ":"])
        #expect(verify.exitCode == 0, "\(verify.output)")
        #expect(verify.output.isEmpty, "\(verify.output)")
    }

    @Test func unitFileExposureIsAtMostTwo() throws {
        let unitFile = Corpus.packageRoot + "/systemd/taxiunitd.service"
        let result = try runCommand("/usr/bin/systemd-analyze", ["security", "--offline=yes", "--no-pager", unitFile])
        let match = try #require(result.output.firstMatch(of: /Overall exposure level for taxiunitd\.service: (\d+\.\d+)/), "\(result.output)")
        let exposure = try #require(Double(match.1))
        #expect(exposure <= 2.0, "\(result.output)")
    }
}
