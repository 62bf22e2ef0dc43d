import Foundation
import TestHarness
import Testing

/// A store that cannot be opened puts the unit on a volatile one: in a fresh directory only the
/// daemon can enter, in systemd's runtime directory, never at a path another local user could
/// predict and prepare.
@Suite(.serialized) struct FallbackStoreTests {
    /// A store under a regular file cannot be opened, by root either.
    static func unopenableStore(of unit: UnitUnderTest, in scratch: ScratchDirectory) throws {
        let blocker = scratch.file("not-a-directory")
        try "".write(toFile: blocker, atomically: true, encoding: .utf8)
        try OutboxTests.moveStore(of: unit, to: blocker)
    }

    /// The volatile store's path, as the daemon last logged it.
    static func volatileStore(in log: String) -> String? {
        log.matches(of: /volatile=(\S+)/).last.map { String($0.1) }
    }

    static func expectPrivateDirectory(_ directory: String, in parent: String) throws {
        #expect((directory as NSString).deletingLastPathComponent == parent)
        #expect((directory as NSString).lastPathComponent.hasPrefix("taxiunitd-volatile-"))
        var info = stat()
        try #require(stat(directory, &info) == 0)
        #expect(info.st_mode & S_IFMT == S_IFDIR)
        #expect(info.st_mode & 0o777 == 0o700)
        #expect(info.st_uid == getuid())
    }

    @Test func theFallbackStoreIsAFreshPrivateDirectoryInTheRuntimeDirectory() async throws {
        let scratch = try ScratchDirectory()
        let broker = try MosquittoBroker(in: scratch)
        let unit = try UnitUnderTest(unitID: "FB\(getpid())", mqttPort: broker.port, gpsdPort: try Loopback.freePort(), in: scratch)
        try Self.unopenableStore(of: unit, in: scratch)
        let runtime = scratch.file("runtime")
        try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: false)
        // What another local user could have planted at the predictable path earlier releases used.
        let predictable = NSTemporaryDirectory() + "taxiunitd-\(unit.fleet)-\(unit.unitID)-volatile.sqlite"
        let planted = scratch.file("planted.sqlite")
        try? FileManager.default.removeItem(atPath: predictable)
        try FileManager.default.createSymbolicLink(atPath: predictable, withDestinationPath: planted)
        defer { try? FileManager.default.removeItem(atPath: predictable) }

        let recorder = try await MQTTRecorder(port: broker.port, subscribe: [unit.topicBase + "event"])
        try await unit.start(environment: ["RUNTIME_DIRECTORY": runtime])
        try await unit.waitForStatus("connected") { $0.broker.connected }
        #expect(unit.log.contains("STORE NOT WRITABLE"))
        let volatile = try #require(Self.volatileStore(in: unit.log), "\(unit.log)")
        try Self.expectPrivateDirectory((volatile as NSString).deletingLastPathComponent, in: runtime)
        #expect(FileManager.default.fileExists(atPath: volatile))
        #expect(!FileManager.default.fileExists(atPath: planted), "the planted link was not followed")

        // The unit works on it.
        #expect(try unit.request(.init(cmd: .press, input: "duty")).ok)
        let events = try await recorder.waitFor("a duty event from the volatile store") { !$0.isEmpty }
        #expect(events.first?.json?["to"] as? String == "available")
        unit.stop()
    }

    /// Outside systemd (no RUNTIME_DIRECTORY) it is a fresh private directory in the temporary one,
    /// a new one at each start.
    @Test func withoutARuntimeDirectoryItIsAFreshTemporaryOne() async throws {
        let scratch = try ScratchDirectory()
        let broker = try MosquittoBroker(in: scratch)
        let unit = try UnitUnderTest(unitID: "FT\(getpid())", mqttPort: broker.port, gpsdPort: try Loopback.freePort(), in: scratch)
        try Self.unopenableStore(of: unit, in: scratch)
        let temporary = scratch.file("tmp")
        try FileManager.default.createDirectory(atPath: temporary, withIntermediateDirectories: false)

        var stores: [String] = []
        for _ in 0..<2 {
            try await unit.start(environment: ["TMPDIR": temporary])
            try await unit.waitForStatus("connected") { $0.broker.connected }
            let volatile = try #require(Self.volatileStore(in: unit.log), "\(unit.log)")
            try Self.expectPrivateDirectory((volatile as NSString).deletingLastPathComponent, in: temporary)
            stores.append(volatile)
            unit.stop()
        }
        #expect(stores[0] != stores[1])
    }
}
