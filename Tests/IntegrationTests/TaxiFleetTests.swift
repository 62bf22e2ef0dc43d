import Foundation
import TestHarness
import Testing
import UnitCore

/// taxifleet on the real parts: mosquitto with the shipped ACL and listener settings, real units
/// logged in as themselves, and taxifleet logged in as `fleet`.
@Suite(.serialized) struct TaxiFleetTests {
    /// A fleet "north" on a broker with the example ACL: units T1 and T2 online, T3 stopped cleanly
    /// (its retained status says offline), all trusting the key `taxifleet gen-key` made.
    struct Fleet {
        let scratch: ScratchDirectory
        let broker: MosquittoBroker
        let signer: FleetSigner
        var units: [String: UnitUnderTest] = [:]

        static let accounts = ["T1", "T2", "T3", "T4", "fleet", "office", "dispatcher", "admin"]

        init(online: [String] = ["T1", "T2"], offline: [String] = ["T3"]) async throws {
            scratch = try ScratchDirectory()
            // `office` is a second fleet login with the example's fleet rules, as docs/fleet.md
            // advises for a second console; `admin` is a test instrument: it plays a unit that says
            // it is online and never answers.
            let example = try String(contentsOfFile: Corpus.packageRoot + "/etc/mosquitto-acl.example", encoding: .utf8)
            let fleetRules = example.components(separatedBy: "\nuser fleet\n")[1]
            broker = try exampleBroker(in: scratch, accounts: Self.accounts, extraACL: "user office\n\(fleetRules)\nuser admin\ntopic write #")
            for account in Self.accounts {
                let file = scratch.file("\(account).password")
                guard FileManager.default.createFile(atPath: file, contents: Data("pw-\(account)\n".utf8), attributes: [.posixPermissions: 0o600]) else {
                    throw HarnessError("cannot create \(file)")
                }
            }
            signer = try FleetSigner(in: scratch)
            for id in online + offline {
                try await addUnit(id, trusting: signer.fleetSection())
            }
            for id in offline {
                units[id]?.stop()
            }
        }

        mutating func addUnit(_ id: String, trusting fleetSection: String, gpsdPort: Int? = nil) async throws {
            let unit = try UnitUnderTest(
                unitID: id, fleet: "north", mqttPort: broker.port, gpsdPort: try gpsdPort ?? Loopback.freePort(), in: scratch,
                extraTOML: fleetSection, mqttTOML: "username = \"\(id)\"\npassword_file = \"\(scratch.file("\(id).password"))\"")
            try await unit.start()
            try await unit.waitForStatus("\(id) connected") { $0.broker.connected }
            units[id] = unit
        }

        /// Broker, fleet and login options for taxifleet.
        func connectionArguments(account: String = "fleet") -> [String] {
            ["--port", String(broker.port), "--fleet", "north", "--username", account, "--password-file", scratch.file("\(account).password")]
        }

        /// Runs taxifleet as the fleet account (or `account`) against this broker.
        func taxifleet(_ arguments: [String], account: String = "fleet") throws -> (output: String, exitCode: Int32) {
            let (subcommand, rest) = (arguments[0], Array(arguments.dropFirst()))
            let signing = ["push", "command"].contains(subcommand) ? ["--key", signer.keyPath] : []
            return try runCommand(Corpus.binary("taxifleet"), [subcommand] + connectionArguments(account: account) + signing + rest)
        }

        func settingsFile(_ name: String, _ text: String) throws -> String {
            let path = scratch.file(name)
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            return path
        }

        func versions(_ id: String) throws -> [String: Int] { try units[id]?.status().config?.versions ?? [:] }

        func stopAll() { for unit in units.values { unit.stop() } }
    }

    static func json(_ output: String) throws -> [String: Any] {
        let line = try #require(output.split(separator: "\n").last { $0.hasPrefix("{") }, "no JSON line in: \(output)")
        return try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
    }

    @Test func pushAppliesOnEveryOnlineUnitListsTheOfflineOneAndTheNextPushTakesTheNextVersion() async throws {
        let fleet = try await Fleet()
        let settings = try fleet.settingsFile("fleet.toml", "[reporting]\ninterval_s = 10\n")
        let first = try fleet.taxifleet(["push", "--wait", "30", settings])
        #expect(first.exitCode == 0, "\(first.output)")
        #expect(first.output.contains("fleet config version 1 on taxi/north/config: 2 units online, 1 offline"), "\(first.output)")
        #expect(first.output.contains("T1 applied\n") && first.output.contains("T2 applied\n"), "\(first.output)")
        #expect(first.output.contains("offline: T3\n"), "\(first.output)")
        #expect(try fleet.versions("T1") == ["fleet": 1])
        #expect(try fleet.versions("T2") == ["fleet": 1])

        // The next version comes from what is retained; JSON for scripts.
        let json = try fleet.settingsFile("fleet.json", #"{"reporting":{"interval_s":20}}"#)
        let second = try fleet.taxifleet(["push", "--json", "--wait", "30", json])
        #expect(second.exitCode == 0, "\(second.output)")
        let answer = try Self.json(second.output)
        #expect(answer["outcome"] as? String == "succeeded")
        #expect(answer["version"] as? Int == 2)
        #expect(answer["offline"] as? [String] == ["T3"])
        #expect((answer["answers"] as? [[String: Any]])?.map { $0["unit"] as? String } == ["T1", "T2"])
        #expect(try fleet.versions("T2") == ["fleet": 2])

        // The offline unit gets the retained document when it comes back.
        let t3 = try #require(fleet.units["T3"])
        try await t3.start()
        try await t3.waitForStatus("T3 to apply the retained version 2") { $0.config?.versions == ["fleet": 2] }

        // A unit's own document: its version is its own.
        let unitScope = try fleet.taxifleet(["push", "--unit", "T1", "--json", "--wait", "30", settings])
        #expect(unitScope.exitCode == 0, "\(unitScope.output)")
        #expect(try Self.json(unitScope.output)["scope"] as? String == "unit")
        #expect(try fleet.versions("T1") == ["fleet": 2, "unit": 1])

        // On a terminal (a pty from script(1)) a progress bar is drawn on standard error as well.
        let command = ([Corpus.binary("taxifleet"), "push", "--wait", "30", "--key", fleet.signer.keyPath] + fleet.connectionArguments() + [json])
            .joined(separator: " ")
        let onTerminal = try runCommand("/usr/bin/script", ["-qec", command, "/dev/null"])
        #expect(onTerminal.exitCode == 0, "\(onTerminal.output)")
        #expect(onTerminal.output.contains("\r\u{1B}[K[" + String(repeating: "#", count: 30) + "] 3/3 answered: applied 3"), "T3 is back: \(onTerminal.output)")
        fleet.stopAll()
    }

    @Test func aDocumentTheUnitsWouldRefuseIsNeverPublished() async throws {
        let fleet = try await Fleet(online: ["T1"], offline: [])
        let settings = try fleet.settingsFile("bad.toml", "[reporting]\ninterval_s = -1\n[store]\npath = \"/tmp/elsewhere\"\n")
        let result = try fleet.taxifleet(["push", "--wait", "10", settings])
        #expect(result.exitCode == 4, "\(result.output)")
        #expect(result.output.contains("nothing was published"), "\(result.output)")
        #expect(result.output.contains("store.path is not remotely settable"), "\(result.output)")
        #expect(result.output.contains("reporting.interval_s must be between 0.0 and 86400.0, found -1.0"), "\(result.output)")
        // Nothing retained: a valid push afterwards is version 1.
        let good = try fleet.settingsFile("good.toml", "[reporting]\ninterval_s = 10\n")
        let next = try fleet.taxifleet(["push", "--json", "--wait", "30", good])
        #expect(try Self.json(next.output)["version"] as? Int == 1, "\(next.output)")
        fleet.stopAll()
    }

    @Test func aRejectionAndASilentUnitEachHaveTheirExitStatus() async throws {
        var fleet = try await Fleet(online: ["T1"], offline: [])
        // T4 trusts another key: it rejects the fleet's signature.
        let stranger = try FleetSigner(in: fleet.scratch, name: "stranger")
        try await fleet.addUnit("T4", trusting: stranger.fleetSection())
        let settings = try fleet.settingsFile("fleet.toml", "[reporting]\ninterval_s = 10\n")
        let rejected = try fleet.taxifleet(["push", "--wait", "30", settings])
        #expect(rejected.exitCode == 1, "\(rejected.output)")
        #expect(rejected.output.contains("T1 applied\n"), "\(rejected.output)")
        #expect(rejected.output.contains("T4 rejected (signature): signature does not match any of the configured keys"), "\(rejected.output)")

        // A unit whose retained status says online but that never answers: timed out.
        let ghost = try await Account("admin", port: fleet.broker.port)
        _ = try ghost.connection.publish(
            topic: "taxi/north/T9/status", payload: Array(#"{"online":true,"t":1,"unit":"T9"}"#.utf8), qos: 1, retain: true)
        let silent = try fleet.taxifleet(["push", "--unit", "T1", "--unit", "T9", "--wait", "3", settings])
        #expect(silent.exitCode == 2, "\(silent.output)")
        #expect(silent.output.contains("T1 applied\n"), "\(silent.output)")
        #expect(silent.output.contains("no answer: T9\n"), "\(silent.output)")
        ghost.stop()

        // A login that may not publish config: the broker refuses, nothing is waited for.
        let refused = try fleet.taxifleet(["push", "--wait", "10", settings], account: "dispatcher")
        #expect(refused.exitCode == 3, "\(refused.output)")
        #expect(refused.output.contains("the broker refused the publish on taxi/north/config (reason code 0x87)"), "\(refused.output)")
        fleet.stopAll()
    }

    @Test func commandsGoToEveryUnitAndTheirRepliesComeBack() async throws {
        let fleet = try await Fleet()
        let status = try fleet.taxifleet(["command", "status", "--json", "--wait", "30"])
        #expect(status.exitCode == 0, "\(status.output)")
        let answer = try Self.json(status.output)
        #expect(answer["outcome"] as? String == "succeeded")
        #expect(answer["offline"] as? [String] == ["T3"])
        let replies = try #require(answer["answers"] as? [[String: Any]])
        #expect(replies.map { $0["unit"] as? String } == ["T1", "T2"])
        #expect(replies.allSatisfy { $0["result"] as? String == "ok" && $0["status"] is [String: Any] }, "\(replies)")

        let purge = try fleet.taxifleet(["command", "purge", "--days", "0", "--unit", "T2", "--wait", "30"])
        #expect(purge.exitCode == 0, "\(purge.output)")
        #expect(purge.output.contains("T2 ok\n"), "\(purge.output)")
        // Without a fix the unit cannot report one: the command failed, and says why.
        let report = try fleet.taxifleet(["command", "report", "--unit", "T1", "--wait", "30"])
        #expect(report.exitCode == 1, "\(report.output)")
        #expect(report.output.contains("T1 failed"), "\(report.output)")
        #expect(try fleet.taxifleet(["command", "purge", "--unit", "T1"]).exitCode == 64, "purge needs --days")
        #expect(try fleet.taxifleet(["command", "reboot", "--unit", "T1"]).exitCode == 4, "a command the units do not know")
        fleet.stopAll()
    }

    @Test func statusShowsEveryUnitFromTheRetainedTopicsAndFilters() async throws {
        let fleet = try await Fleet()
        let all = try fleet.taxifleet(["status", "--json"])
        #expect(all.exitCode == 0, "\(all.output)")
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(all.output.utf8)) as? [[String: Any]], "\(all.output)")
        #expect(rows.map { $0["unit"] as? String } == ["T1", "T2", "T3"])
        #expect(rows.map { $0["online"] as? Bool } == [true, true, false])
        #expect(rows[0]["software"] as? String == SoftwareVersion.software)
        #expect(rows[0]["protocol"] as? Int == SoftwareVersion.wireProtocol)
        #expect(rows[0]["state"] as? String == "off_duty")
        #expect(rows[0]["outbox"] is Int)

        let offline = try fleet.taxifleet(["status", "--offline"])
        let lines = offline.output.split(separator: "\n")
        #expect(lines.count == 2 && lines[0].hasPrefix("UNIT") && lines[1].hasPrefix("T3 "), "\(offline.output)")
        let stale = try fleet.taxifleet(["status", "--stale-fix", "60", "--unit", "T1"])
        #expect(stale.output.split(separator: "\n").count == 2, "T1 never had a fix: \(stale.output)")
        #expect(try fleet.taxifleet(["status", "--sort", "colour"]).exitCode == 64)
        fleet.stopAll()
    }

    @Test func statusWatchShowsAUnitGoingOffline() async throws {
        let fleet = try await Fleet(online: ["T1", "T2"], offline: [])
        let arguments = ["status"] + fleet.connectionArguments() + ["--json", "--watch"]
        let watcher = try ChildProcess(Corpus.binary("taxifleet"), arguments, logPath: fleet.scratch.file("watch.log"))
        defer { _ = watcher.stop() }
        func onlineOfT1(_ line: Substring) -> Bool? {
            let rows = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [[String: Any]]
            return rows?.first { $0["unit"] as? String == "T1" }?["online"] as? Bool
        }
        try await waitUntil("the first table with T1 online", timeoutS: 20, detail: { watcher.log }) {
            watcher.log.split(separator: "\n").contains { onlineOfT1($0) == true }
        }
        fleet.units["T1"]?.stop()
        try await waitUntil("a table with T1 offline", timeoutS: 20, detail: { watcher.log }) {
            watcher.log.split(separator: "\n").last.flatMap(onlineOfT1) == false
        }
        fleet.stopAll()
    }

    /// The broker, account and fleet from a config file, over TLS with a client certificate and a
    /// password, as a unit connects.
    @Test func aConfigFileConnectsOverTLSWithClientCertificateAndLogin() async throws {
        let scratch = try ScratchDirectory()
        let pki = try TestCertificates(in: scratch)
        let passwords = scratch.file("broker.passwd")
        guard FileManager.default.createFile(atPath: passwords, contents: nil) else { throw HarnessError("cannot create \(passwords)") }
        for account in ["T1", "fleet"] {
            let made = try runCommand("/usr/bin/mosquitto_passwd", ["-b", passwords, account, "pw-\(account)"])
            guard made.exitCode == 0 else { throw HarnessError("mosquitto_passwd: \(made.output)") }
            guard FileManager.default.createFile(atPath: scratch.file("\(account).password"), contents: Data("pw-\(account)\n".utf8), attributes: [.posixPermissions: 0o600]) else {
                throw HarnessError("cannot create the password file")
            }
        }
        let broker = try MosquittoBroker(in: scratch, listenerSettings: pki.brokerSettings + "\nallow_anonymous false\npassword_file \(passwords)")
        func tls(_ account: String) -> String {
            """
            tls = true
            cafile = "\(pki.caFile)"
            certfile = "\(pki.clientCertFile)"
            keyfile = "\(pki.clientKeyFile)"
            username = "\(account)"
            password_file = "\(scratch.file("\(account).password"))"
            """
        }
        let unit = try UnitUnderTest(mqttPort: broker.port, gpsdPort: try Loopback.freePort(), in: scratch, mqttTOML: tls("T1") + "\ntls_version = \"tlsv1.2\"")
        try await unit.start()
        try await unit.waitForStatus("connected over TLS") { $0.broker.connected }
        let config = scratch.file("taxifleet.toml")
        try "[broker]\nhost = \"127.0.0.1\"\nport = \(broker.port)\n\(tls("fleet"))\n\n[fleet]\nid = \"\(unit.fleet)\"\n"
            .write(toFile: config, atomically: true, encoding: .utf8)
        let status = try runCommand(Corpus.binary("taxifleet"), ["status", "--json", "--config", config])
        #expect(status.exitCode == 0, "\(status.output)")
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(status.output.utf8)) as? [[String: Any]], "\(status.output)")
        #expect(rows.map { $0["unit"] as? String } == [unit.unitID])
        #expect(rows.first?["online"] as? Bool == true)

        // Without the client certificate the broker refuses the handshake; the console says it could not connect.
        let withoutCertificate = scratch.file("no-cert.toml")
        try String(contentsOfFile: config, encoding: .utf8).split(separator: "\n").filter { !$0.hasPrefix("certfile") && !$0.hasPrefix("keyfile") }
            .joined(separator: "\n").write(toFile: withoutCertificate, atomically: true, encoding: .utf8)
        let refused = try runCommand(Corpus.binary("taxifleet"), ["status", "--config", withoutCertificate])
        #expect(refused.exitCode == 3, "\(refused.output)")
        #expect(refused.output.contains("cannot connect to the broker 127.0.0.1:\(broker.port)"), "\(refused.output)")
        // Plaintext to a broker that is not this machine is refused before connecting; a misspelt key too.
        let plaintext = try runCommand(Corpus.binary("taxifleet"), ["status", "--host", "192.0.2.1", "--fleet", "north"])
        #expect(plaintext.exitCode == 64, "\(plaintext.output)")
        #expect(plaintext.output.contains("the broker 192.0.2.1 is not this machine: use --tls"), "\(plaintext.output)")
        try "[broker]\nhots = \"x\"\n".write(toFile: config, atomically: true, encoding: .utf8)
        let misspelt = try runCommand(Corpus.binary("taxifleet"), ["status", "--config", config, "--fleet", "north"])
        #expect(misspelt.exitCode == 64 && misspelt.output.contains("unknown key broker.hots"), "\(misspelt.output)")
        unit.stop()
    }
}
