import ControlSocket
import Foundation
import MQTTLink
import TestHarness
import Testing

/// Messages far over the unit's limits, through a real mosquitto to the real daemon: on MQTT 5 the
/// unit announces its Maximum Packet Size and the broker drops them unsent; on MQTT 3.1.1 they
/// arrive and are refused without a copy. Either way the unit stays up, its peak memory stays
/// bounded, and a good offer is answered after.
@Suite(.serialized) struct OversizedMessageTests {
    /// The unit's peak resident memory so far (VmHWM), in bytes.
    static func peakResidentBytes(_ unit: UnitUnderTest) throws -> Int {
        let pid = try #require(unit.process?.pid)
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        let line = try #require(status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") })
        let kilobytes = try #require(Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]))
        return kilobytes * 1024
    }

    static let megabyte = 1024 * 1024

    /// A 50 MB QoS 1 offer and a 60 MB retained config, then a good offer answered; `protocolVersion`
    /// the unit's. Returns how much the unit's peak memory grew over its peak before them (the
    /// second start's over the first's).
    /// `launcher` runs the daemon inside something (a memory cgroup).
    func floodAndAnswer(protocolVersion: String, launcher: [String] = []) async throws -> (growth: Int, log: String) {
        let scratch = try ScratchDirectory()
        let broker = try MosquittoBroker(in: scratch)
        let unit = try UnitUnderTest(
            mqttPort: broker.port, gpsdPort: try Loopback.freePort(), in: scratch, mqttTOML: "protocol = \"\(protocolVersion)\"")
        let recorder = try await MQTTRecorder(port: broker.port, subscribe: [unit.topicBase + "job/reply", unit.topicBase + "config/ack"])
        try await unit.start(launcher: launcher)
        try await unit.waitForStatus("connected") { $0.broker.connected }
        #expect(try unit.request(ControlRequest(cmd: .press, input: "duty")).ok)
        let before = try Self.peakResidentBytes(unit)

        let huge = Array(#"{"job":"BIG","pickup":{"lat":46.5,"lon":7.5},"note":""#.utf8)
            + [UInt8](repeating: 0x41, count: 50 * Self.megabyte) + Array(#""}"#.utf8)
        try recorder.publish(unit.topicBase + "job/offer", bytes: huge)
        try recorder.publish("taxi/\(unit.fleet)/config", bytes: [UInt8](repeating: 0x20, count: 60 * Self.megabyte), retain: true)
        // Sent after them on the same connection, so the broker handled them first.
        try recorder.publish(unit.topicBase + "job/offer", #"{"job":"OK1","pickup":{"lat":46.5,"lon":7.5}}"#)
        try await unit.waitForStatus("the good offer", timeoutS: 60) { $0.job?.id == "OK1" }
        #expect(try unit.request(ControlRequest(cmd: .press, input: "accept")).ok)
        try await recorder.waitFor("the accept", timeoutS: 30) { messages in
            messages.contains { $0.json?["job"] as? String == "OK1" && $0.json?["reply"] as? String == "accept" }
        }
        #expect(!recorder.messages.contains { $0.json?["job"] as? String == "BIG" })

        // The retained 60 MB config comes again with every connection: the unit stays up.
        unit.stop()
        try await unit.start(launcher: launcher)
        try await unit.waitForStatus("connected again") { $0.broker.connected }
        try await Task.sleep(for: .seconds(2))
        let status = try unit.status()
        #expect(status.broker.connected && status.config?.versions.isEmpty == true)
        let growth = try Self.peakResidentBytes(unit) - before
        let log = unit.log
        unit.stop()
        return (growth, log)
    }

    @Test func onMQTT5TheBrokerDropsWhatIsOverTheAnnouncedMaximumPacketSize() async throws {
        let (growth, log) = try await floodAndAnswer(protocolVersion: "5")
        // Never received: nothing of the payloads was in the unit's memory.
        #expect(growth < 10 * Self.megabyte, "peak RSS grew \(growth / Self.megabyte) MiB")
        #expect(!log.contains("why=oversized"))
    }

    @Test func onMQTT311WhatArrivesOversizedIsRefusedWithoutACopy() async throws {
        let (growth, log) = try await floodAndAnswer(protocolVersion: "3.1.1")
        // libmosquitto holds the packet and its own copy of the payload while it reads it (2 x 60
        // MiB); the unit makes no third.
        #expect(growth < 2 * 60 * Self.megabyte + 20 * Self.megabyte, "peak RSS grew \(growth / Self.megabyte) MiB")
        #expect(log.contains("message refused unread") && log.contains("why=oversized, 52428"), "\(log)")
        #expect(log.contains("fleet config rejected") && log.contains("more than the limit of 65536"), "\(log)")
    }

    /// The unit file's MemoryMax=128M, as a memory cgroup of its own (v2 or v1), where the machine
    /// lets this process make one: root only (`make test-root`).
    @Test(.enabled(if: ProcessInfo.processInfo.environment["TAXIUNITD_ROOT_TESTS"] == "1"))
    func underA128MiBMemoryCgroupTheUnitIsNeverKilled() async throws {
        let name = "taxiunitd-test-\(UUID().uuidString.prefix(8))"
        let unified = FileManager.default.fileExists(atPath: "/sys/fs/cgroup/cgroup.controllers")
        let group = unified ? "/sys/fs/cgroup/\(name)" : "/sys/fs/cgroup/memory/\(name)"
        try FileManager.default.createDirectory(atPath: group, withIntermediateDirectories: false)
        // A cgroup goes with rmdir once its processes are gone, never by deleting its files.
        defer { rmdir(group) }
        try "\(128 * Self.megabyte)".write(toFile: group + (unified ? "/memory.max" : "/memory.limit_in_bytes"), atomically: false, encoding: .utf8)
        if !unified { try "0".write(toFile: group + "/memory.swappiness", atomically: false, encoding: .utf8) }
        // The shell joins the cgroup, then becomes the daemon.
        let launcher = ["/bin/sh", "-c", "echo $$ > \(group)/cgroup.procs && exec \"$@\"", "join-cgroup"]
        let (growth, log) = try await floodAndAnswer(protocolVersion: "5", launcher: launcher)
        #expect(growth < 10 * Self.megabyte, "peak RSS grew \(growth / Self.megabyte) MiB")
        #expect(!log.contains("why=oversized"))
        // The daemon did run in it: its peak is charged there (its own memory; the libraries'
        // pages it shares are charged where they were first read), under the limit.
        let peak = try String(contentsOfFile: group + (unified ? "/memory.peak" : "/memory.max_usage_in_bytes"), encoding: .utf8)
        let peakBytes = Int(peak.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        #expect(peakBytes > Self.megabyte && peakBytes < 128 * Self.megabyte, "cgroup peak \(peakBytes)")
        let events = try String(contentsOfFile: group + (unified ? "/memory.events" : "/memory.failcnt"), encoding: .utf8)
        #expect(unified ? events.contains("oom_kill 0") : events.trimmingCharacters(in: .whitespacesAndNewlines) == "0", "\(events)")
    }
}
