import Foundation
import Platform
import Testing

@testable import ControlSocket

#if canImport(Glibc)
import Glibc
#endif

/// The control socket's limits, on a real ControlServer over a real unix socket: a slow client cannot
/// hold a thread past its one deadline, and connections over the cap are told `busy` at once.
@Suite struct ControlServerTests {
    /// A fresh directory for the socket, removed at the end.
    final class Scratch {
        let path: String
        init() throws { path = try makePrivateDirectory(in: NSTemporaryDirectory(), prefix: "control-test") }
        var socket: String { path + "/control.sock" }
        deinit { try? FileManager.default.removeItem(atPath: path) }
    }

    /// Holds every request in the handler until opened, and counts the requests that reached it.
    final class Gate: Sendable {
        private let state = Locked((open: false, arrived: 0))
        var arrived: Int { state.withLock { $0.arrived } }
        func open() { state.withLock { $0.open = true } }

        func handle(_ request: [UInt8]) async -> [UInt8] {
            state.withLock { $0.arrived += 1 }
            while !state.withLock({ $0.open }) { try? await Task.sleep(for: .milliseconds(10)) }
            return Array(#"{"ok":true,"message":"#.utf8) + Array("\"\(String(decoding: request, as: UTF8.self))\"}".utf8)
        }
    }

    static func echo(_ request: [UInt8]) async -> [UInt8] {
        Array(#"{"ok":true,"message":"#.utf8) + Array("\"\(String(decoding: request, as: UTF8.self))\"}".utf8)
    }

    /// A raw client: connected, nothing sent yet.
    static func connect(_ path: String) throws -> Int32 {
        let fd = try syscall("socket") { socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0) }
        var address = try ControlServer.address(path)
        try syscall("connect") {
            withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
        }
        return fd
    }

    /// Runs blocking socket calls on a thread of their own: the handler's task needs the few threads
    /// of the cooperative pool (two on a 2-core machine), as it does in the daemon.
    static func offThePool<Value: Sendable>(_ work: @escaping @Sendable () throws -> Value) async throws -> Value {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread { continuation.resume(with: Result { try work() }) }
        }
    }

    static func request(_ text: String, socket: String) async throws -> String {
        try await offThePool { String(decoding: try ControlClient.request(Array(text.utf8), socket: socket), as: UTF8.self) }
    }

    static func send(_ fd: Int32, _ text: String) {
        ControlServer.writeAll(fd, Array(text.utf8), until: .now + .seconds(2))
    }

    static func response(_ fd: Int32, timeoutS: Int = 5) async throws -> String? {
        try await offThePool {
            ControlServer.readLine(fd, limit: 4096, until: .now + .seconds(timeoutS)).map { String(decoding: $0, as: UTF8.self) }
        }
    }

    @Test func answersOneRequestPerConnection() async throws {
        let scratch = try Scratch()
        let server = ControlServer(path: scratch.socket, handler: Self.echo)
        try server.start()
        defer { server.stop() }
        #expect(try await Self.request("status", socket: scratch.socket) == #"{"ok":true,"message":"status"}"#)
        var info = stat()
        try syscall("stat") { stat(scratch.socket, &info) }
        #expect(info.st_mode & 0o777 == 0o660)
    }

    /// A client that sends a byte a second never completes its line: it is cut off when its one
    /// deadline passes (not 2 s after its last byte), and its place is free again.
    @Test func aSlowClientIsCutOffAtItsDeadlineAndFreesItsPlace() async throws {
        let scratch = try Scratch()
        let server = ControlServer(path: scratch.socket, maxClients: 1, requestDeadline: .seconds(2), handler: Self.echo)
        try server.start()
        defer { server.stop() }

        let slow = try Self.connect(scratch.socket)
        defer { closeDescriptor(slow) }
        let start = ContinuousClock.now
        let closedAfter = try await Self.offThePool { () throws -> Duration? in
            for byte in Array(#"{"cmd":"status"}"#.utf8) {
                var one = byte
                // MSG_NOSIGNAL: the server closing its end must not end the test process.
                if (try? syscall("send", { Glibc.send(slow, &one, 1, Int32(MSG_NOSIGNAL)) })) == nil { return ContinuousClock.now - start }
                var ready = pollfd(fd: slow, events: Int16(POLLIN), revents: 0)
                // The server says nothing to a slow client: readable here means it closed the connection.
                if try syscall("poll", { poll(&ready, 1, 1000) }) > 0 { return ContinuousClock.now - start }
            }
            return nil
        }
        let cutOff = try #require(closedAfter, "the slow client was never cut off")
        // A timeout per read would never cut it off: it sends within every second for 16 s. The
        // bound above the deadline is scheduling slack on a loaded 2-core machine.
        #expect(cutOff >= .seconds(1.5) && cutOff < .seconds(10), "one deadline for the whole request: \(cutOff)")
        #expect(try await Self.response(slow, timeoutS: 1) == nil, "no answer to a request that never came whole")

        // The one place is free again: a prompt client is served, not told busy.
        try await Task.sleep(for: .milliseconds(100))
        #expect(try await Self.request("status", socket: scratch.socket) == #"{"ok":true,"message":"status"}"#)
    }

    /// With `maxClients` connections being served, the next one is answered busy at once and closed;
    /// the ones being served get their answers, and then new clients are served again.
    @Test func theConnectionOverTheCapIsToldBusy() async throws {
        let scratch = try Scratch()
        let gate = Gate()
        let server = ControlServer(path: scratch.socket, maxClients: 3) { await gate.handle($0) }
        try server.start()
        defer { server.stop() }

        var held: [Int32] = []
        defer { held.forEach(closeDescriptor) }
        for index in 0..<3 {
            let fd = try Self.connect(scratch.socket)
            held.append(fd)
            Self.send(fd, "held \(index)\n")
        }
        let deadline = ContinuousClock.now + .seconds(5)
        while gate.arrived < 3 && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        #expect(gate.arrived == 3)

        let extra = try Self.connect(scratch.socket)
        defer { closeDescriptor(extra) }
        Self.send(extra, "one too many\n")
        // Told while the three still hold their places: not queued behind them.
        #expect(try await Self.response(extra) == #"{"ok":false,"error":"busy"}"#)
        #expect(try await Self.response(extra, timeoutS: 1) == nil, "and closed")
        #expect(gate.arrived == 3, "the handler never saw it")

        gate.open()
        for (index, fd) in held.enumerated() {
            #expect(try await Self.response(fd) == #"{"ok":true,"message":"held \#(index)"}"#)
        }
        // Their threads are done with them (the count drops just after each answer is written).
        try await Task.sleep(for: .milliseconds(100))
        #expect(try await Self.request("after", socket: scratch.socket) == #"{"ok":true,"message":"after"}"#)
    }

    /// A raw client as a script writes one: connect, pause, send a line, read to the end of the
    /// stream; what it read, or the call that failed and why.
    static func rawExchange(_ path: String, _ line: String, pauseMs: Int) -> String {
        do throws(SystemCallError) {
            let fd = try syscall("socket") { socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0) }
            defer { closeDescriptor(fd) }
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
            try syscall("connect") {
                withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
                }
            }
            usleep(UInt32(pauseMs * 1000))
            let bytes = Array(line.utf8)
            _ = try syscall("send") { bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } }
            var received: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 4096)
            while true {
                var ready = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                guard try syscall("poll", { poll(&ready, 1, 30_000) }) > 0 else { return "no end within 30 s: \(String(decoding: received, as: UTF8.self))" }
                let count = try syscall("recv") { chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) } }
                if count == 0 { return String(decoding: received, as: UTF8.self) }
                received += chunk[..<count]
            }
        } catch {
            return "\(error.function): \(error.message)"
        }
    }

    /// A hundred scripts at once against two places: each gets an answer line, the busy ones too,
    /// whether it sent its request before or after the server decided (none sees a reset or EPIPE).
    @Test func everyClientItCannotServeReadsBusy() async throws {
        let scratch = try Scratch()
        let gate = Gate()
        let server = ControlServer(path: scratch.socket, maxClients: 2) { await gate.handle($0) }
        try server.start()
        defer { server.stop() }

        let answers = Locked([String]())
        let group = DispatchGroup()
        let socket = scratch.socket
        for index in 0..<100 {
            group.enter()
            Thread.detachNewThread {
                let answer = Self.rawExchange(socket, "status\n", pauseMs: index % 5 * 10)
                answers.withLock { $0.append(answer) }
                group.leave()
            }
        }
        let busy = #"{"ok":false,"error":"busy"}"# + "\n"
        let deadline = ContinuousClock.now + .seconds(60)
        while answers.withLock({ $0.count }) < 98 && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        gate.open()
        try await Self.offThePool { group.wait() }
        let all = answers.withLock { $0 }
        let served = #"{"ok":true,"message":"status"}"# + "\n"
        #expect(all.count == 100)
        #expect(all.filter { $0 == busy }.count == 98, "\(Dictionary(grouping: all, by: { $0 }).mapValues(\.count))")
        #expect(all.filter { $0 == served }.count == 2, "\(Dictionary(grouping: all, by: { $0 }).mapValues(\.count))")
    }

    @Test func stopRemovesTheSocket() async throws {
        let scratch = try Scratch()
        let server = ControlServer(path: scratch.socket, handler: Self.echo)
        try server.start()
        server.stop()
        #expect(!FileManager.default.fileExists(atPath: scratch.socket))
        await #expect(throws: ControlSocketError.daemonNotRunning(path: scratch.socket)) {
            try await Self.request("status", socket: scratch.socket)
        }
        server.stop()
    }
}
