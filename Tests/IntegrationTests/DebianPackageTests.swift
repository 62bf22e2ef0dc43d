import Foundation
import TestHarness
import Testing

/// `make deb-package` (what `make deb` runs after the release build) from the binaries this test run
/// was built with, installed by the real dpkg into a scratch root, its maintainer scripts run there
/// (`--force-script-chrootless`, which hands them DPKG_ROOT).
@Suite(.serialized) struct DebianPackageTests {
    /// The package, built once for the suite, with fast gzip (compressing takes most of the time otherwise).
    static let built = Result { () throws -> (deb: String, scratch: ScratchDirectory) in
        let scratch = try ScratchDirectory()
        let out = scratch.file("deb")
        let build = try runCommand(
            "/usr/bin/make",
            ["-s", "-C", Corpus.packageRoot, "deb-package", "BUILT=\(Corpus.binaryDirectory)", "DEB_OUT=\(out)", "DEB_COMPRESS=gzip", "DEB_COMPRESS_LEVEL=1"])
        guard build.exitCode == 0 else { throw HarnessError("make deb-package failed: \(build.output)") }
        let debs = try FileManager.default.contentsOfDirectory(atPath: out).filter { $0.hasSuffix(".deb") }
        guard debs.count == 1 else { throw HarnessError("expected one package in \(out), found \(debs)") }
        return (out + "/" + debs[0], scratch)
    }

    func package() throws -> String { try Self.built.get().deb }

    func dpkg(_ arguments: [String]) throws -> (output: String, exitCode: Int32) {
        try runCommand("/usr/bin/dpkg", arguments)
    }

    /// An empty root with a dpkg database; dependencies are not installed in it, so they are forced.
    func emptyRoot(_ scratch: ScratchDirectory) throws -> String {
        let root = scratch.file("root")
        for directory in ["var/lib/dpkg/info", "var/lib/dpkg/updates", "etc"] {
            try FileManager.default.createDirectory(atPath: root + "/" + directory, withIntermediateDirectories: true)
        }
        FileManager.default.createFile(atPath: root + "/var/lib/dpkg/status", contents: Data())
        return root
    }

    /// Depends: what dpkg-shlibdeps finds the binaries load (the C++ runtime included), and gpsd,
    /// which it cannot see; nothing the build or the tests use.
    @Test func dependsOnTheRuntimeLibrariesOnly() throws {
        let deb = try package()
        let depends = try runCommand("/usr/bin/dpkg-deb", ["-f", deb, "Depends"]).output
            .split(separator: ",").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        let names = depends.map { String($0.prefix { $0 != " " }) }
        #expect(names.first == "gpsd", "\(depends)")
        #expect(Set(names) == ["gpsd", "libc6", "libgcc-s1", "libgps28", "libmosquitto1", "libsqlite3-0", "libstdc++6", "libsystemd0"], "\(depends)")
        #expect(depends.contains { $0.hasPrefix("libc6 (>= 2.") }, "versioned by the symbols used: \(depends)")
        // What the tests and the build use is never on a taxi.
        let makefile = try String(contentsOfFile: Corpus.packageRoot + "/Makefile", encoding: .utf8)
        let testSet = try #require(makefile.firstMatch(of: /\nAPT_TEST := ([^\n]+)\n/)).1.split(separator: " ").map(String.init)
        let buildSet = try #require(makefile.firstMatch(of: /\nAPT_BUILD := ([^\n]+)\n/)).1.split(separator: " ").map(String.init)
        #expect(testSet.contains("mosquitto") && testSet.contains("socat") && buildSet.contains("libgps-dev"))
        for package in testSet + buildSet {
            #expect(!names.contains(package), "\(package) is a dependency")
        }
        #expect(try runCommand("/usr/bin/dpkg-deb", ["-f", deb, "Architecture"]).output.trimmingCharacters(in: .whitespacesAndNewlines)
            == (try runCommand("/usr/bin/dpkg", ["--print-architecture"]).output.trimmingCharacters(in: .whitespacesAndNewlines)))
        // The maintainer is the Makefile's DEB_MAINTAINER.
        let maintainer = try #require(makefile.firstMatch(of: /\nDEB_MAINTAINER \?= ([^\n]+)\n/)).1
        #expect(try runCommand("/usr/bin/dpkg-deb", ["-f", deb, "Maintainer"]).output == maintainer + "\n")
    }

    /// `lintian --pedantic`, with informational tags: nothing but what packaging/taxiunitd.lintian-overrides
    /// explains. The one exception is the test build's own: it loads the Swift runtime from the
    /// toolchain (a RUNPATH to it), where `make deb`'s release build links it in statically.
    @Test func lintianFindsNothingToSay() throws {
        try Self.expectLintianClean(try package())
    }

    /// The lintian tags of `deb` but the test build's RUNPATH to the toolchain's Swift runtime.
    static func expectLintianClean(_ deb: String) throws {
        let result = try runCommand("/usr/bin/lintian", ["--pedantic", "--display-info", "--tag-display-limit", "0", deb])
        let tags = result.output.split(separator: "\n").map(String.init).filter { $0.wholeMatch(of: /[EWIPX]: .*/) != nil }
        let unexplained = tags.filter { tag in
            guard let runpath = tag.firstMatch(of: /^E: [a-z]+: custom-library-search-path RUNPATH (\S+) \[usr\/bin\/[a-z]+\]$/) else {
                return true
            }
            return !FileManager.default.fileExists(atPath: runpath.1 + "/libswiftCore.so")
        }
        #expect(unexplained.isEmpty, "\(result.output)")
        #expect(result.output.contains("custom-library-search-path") || !tags.contains { $0.hasPrefix("E:") })
    }

    /// The fleet manager's console is a package of its own, for the office: the program, its man page,
    /// completions and docs/fleet.md; no daemon, no gpsd, nothing of the taxi's; lintian-clean too.
    @Test func theConsoleHasAPackageOfItsOwn() throws {
        let scratch = try ScratchDirectory()
        let out = scratch.file("deb")
        let build = try runCommand(
            "/usr/bin/make",
            ["-s", "-C", Corpus.packageRoot, "deb-taxifleet-package", "BUILT=\(Corpus.binaryDirectory)", "DEB_OUT=\(out)", "DEB_COMPRESS=gzip", "DEB_COMPRESS_LEVEL=1"])
        #expect(build.exitCode == 0, "\(build.output)")
        let deb = out + "/" + (try #require(try FileManager.default.contentsOfDirectory(atPath: out).first { $0.hasPrefix("taxifleet_") && $0.hasSuffix(".deb") }))
        let files = try runCommand("/usr/bin/dpkg-deb", ["-c", deb]).output
        for path in ["./usr/bin/taxifleet", "./usr/share/man/man8/taxifleet.8.gz", "./usr/share/bash-completion/completions/taxifleet",
                     "./usr/share/zsh/vendor-completions/_taxifleet", "./usr/share/doc/taxifleet/fleet.md", "./usr/share/doc/taxifleet/copyright",
                     "./usr/share/doc/taxifleet/changelog.gz"] {
            #expect(files.contains(path + "\n"), "\(path) in \(files)")
        }
        #expect(!files.contains("taxiunitd"), "nothing of the taxi's: \(files)")
        let depends = try runCommand("/usr/bin/dpkg-deb", ["-f", deb, "Depends"]).output
        #expect(depends.contains("libmosquitto1") && !depends.contains("gpsd") && !depends.hasPrefix(","), "\(depends)")
        try Self.expectLintianClean(deb)
    }

    /// `make deb DEB_ARCH=arm64` on this machine: an aarch64 executable, stripped by the toolchain's
    /// llvm-objcopy (the host's strip cannot read it), in an arm64 package.
    @Test func anArm64PackageIsStrippedByTheToolchain() throws {
        let scratch = try ScratchDirectory()
        let toolchain = try runCommand("/bin/sh", ["-c", "dirname \"$(readlink -f \"$(command -v swift)\")\""]).output
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let bin = scratch.file("bin")
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
        try "void _start(void) { for (;;) {} }\n".write(toFile: scratch.file("start.c"), atomically: true, encoding: .utf8)
        for program in ["taxiunitd", "taxiunitctl"] {
            let linked = try runCommand(
                toolchain + "/clang",
                ["--target=aarch64-linux-gnu", "-nostdlib", "-static", "-fuse-ld=lld", "-o", bin + "/" + program, scratch.file("start.c")])
            #expect(linked.exitCode == 0, "\(linked.output)")
        }
        let symbols = try runCommand("/usr/bin/readelf", ["-S", bin + "/taxiunitd"]).output
        #expect(symbols.contains(".symtab"), "the input has symbols to strip: \(symbols)")
        #expect(try runCommand("/usr/bin/strip", ["-o", scratch.file("host-strip"), bin + "/taxiunitd"]).exitCode != 0)

        let out = scratch.file("deb")
        let build = try runCommand(
            "/usr/bin/make",
            ["-s", "-C", Corpus.packageRoot, "deb-package", "BUILT=\(bin)", "DEB_OUT=\(out)", "DEB_COMPRESS=gzip", "DEB_COMPRESS_LEVEL=1", "DEB_ARCH=arm64"])
        #expect(build.exitCode == 0, "\(build.output)")
        let deb = out + "/taxiunitd_\(try runCommand(Corpus.binary("taxiunitd"), ["--version"]).output.trimmingCharacters(in: .whitespacesAndNewlines))_arm64.deb"
        #expect(try runCommand("/usr/bin/dpkg-deb", ["-f", deb, "Architecture"]).output == "arm64\n")
        let unpacked = scratch.file("unpacked")
        #expect(try runCommand("/usr/bin/dpkg-deb", ["-x", deb, unpacked]).exitCode == 0)
        let header = try runCommand("/usr/bin/readelf", ["-h", "-S", unpacked + "/usr/bin/taxiunitd"]).output
        #expect(header.contains("AArch64") && !header.contains(".symtab") && !header.contains(".comment"), "\(header)")
    }

    /// `make repo` and apt as a board runs it: the repository signed by a fleet key, served over HTTP,
    /// added with signed-by=; version N installed, N+1 added, `apt-get upgrade` takes it and keeps the
    /// edited configuration and the store. A key that did not sign it is refused. apt and dpkg work on
    /// a scratch root whose package database says the runtime libraries are there (as on a board).
    @Test func anAptRepositoryUpgradesAnInstalledUnit() async throws {
        let scratch = try ScratchDirectory()
        let gnupg = scratch.file("gnupg")
        try FileManager.default.createDirectory(atPath: gnupg, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let gpgEnvironment = ["GNUPGHOME": gnupg]
        let otherGnupg = scratch.file("gnupg-other")
        try FileManager.default.createDirectory(atPath: otherGnupg, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        // gpg starts an agent per home: stopped with the test.
        defer {
            for home in [gnupg, otherGnupg] { _ = try? runCommand("/usr/bin/gpgconf", ["--kill", "all"], environment: ["GNUPGHOME": home]) }
        }
        let made = try runCommand(
            "/usr/bin/gpg", ["--batch", "--passphrase", "", "--quick-generate-key", "taxiunitd fleet <fleet@example.org>", "ed25519", "sign", "never"],
            environment: gpgEnvironment)
        #expect(made.exitCode == 0, "\(made.output)")
        let keys = try runCommand("/usr/bin/gpg", ["--batch", "--with-colons", "--list-secret-keys"], environment: gpgEnvironment).output
        let fingerprint = try #require(keys.firstMatch(of: /\nfpr:+([0-9A-F]{40}):/)).1

        // N is the suite's package; N+1 the same programs with the next version.
        let first = try package()
        let version = try runCommand("/usr/bin/dpkg-deb", ["-f", first, "Version"]).output.trimmingCharacters(in: .whitespacesAndNewlines)
        let next = version + "+1"
        let nextOut = scratch.file("next")
        let builtNext = try runCommand(
            "/usr/bin/make",
            ["-s", "-C", Corpus.packageRoot, "deb-package", "BUILT=\(Corpus.binaryDirectory)", "DEB_OUT=\(nextOut)", "DEB_COMPRESS=gzip", "DEB_COMPRESS_LEVEL=1", "DEB_VERSION=\(next)"])
        #expect(builtNext.exitCode == 0, "\(builtNext.output)")

        let repo = scratch.file("repo")
        func addToRepository(_ deb: String) throws {
            let added = try runCommand(
                "/usr/bin/make", ["-s", "-C", Corpus.packageRoot, "repo", "REPO_DIR=\(repo)", "REPO_KEY=\(fingerprint)", "REPO_DEBS=\(deb)"],
                environment: gpgEnvironment)
            #expect(added.exitCode == 0, "\(added.output)")
        }
        try addToRepository(first)
        #expect(FileManager.default.fileExists(atPath: repo + "/dists/bookworm/InRelease"))
        let port = try Loopback.freePort()
        let server = try ChildProcess(
            "/usr/bin/python3", ["-m", "http.server", String(port), "--bind", "127.0.0.1", "--directory", repo], logPath: scratch.file("http.log"))
        defer { _ = server.stop() }
        try await waitUntil("the HTTP server", timeoutS: 15, detail: { server.log }) {
            (try? runCommand("/usr/bin/python3", ["-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:\(port)/dists/bookworm/InRelease')"]).exitCode) == 0
        }

        // The board: this machine's package database (the libraries are installed), nothing else.
        let root = try emptyRoot(scratch)
        try FileManager.default.removeItem(atPath: root + "/var/lib/dpkg/status")
        try FileManager.default.copyItem(atPath: "/var/lib/dpkg/status", toPath: root + "/var/lib/dpkg/status")
        let installed = try runCommand("/usr/bin/dpkg-query", ["-W", "-f", "${binary:Package}\n"]).output.split(separator: "\n")
        for name in installed { FileManager.default.createFile(atPath: root + "/var/lib/dpkg/info/\(name).list", contents: Data()) }
        for directory in ["etc/apt/sources.list.d", "etc/apt/preferences.d", "etc/apt/trusted.gpg.d", "var/lib/apt/lists/partial", "var/cache/apt/archives/partial"] {
            try FileManager.default.createDirectory(atPath: root + "/" + directory, withIntermediateDirectories: true)
        }
        let keyring = root + "/etc/apt/keyrings/taxiunitd.gpg"
        try FileManager.default.createDirectory(atPath: root + "/etc/apt/keyrings", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: repo + "/taxiunitd-archive-keyring.gpg", toPath: keyring)
        let sources = root + "/etc/apt/sources.list"
        try "deb [signed-by=\(keyring)] http://127.0.0.1:\(port)/ bookworm main\n".write(toFile: sources, atomically: true, encoding: .utf8)
        let aptConfig = scratch.file("apt.conf")
        try """
            Dir::State "\(root)/var/lib/apt";
            Dir::State::status "\(root)/var/lib/dpkg/status";
            Dir::Cache "\(root)/var/cache/apt";
            Dir::Etc::SourceList "\(sources)";
            Dir::Etc::SourceParts "\(root)/etc/apt/sources.list.d";
            Dir::Etc::Preferences "\(root)/etc/apt/preferences";
            Dir::Etc::PreferencesParts "\(root)/etc/apt/preferences.d";
            Dir::Etc::TrustedParts "\(root)/etc/apt/trusted.gpg.d";
            Dir::Log "\(scratch.path)";
            Debug::NoLocking "true";
            APT::Sandbox::User "root";
            DPkg::Options { "--root=\(root)"; "--force-script-chrootless"; "--force-confold"; };
            DPkg::Path "/usr/sbin:/usr/bin:/sbin:/bin";

            """.write(toFile: aptConfig, atomically: true, encoding: .utf8)
        func apt(_ arguments: [String]) throws -> (output: String, exitCode: Int32) {
            try runCommand("/usr/bin/apt-get", ["-q", "-y"] + arguments, environment: ["APT_CONFIG": aptConfig, "DEBIAN_FRONTEND": "noninteractive"])
        }
        func installedVersion() throws -> String {
            try runCommand("/usr/bin/dpkg-query", ["--admindir=\(root)/var/lib/dpkg", "-W", "-f", "${Version}", "taxiunitd"]).output
        }

        var result = try apt(["update"])
        #expect(result.exitCode == 0, "\(result.output)")
        result = try apt(["install", "taxiunitd"])
        #expect(result.exitCode == 0, "\(result.output)")
        #expect(try installedVersion() == version)

        // What the board keeps: its configuration and its store.
        let config = root + "/etc/taxiunitd/taxiunitd.toml"
        try (String(contentsOfFile: config, encoding: .utf8) + "\n# this board's\n").write(toFile: config, atomically: true, encoding: .utf8)
        try FileManager.default.createDirectory(atPath: root + "/etc/taxiunitd/conf.d", withIntermediateDirectories: true)
        try "[unit]\nid = \"T042\"\n".write(toFile: root + "/etc/taxiunitd/conf.d/50-unit.toml", atomically: true, encoding: .utf8)
        try FileManager.default.createDirectory(atPath: root + "/var/lib/taxiunitd", withIntermediateDirectories: true)
        let store = root + "/var/lib/taxiunitd/unit.sqlite"
        try Data("messages not yet delivered".utf8).write(to: URL(fileURLWithPath: store))

        try addToRepository(nextOut + "/taxiunitd_\(next)_\(try runCommand("/usr/bin/dpkg", ["--print-architecture"]).output.trimmingCharacters(in: .whitespacesAndNewlines)).deb")
        result = try apt(["update"])
        #expect(result.exitCode == 0, "\(result.output)")
        result = try apt(["upgrade"])
        #expect(result.exitCode == 0, "\(result.output)")
        #expect(try installedVersion() == next, "\(result.output)")
        #expect(try String(contentsOfFile: config, encoding: .utf8).hasSuffix("\n# this board's\n"))
        #expect(FileManager.default.fileExists(atPath: root + "/etc/taxiunitd/conf.d/50-unit.toml"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: store)) == Data("messages not yet delivered".utf8))

        // Signed by another key: apt refuses the repository.
        let other = try runCommand(
            "/usr/bin/gpg", ["--batch", "--passphrase", "", "--quick-generate-key", "someone else <else@example.org>", "ed25519", "sign", "never"],
            environment: ["GNUPGHOME": otherGnupg])
        #expect(other.exitCode == 0, "\(other.output)")
        _ = try runCommand("/bin/sh", ["-c", "gpg --batch --export > \"$0\"", keyring], environment: ["GNUPGHOME": otherGnupg])
        result = try apt(["update"])
        #expect(result.output.contains("NO_PUBKEY") || result.output.contains("not signed"), "\(result.output)")
    }

    /// docs/boards.md's buttons: contrib/taxi-buttons.dts compiles (dtc, as the board's firmware
    /// loads it) to one gpio-keys device holding every button, since `[input.buttons] device` is one.
    @Test func theButtonOverlayIsOneGpioKeysDevice() throws {
        let scratch = try ScratchDirectory()
        let overlay = scratch.file("taxi-buttons.dtbo")
        let compiled = try runCommand("/usr/bin/dtc", ["-@", "-I", "dts", "-O", "dtb", "-o", overlay, Corpus.packageRoot + "/contrib/taxi-buttons.dts"])
        #expect(compiled.exitCode == 0 && compiled.output.isEmpty, "\(compiled.output)")
        let devices = try runCommand("/bin/sh", ["-c", "fdtget -l \"$0\" /fragment@1/__overlay__", overlay]).output
        #expect(devices == "taxi-buttons\n", "one device: \(devices)")
        let node = "/fragment@1/__overlay__/taxi-buttons"
        #expect(try runCommand("/usr/bin/fdtget", ["-t", "s", overlay, node, "compatible"]).output == "gpio-keys\n")
        let keys = try runCommand("/usr/bin/fdtget", ["-l", overlay, node]).output.split(separator: "\n").map(String.init)
        #expect(keys == ["accept", "reject", "sos"], "\(keys)")
        let codes = try keys.map { try runCommand("/usr/bin/fdtget", [overlay, node + "/" + $0, "linux,code"]).output }
        #expect(codes == ["59\n", "60\n", "68\n"], "KEY_F1, KEY_F2, KEY_F10 as etc/taxiunitd.toml maps them: \(codes)")
    }

    /// One version: the package's is what the programs print and the status carries.
    @Test func thePackageVersionIsTheProgramsVersion() throws {
        let version = try runCommand("/usr/bin/dpkg-deb", ["-f", try package(), "Version"]).output.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(!version.isEmpty)
        #expect(try runCommand(Corpus.binary("taxiunitd"), ["--version"]).output.trimmingCharacters(in: .whitespacesAndNewlines) == version)
    }

    @Test func installsRunsItsScriptsAndRemovesTheDebianWay() throws {
        let scratch = try ScratchDirectory()
        let deb = try package()
        let root = try emptyRoot(scratch)
        let options = ["--root=\(root)", "--force-depends", "--force-script-chrootless", "--force-not-root"]
        let install = try dpkg(options + ["-i", deb])
        #expect(install.exitCode == 0, "\(install.output)")

        let files = try dpkg(["--root=\(root)", "-L", "taxiunitd"]).output.split(separator: "\n").map(String.init)
        for path in [
            "/usr/bin/taxiunitd", "/usr/bin/taxiunitctl", "/usr/lib/systemd/system/taxiunitd.service", "/usr/lib/sysusers.d/taxiunitd.conf",
            "/etc/taxiunitd/taxiunitd.toml", "/usr/share/taxiunitd/lang/en.toml", "/usr/share/taxiunitd/lang/it.toml",
            "/usr/share/taxiunitd/lang/zu.toml", "/usr/share/doc/taxiunitd/README.md", "/usr/share/doc/taxiunitd/protocol.md",
            "/usr/share/doc/taxiunitd/boards.md", "/usr/share/doc/taxiunitd/mosquitto-acl.example",
            "/usr/share/man/man8/taxiunitd.8.gz", "/usr/share/man/man8/taxiunitctl.8.gz", "/usr/share/man/man5/taxiunitd.toml.5.gz",
            "/usr/share/bash-completion/completions/taxiunitctl", "/usr/share/zsh/vendor-completions/_taxiunitctl",
            "/usr/share/bash-completion/completions/taxiunitd", "/usr/share/zsh/vendor-completions/_taxiunitd",
            "/usr/share/doc/taxiunitd/copyright", "/usr/share/doc/taxiunitd/changelog.gz", "/etc/taxiunitd/conf.d",
        ] {
            #expect(files.contains(path), "\(path) not in the package")
        }
        #expect(!files.contains { $0.contains("/local/") || $0.hasPrefix("/tmp") }, "\(files)")
        let conffiles = try String(contentsOfFile: root + "/var/lib/dpkg/info/taxiunitd.conffiles", encoding: .utf8)
        #expect(conffiles == "/etc/taxiunitd/taxiunitd.toml\n")

        // postinst: the user from sysusers, the service enabled, both inside the root.
        let passwd = try String(contentsOfFile: root + "/etc/passwd", encoding: .utf8)
        #expect(passwd.contains("taxiunitd:x:") && passwd.contains(":/var/lib/taxiunitd:"), "\(passwd)")
        let wanted = root + "/etc/systemd/system/multi-user.target.wants/taxiunitd.service"
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: wanted) == "/usr/lib/systemd/system/taxiunitd.service")

        // Every file as packaged (md5sums).
        let packaged = try dpkg(["--root=\(root)", "--verify", "taxiunitd"])
        #expect(packaged.exitCode == 0 && packaged.output.isEmpty, "\(packaged.output)")

        // The man pages are the programs' own help; the daemon's synopsis names no subcommand (it has
        // none), and each page points to the others.
        let page = try runCommand("/bin/sh", ["-c", "zcat '\(root)/usr/share/man/man8/taxiunitd.8.gz'"]).output
        #expect(page.contains(".Dt TAXIUNITD 8") && page.contains("--check"), "\(page.prefix(300))")
        #expect(!page.contains("subcommand") && page.contains(".Sh SEE ALSO\n.Xr taxiunitctl 8 ,\n.Xr taxiunitd.toml 5"), "\(page)")
        let control = try runCommand("/bin/sh", ["-c", "zcat '\(root)/usr/share/man/man8/taxiunitctl.8.gz'"]).output
        #expect(control.contains(".Ar subcommand") && control.contains(".Xr taxiunitd 8"), "\(control)")
        // The completions are the programs' own.
        let completion = try String(contentsOfFile: root + "/usr/share/bash-completion/completions/taxiunitctl", encoding: .utf8)
        #expect(completion.contains("complete -o filenames -F _taxiunitctl taxiunitctl") && !completion.hasPrefix("#!"), "\(completion.prefix(200))")

        // The unit as installed: systemd's own units from this machine so that verify finds
        // sysinit.target; ExecStart= is resolved inside the root.
        let units = root + "/usr/lib/systemd/system"
        for unit in try FileManager.default.contentsOfDirectory(atPath: "/lib/systemd/system")
        where unit.hasSuffix(".target") || unit.hasSuffix(".slice") || unit.hasSuffix(".socket") {
            try? FileManager.default.copyItem(atPath: "/lib/systemd/system/" + unit, toPath: units + "/" + unit)
        }
        let verify = try runCommand("/usr/bin/systemd-analyze", ["--root=\(root)", "verify", "--man=no", "/usr/lib/systemd/system/taxiunitd.service"])
        #expect(verify.exitCode == 0 && verify.output.isEmpty, "\(verify.output)")

        // The installed daemon refuses the shipped file until a drop-in names the unit.
        let daemon = root + "/usr/bin/taxiunitd"
        let unset = try runCommand(daemon, ["--config", root + "/etc/taxiunitd/taxiunitd.toml", "--check"])
        #expect(unset.exitCode == 1 && unset.output.contains("unit.id is missing"), "\(unset.output)")
        try FileManager.default.createDirectory(atPath: root + "/etc/taxiunitd/conf.d", withIntermediateDirectories: true)
        try "[unit]\nid = \"T042\"\n".write(toFile: root + "/etc/taxiunitd/conf.d/50-unit.toml", atomically: true, encoding: .utf8)
        let withDropIn = try runCommand(daemon, ["--config", root + "/etc/taxiunitd/taxiunitd.toml", "--check"])
        #expect(withDropIn.exitCode == 0, "\(withDropIn.output)")

        // An edited configuration survives an upgrade (dpkg keeps a changed conffile).
        let config = root + "/etc/taxiunitd/taxiunitd.toml"
        try (String(contentsOfFile: config, encoding: .utf8) + "\n# edited on the board\n").write(toFile: config, atomically: true, encoding: .utf8)
        let upgrade = try dpkg(options + ["--force-confold", "-i", deb])
        #expect(upgrade.exitCode == 0, "\(upgrade.output)")
        #expect(try String(contentsOfFile: config, encoding: .utf8).contains("# edited on the board"))

        // remove: the service disabled, the configuration kept; purge: the configuration gone.
        let remove = try dpkg(options + ["-r", "taxiunitd"])
        #expect(remove.exitCode == 0, "\(remove.output)")
        #expect(!FileManager.default.fileExists(atPath: wanted))
        #expect(!FileManager.default.fileExists(atPath: root + "/usr/bin/taxiunitd"))
        #expect(FileManager.default.fileExists(atPath: config))
        let purge = try dpkg(options + ["-P", "taxiunitd"])
        #expect(purge.exitCode == 0, "\(purge.output)")
        #expect(!FileManager.default.fileExists(atPath: config))
    }
}
