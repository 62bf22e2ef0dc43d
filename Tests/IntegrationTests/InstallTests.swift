import Foundation
import TestHarness
import Testing

/// `make install-files` (what `make install` runs after the release build) into scratch trees, with
/// the binaries this test run was built with.
@Suite(.serialized) struct InstallTests {
    func install(_ variables: [String]) throws {
        let result = try runCommand(
            "/usr/bin/make", ["-s", "-C", Corpus.packageRoot, "install-files", "BUILT=\(Corpus.binaryDirectory)"] + variables)
        guard result.exitCode == 0 else { throw HarnessError("make install-files failed: \(result.output)") }
    }

    func mode(_ path: String) throws -> Int {
        try (FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as! NSNumber).intValue
    }

    @Test func installsTheTreeIntoDestdirAndKeepsAnEditedConfig() throws {
        let scratch = try ScratchDirectory()
        let root = scratch.file("root")
        try install(["DESTDIR=\(root)", "PREFIX=/usr"])

        for binary in ["/usr/bin/taxiunitd", "/usr/bin/taxiunitctl"] {
            #expect(FileManager.default.isExecutableFile(atPath: root + binary), "\(binary)")
        }
        let unit = try String(contentsOfFile: root + "/usr/lib/systemd/system/taxiunitd.service", encoding: .utf8)
        #expect(unit.contains("ExecStart=/usr/bin/taxiunitd --config /etc/taxiunitd/taxiunitd.toml\n"))
        #expect(unit.contains("Documentation=file:/usr/share/doc/taxiunitd/README.md\n"))
        #expect(!unit.contains("/usr/local/"))
        #expect(try String(contentsOfFile: root + "/usr/lib/sysusers.d/taxiunitd.conf", encoding: .utf8).contains("u taxiunitd "))
        for doc in ["README.md", "protocol.md", "mosquitto-acl.example"] {
            #expect(FileManager.default.fileExists(atPath: root + "/usr/share/doc/taxiunitd/" + doc), "\(doc)")
        }
        let config = root + "/etc/taxiunitd/taxiunitd.toml"
        #expect(try mode(config) == 0o644)
        #expect(try String(contentsOfFile: config, encoding: .utf8).contains("catalogues = \"/usr/share/taxiunitd/lang\"\n"))
        let shipped = try FileManager.default.contentsOfDirectory(atPath: Corpus.packageRoot + "/share/taxiunitd/lang").filter { $0.hasSuffix(".toml") }
        #expect(Set(["en.toml", "it.toml", "zu.toml"]).isSubset(of: Set(shipped)))
        for file in shipped {
            let installed = root + "/usr/share/taxiunitd/lang/" + file
            #expect(FileManager.default.contents(atPath: installed) == FileManager.default.contents(atPath: Corpus.packageRoot + "/share/taxiunitd/lang/" + file), "\(file)")
            #expect(try mode(installed) == 0o644, "\(file)")
        }
        // No unit id until the installer gives one, in a drop-in.
        let unset = try runCommand(root + "/usr/bin/taxiunitd", ["--config", config, "--check"])
        #expect(unset.exitCode == 1 && unset.output.contains("unit.id is missing"), "\(unset.output)")
        try FileManager.default.createDirectory(atPath: root + "/etc/taxiunitd/conf.d", withIntermediateDirectories: true)
        try "[unit]\nid = \"T777\"\n".write(toFile: root + "/etc/taxiunitd/conf.d/50-unit.toml", atomically: true, encoding: .utf8)
        let check = try runCommand(root + "/usr/bin/taxiunitd", ["--config", config, "--check"])
        #expect(check.exitCode == 0, "\(check.output)")

        // An operator's edits survive a reinstall.
        let edited = try String(contentsOfFile: config, encoding: .utf8) + "\n# edited by the operator\n"
        try edited.write(toFile: config, atomically: true, encoding: .utf8)
        try install(["DESTDIR=\(root)", "PREFIX=/usr"])
        #expect(try String(contentsOfFile: config, encoding: .utf8).contains("# edited by the operator"))
    }

    /// systemd-analyze verify checks that ExecStart= exists, so the tree is installed where the unit
    /// says it is (PREFIX inside the scratch directory) and its unit directory put first in the path.
    @Test func installedUnitPassesSystemdAnalyzeVerify() throws {
        let scratch = try ScratchDirectory()
        let prefix = scratch.file("usr")
        try install(["PREFIX=\(prefix)", "SYSCONFDIR=\(scratch.file("etc"))"])
        let unitDirectory = prefix + "/lib/systemd/system"
        let unit = try String(contentsOfFile: unitDirectory + "/taxiunitd.service", encoding: .utf8)
        #expect(unit.contains("ExecStart=\(prefix)/bin/taxiunitd --config \(scratch.path)/etc/taxiunitd/taxiunitd.toml\n"))

        // A trailing colon keeps systemd's own directories (sysinit.target ...) in the path.
        let verify = try runCommand(
            "/usr/bin/systemd-analyze", ["verify", "--man=no", unitDirectory + "/taxiunitd.service"],
            environment: ["SYSTEMD_UNIT_PATH": unitDirectory + ":"])
        #expect(verify.exitCode == 0, "\(verify.output)")
        // verify only warns about a bad setting; any output is a defect.
        #expect(verify.output.isEmpty, "\(verify.output)")

        let security = try runCommand("/usr/bin/systemd-analyze", ["security", "--offline=yes", "--no-pager", unitDirectory + "/taxiunitd.service"])
        let exposure = try #require(security.output.firstMatch(of: /Overall exposure level for taxiunitd\.service: (\d+\.\d+)/))
        #expect(try #require(Double(exposure.1)) <= 2.0, "\(security.output)")
    }

    /// Installed under a PREFIX of its own, the daemon of a new config finds its terminal's catalogue
    /// in every shipped language, and `--check` would say so if it could not.
    @Test func theInstalledDaemonFindsItsCatalogues() throws {
        let scratch = try ScratchDirectory()
        let prefix = scratch.file("opt")
        try install(["PREFIX=\(prefix)", "SYSCONFDIR=\(scratch.file("etc"))"])
        let config = scratch.file("etc") + "/taxiunitd/taxiunitd.toml"
        let installed = try String(contentsOfFile: config, encoding: .utf8)
        #expect(installed.contains("catalogues = \"\(prefix)/share/taxiunitd/lang\"\n"))
        let daemon = prefix + "/bin/taxiunitd"
        // Each checked file below gets the unit id from a drop-in beside it.
        try FileManager.default.createDirectory(atPath: scratch.file("conf.d"), withIntermediateDirectories: true)
        try "[unit]\nid = \"T1\"\n".write(toFile: scratch.file("conf.d/unit.toml"), atomically: true, encoding: .utf8)
        // A terminal makes the language matter: --check loads its catalogue.
        let withTerminal = installed + "\n[input.serial]\ndevice = \"/dev/ttyUSB0\"\n"
        for language in ["en", "it", "zu"] {
            let file = scratch.file("\(language).toml")
            try withTerminal.replacingOccurrences(of: "language = \"en\"", with: "language = \"\(language)\"")
                .write(toFile: file, atomically: true, encoding: .utf8)
            let check = try runCommand(daemon, ["--config", file, "--check"])
            #expect(check.exitCode == 0, "\(language): \(check.output)")
            #expect(!check.output.contains("warning"), "\(language): \(check.output)")
        }
        try FileManager.default.removeItem(atPath: prefix + "/share/taxiunitd/lang/it.toml")
        let missing = try runCommand(daemon, ["--config", scratch.file("it.toml"), "--check"])
        #expect(missing.exitCode == 1, "without the file the check fails: \(missing.output)")
        #expect(missing.output.contains(prefix + "/share/taxiunitd/lang/it.toml"))
    }

    @Test func helpTextsAreManStyle() throws {
        let daemon = try runCommand(Corpus.binary("taxiunitd"), ["--help"])
        for section in ["SYSTEMD", "LOGGING", "FILES", "SIGNALS", "EXIT STATUS", "USAGE: taxiunitd"] {
            #expect(daemon.output.contains(section), "\(section)")
        }
        let control = try runCommand(Corpus.binary("taxiunitctl"), ["--help"])
        for section in ["SUBCOMMANDS", "status", "health", "config", "jobs", "outbox", "press", "log-level", "EXIT STATUS"] {
            #expect(control.output.contains(section), "\(section)")
        }
    }
}
