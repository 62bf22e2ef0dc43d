import Foundation
import TestHarness
import Testing

/// taxiunitctl against a real daemon: human and JSON output, the outbox listing, and the lines it
/// prints when it cannot reach the daemon.
@Suite(.serialized) struct ControlToolTests {
    func ctl(_ arguments: [String]) throws -> (output: String, exitCode: Int32) {
        try runCommand(Corpus.binary("taxiunitctl"), arguments)
    }

    /// A connection to `path` that sends nothing: it holds one of the daemon's places until its
    /// request deadline passes.
    static func silentConnection(_ path: String) throws -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        try #require(fd >= 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        try #require(connected == 0, "connect: \(String(cString: strerror(errno)))")
        return fd
    }

    /// Eight clients that never send their request fill the daemon's control socket: taxiunitctl is
    /// told `busy` at once, and served again once their one 5 s deadline has passed. The daemon's
    /// other work goes on meanwhile.
    @Test func silentClientsFillTheSocketUntilTheirDeadline() async throws {
        let scratch = try ScratchDirectory()
        let broker = try MosquittoBroker(in: scratch)
        let unit = try UnitUnderTest(mqttPort: broker.port, gpsdPort: try Loopback.freePort(), in: scratch)
        try await unit.start()
        try await unit.waitForStatus("connected") { $0.broker.connected }

        // A place is held once the daemon has accepted a silent client without answering it; the
        // thread of the harness's own last request may still hold one for a moment, and a client
        // that came meanwhile is told busy at once: that one is replaced.
        var silent: [Int32] = []
        defer { silent.forEach { close($0) } }
        var filled: ContinuousClock.Instant?
        for _ in 0..<40 where silent.count < 8 {
            let fd = try Self.silentConnection(unit.controlSocket)
            filled = filled ?? .now
            var answered = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            if poll(&answered, 1, 200) == 0 { silent.append(fd) } else { close(fd) }
        }
        try #require(silent.count == 8)
        let busy = try ctl(["status", "--socket", unit.controlSocket])
        #expect(busy.exitCode == 1)
        #expect(busy.output.contains("taxiunitctl: busy"), "\(busy.output)")

        try await waitUntil("served again after the silent clients' deadline", timeoutS: 15) {
            try ctl(["status", "--socket", unit.controlSocket]).exitCode == 0
        }
        #expect(ContinuousClock.now - (filled ?? .now) >= .seconds(4.5), "the places were held until the deadline")
        for fd in silent {
            var byte: UInt8 = 0
            #expect(recv(fd, &byte, 1, 0) == 0, "the daemon closed every silent connection")
        }
        #expect(try unit.status().broker.connected)
        unit.stop()
    }

    @Test func outboxListsWaitingMessagesPerClassWhileTheBrokerIsDown() async throws {
        let scratch = try ScratchDirectory()
        // Nobody listens on the broker port: every event waits in the outbox.
        let unit = try UnitUnderTest(mqttPort: try Loopback.freePort(), gpsdPort: try Loopback.freePort(), in: scratch)
        try await unit.start()
        for _ in 0..<3 {
            #expect(try ctl(["press", "duty", "--socket", unit.controlSocket]).exitCode == 0)
        }
        // Three transitions and the shift's start; the time off is no break the dispatcher hears of
        // without a `break_min`: four events.
        try await unit.waitForStatus("four events queued") { $0.outbox.event >= 4 }

        let json = try ctl(["outbox", "--json", "--limit", "2", "--socket", unit.controlSocket])
        #expect(json.exitCode == 0, "\(json.output)")
        let listing = try #require(try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any])
        let depth = try #require(listing["depth_by_class"] as? [String: Int])
        #expect(depth == ["alarm": 0, "reply": 0, "event": 4, "position": 0])
        let oldest = try #require(listing["oldest"] as? [[String: Any]])
        #expect(oldest.count == 2)
        #expect(oldest.allSatisfy { $0["message_class"] as? String == "event" && $0["topic"] as? String == "event" && $0["in_flight"] as? Bool == false })

        let human = try ctl(["outbox", "--limit", "1", "--socket", unit.controlSocket])
        #expect(human.exitCode == 0)
        #expect(human.output.contains(/waiting by class:\n  alarm +0\n  reply +0\n  event +4\n  position +0\n/), "\(human.output)")
        #expect(human.output.contains(/oldest:\n  - class +event\n    topic +event\n/), "\(human.output)")

        let status = try ctl(["status", "--socket", unit.controlSocket])
        #expect(status.output.contains(/outbox:\n  depth +\d+\n  in flight +0\n  alarm +0\n  reply +0\n  event +4\n  position +\d+\n/), "\(status.output)")
        #expect(status.output.contains(/\nbroker +disconnected\n/), "\(status.output)")
        unit.stop()
    }

    /// An offer rejected and a job cancelled by the dispatcher end without a ride: `jobs --no-ride`
    /// lists them from the store, newest first, and the rides stay as they were.
    @Test func jobsListsTheJobsThatEndedWithoutARide() async throws {
        let rig = try await JobFlowTests.Rig()
        let socket = ["--socket", rig.unit.controlSocket]
        #expect(try ctl(["jobs", "--no-ride"] + socket).output == "no jobs without a ride\n")
        try await rig.goOnDuty()
        try rig.offer("R1")
        try await rig.unit.waitForStatus("R1 offered") { $0.state == "offered" }
        _ = try rig.press("reject")
        try await rig.unit.waitForStatus("available after R1") { $0.state == "available" }
        try rig.offer("C1")
        try await rig.unit.waitForStatus("C1 offered") { $0.state == "offered" }
        _ = try rig.press("accept")
        try await rig.unit.waitForStatus("en route to C1") { $0.state == "en_route" }
        try rig.publish("job/cancel", #"{"job":"C1","reason":"passenger withdrew"}"#)
        try await rig.unit.waitForStatus("available after C1") { $0.state == "available" }

        let json = try ctl(["jobs", "--no-ride", "--json"] + socket)
        #expect(json.exitCode == 0, "\(json.output)")
        let outcomes = try #require(try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [[String: Any]])
        #expect(outcomes.map { $0["job"] as? String } == ["C1", "R1"])
        #expect(outcomes.map { $0["outcome"] as? String } == ["cancelled", "rejected"])
        #expect(outcomes.allSatisfy { ($0["ended_at"] as? Int64 ?? 0) > 0 })

        let human = try ctl(["jobs", "--no-ride"] + socket)
        #expect(human.output.contains(/^job +C1\nended at +\d{4}-\d\d-\d\d \d\d:\d\d:\d\d [+-]\d\d:\d\d\noutcome +cancelled\n/), "\(human.output)")
        #expect(try ctl(["jobs"] + socket).output == "no rides yet\n")
        rig.stop()
    }

    /// Two rides through the driver's inputs, then the history, newest first, with the pickup address.
    @Test func jobsListsTheRideHistoryNewestFirst() async throws {
        let rig = try await JobFlowTests.Rig()
        #expect(try ctl(["jobs", "--socket", rig.unit.controlSocket]).output == "no rides yet\n")
        try await rig.goOnDuty()
        for job in ["J1", "J2"] {
            try rig.offer(job)
            try await rig.unit.waitForStatus("\(job) offered") { $0.state == "offered" }
            for input in ["accept", "arrived", "pob 1", "clear"] { try rig.press(input) }
            try await rig.unit.waitForStatus("available after \(job)") { $0.state == "available" }
        }
        let socket = ["--socket", rig.unit.controlSocket]

        let last = try ctl(["jobs", "--json", "--last", "1"] + socket)
        #expect(last.exitCode == 0, "\(last.output)")
        let rides = try #require(try JSONSerialization.jsonObject(with: Data(last.output.utf8)) as? [[String: Any]])
        #expect(rides.map { $0["job"] as? String } == ["J2"])
        #expect(rides.first?["passengers"] as? Int == 1)
        #expect(rides.first?["pickup_address"] as? String == "Bahnhofplatz 1")

        let human = try ctl(["jobs"] + socket)
        #expect(human.exitCode == 0)
        #expect(human.output.contains(/^job +J2\npassengers +1\npickup at +\d{4}-\d\d-\d\d \d\d:\d\d:\d\d [+-]\d\d:\d\d\n/), "\(human.output)")
        let order = human.output.split(separator: "\n").filter { $0.hasPrefix("job ") }
        #expect(order.map { $0.split(separator: " ").last! } == ["J2", "J1"])
        #expect(human.output.contains("\n\njob "), "a blank line between rides")
        #expect(human.output.contains(/\npickup address +Bahnhofplatz 1\n/), "\(human.output)")

        let invalid = try ctl(["jobs", "--last", "0"] + socket)
        #expect(invalid.exitCode != 0)
        #expect(invalid.output.contains("--last must be at least 1"))
        rig.stop()
    }

    @Test func notRunningExitsThree() throws {
        let scratch = try ScratchDirectory()
        let result = try ctl(["status", "--socket", scratch.file("nothing.sock")])
        #expect(result.exitCode == 3)
        #expect(result.output == "taxiunitctl: taxiunitd is not running (nothing listens on \(scratch.file("nothing.sock")))\n")
    }

    @Test func notPermittedExitsFour() async throws {
        try #require(getuid() == 0, "needs root to run taxiunitctl as another user")
        let scratch = try ScratchDirectory()
        let unit = try UnitUnderTest(mqttPort: try Loopback.freePort(), gpsdPort: try Loopback.freePort(), in: scratch)
        try await unit.start()
        // The scratch directory is mode 700: nobody cannot reach the socket in it.
        let result = try runCommand(
            "/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", Corpus.binary("taxiunitctl"), "status", "--socket", unit.controlSocket])
        #expect(result.exitCode == 4, "\(result.output)")
        #expect(result.output.contains("not permitted to use \(unit.controlSocket)"), "\(result.output)")
        unit.stop()
    }

    /// Words and levels the daemon would refuse are refused by taxiunitctl itself, with the daemon's
    /// own wording and the usage exit status, without a daemon to ask.
    @Test func inputsAndLevelsAreCheckedWithoutTheDaemon() throws {
        let nowhere = ["--socket", "/nonexistent/taxiunitd.sock"]
        for words in [["flyaway"], ["pob", "x"], ["pause", "nap"], ["login", "D-1", "12"]] {
            let result = try ctl(["press"] + words + nowhere)
            #expect(result.exitCode == 64 && result.output.hasPrefix("Error: ") && !result.output.contains("not running"), "\(words): \(result.output)")
        }
        let level = try ctl(["log-level", "loud"] + nowhere)
        #expect(level.exitCode == 64 && level.output.contains("unknown log level loud; one of trace, debug"), "\(level.output)")
        // Valid words do go to the daemon (which is not there: exit 3).
        #expect(try ctl(["press", "pob", "2"] + nowhere).exitCode == 3)
        #expect(try ctl(["log-level", "debug"] + nowhere).exitCode == 3)
        // send and info are different inputs, and the help says so.
        // Words as read, whatever the lines the help was wrapped into.
        let help = try ctl(["press", "--help"]).output.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        #expect(help.contains("info (the next page of job details)") && help.contains("send (send the chosen canned text)"), "\(help)")
    }

    /// Without --socket, the subcommands find the socket where --config's `[control] socket` puts it;
    /// a configuration file that is missing is named, with a hint of --config.
    @Test func theSocketIsTheConfigurationsOwn() async throws {
        let scratch = try ScratchDirectory()
        let unit = try UnitUnderTest(mqttPort: try Loopback.freePort(), gpsdPort: try Loopback.freePort(), in: scratch)
        try await unit.start()
        // Nobody listens on the broker port: the ready line says the unit is connecting, not offline.
        try await waitUntil("the ready line", timeoutS: 15, detail: { unit.log }) { unit.log.contains("taxiunitd: ready") }
        let ready = try #require(unit.log.split(separator: "\n").first { $0.contains("taxiunitd: ready") }, "\(unit.log)")
        #expect(ready.contains("broker=connecting") && !ready.contains("offline"), "\(ready)")
        let status = try ctl(["status", "--json", "--config", unit.configPath])
        #expect(status.exitCode == 0 && status.output.contains("\"unit\""), "\(status.output)")
        // One naming convention, the wire's: every key snake_case, at every depth.
        func keys(_ value: Any) -> [String] {
            if let object = value as? [String: Any] { return object.keys + object.values.flatMap(keys) }
            if let array = value as? [Any] { return array.flatMap(keys) }
            return []
        }
        let all = keys(try JSONSerialization.jsonObject(with: Data(status.output.utf8)))
        #expect(all.contains("seats_left") && all.contains("sos_pending"), "\(all)")
        #expect(all.allSatisfy { $0.wholeMatch(of: /[a-z0-9_]+/) != nil }, "\(all.filter { $0.wholeMatch(of: /[a-z0-9_]+/) == nil })")
        #expect(try ctl(["log-level", "--config", unit.configPath]).output == "debug\n")
        let missing = scratch.file("missing.toml")
        let noFile = try ctl(["status", "--config", missing])
        #expect(noFile.exitCode == 1 && noFile.output.contains("\(missing): no such file; name the configuration file with --config"), "\(noFile.output)")
        let daemon = try runCommand(Corpus.binary("taxiunitd"), ["--config", missing, "--check"])
        #expect(daemon.exitCode == 1 && daemon.output.contains("no such file; name the configuration file with --config"), "\(daemon.output)")
        unit.stop()
    }

    /// hash-pin on a terminal asks for the PIN with echo off: the PIN never appears on the screen.
    @Test func hashPINDoesNotEchoThePIN() throws {
        let script = """
            import os, pty, signal, sys
            signal.alarm(30)  # a PIN that was never read fails the test, not the run
            pid, fd = pty.fork()
            if pid == 0:
                os.execv(sys.argv[1], [sys.argv[1], "hash-pin", "--rounds", "1000"])
            seen = b""
            while b"PIN: " not in seen:
                seen += os.read(fd, 1024)
            os.write(fd, b"8642\\n")
            while True:
                try:
                    chunk = os.read(fd, 1024)
                except OSError:
                    break
                if not chunk:
                    break
                seen += chunk
            os.waitpid(pid, 0)
            sys.stdout.write(seen.decode())
            """
        let result = try runCommand("/usr/bin/python3", ["-c", script, Corpus.binary("taxiunitctl")])
        #expect(result.exitCode == 0, "\(result.output)")
        #expect(result.output.contains("pbkdf2-sha256$1000$") && !result.output.contains("8642"), "\(result.output)")
    }
}
