import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A real program started by a test in a process group of its own, so that stopping it also stops
/// what it started (gpsfake leaves its gpsd child behind otherwise). All unsafe spawn code is here.
public final class ChildProcess: @unchecked Sendable {
    public let pid: pid_t
    public let name: String
    public let logPath: String
    private let lock = NSLock()
    private var exitStatus: Int32?

    /// Starts `executable` (searched in PATH) with stdout and stderr appended to `logPath`.
    public init(_ executable: String, _ arguments: [String], logPath: String, environment: [String: String] = [:]) throws {
        name = (executable as NSString).lastPathComponent
        self.logPath = logPath
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // Test threads (libdispatch workers) block every signal and that mask is inherited: without
        // a clean mask and default dispositions, SIGTERM would never reach the child.
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        posix_spawnattr_setpgroup(&attributes, 0)
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        var allSignals = sigset_t()
        sigfillset(&allSignals)
        posix_spawnattr_setsigdefault(&attributes, &allSignals)

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, logPath, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)

        var merged = ProcessInfo.processInfo.environment
        merged.merge(environment) { $1 }
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = merged.map { strdup("\($0)=\($1)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var child: pid_t = 0
        let rc = posix_spawnp(&child, executable, &actions, &attributes, argv, envp)
        guard rc == 0 else { throw HarnessError("cannot start \(executable): \(String(cString: strerror(rc)))") }
        pid = child
    }

    public var isRunning: Bool {
        lock.withLock {
            guard exitStatus == nil else { return false }
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid {
                exitStatus = status
                return false
            }
            return true
        }
    }

    /// Sends `signal` to the whole process group.
    public func signal(_ signal: Int32) {
        _ = kill(-pid, signal)
    }

    /// Sends `signal` to the leader only: SIGSTOP freezes gpsfake while its gpsd keeps serving.
    public func signalLeader(_ signal: Int32) {
        _ = kill(pid, signal)
    }

    /// SIGTERM to the group, SIGKILL after `graceS`, then reaps the leader. Returns its wait status.
    @discardableResult
    public func stop(graceS: Double = 5) -> Int32? {
        signal(SIGTERM)
        let deadline = Date(timeIntervalSinceNow: graceS)
        while isRunning && Date() < deadline { usleep(20_000) }
        if isRunning { signal(SIGKILL) }
        return waitForExit()
    }

    /// SIGKILL to the group at once: a crash or power loss as far as the program can tell.
    public func killHard() {
        signal(SIGKILL)
        waitForExit()
        // Children of the group (gpsd under gpsfake) may still be dying; give them a moment, if any.
        for _ in 0..<10 where kill(-pid, 0) == 0 { usleep(5_000) }
    }

    @discardableResult
    public func waitForExit() -> Int32? {
        lock.withLock {
            if exitStatus == nil {
                var status: Int32 = 0
                if waitpid(pid, &status, 0) == pid { exitStatus = status }
            }
            return exitStatus
        }
    }

    /// The exit code if the leader exited normally.
    public var exitCode: Int32? {
        guard let status = waitForExit(), status & 0x7f == 0 else { return nil }
        return (status >> 8) & 0xff
    }

    public var log: String {
        (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
    }

    deinit {
        if lock.withLock({ exitStatus == nil }) {
            signal(SIGKILL)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
        }
    }
}

public struct HarnessError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

public enum Loopback {
    /// A TCP port nobody listens on right now (never gpsd's 2947 or MQTT's 1883).
    public static func freePort() throws -> Int {
        for _ in 0..<20 {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else { break }
            defer { close(fd) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = 0
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                    bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
                }
            }
            guard bound else { continue }
            let port = Int(UInt16(bigEndian: address.sin_port))
            if port != 2947 && port != 1883 { return port }
        }
        throw HarnessError("no free loopback port")
    }

    public static func accepts(port: Int) -> Bool {
        guard let fd = connected(to: port) else { return false }
        close(fd)
        return true
    }

    /// Sends `request` over a fresh connection and reads until the answer contains `marker`
    /// (waiting at most 2 s for each read); nil if nothing listens or nothing came back.
    public static func exchange(port: Int, request: String, until marker: String) -> String? {
        guard let fd = connected(to: port) else { return nil }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        guard write(fd, request, request.utf8.count) == request.utf8.count else { return nil }
        var answer = ""
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !answer.contains(marker) {
            let count = read(fd, &buffer, buffer.count)
            guard count > 0 else { break }
            answer += String(decoding: buffer[..<count], as: UTF8.self)
        }
        return answer.isEmpty ? nil : answer
    }

    /// A socket connected to 127.0.0.1:`port`, or nil.
    private static func connected(to port: Int) -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
        guard connected else {
            close(fd)
            return nil
        }
        return fd
    }

    public static func waitUntilAccepting(port: Int, timeoutS: Double = 10) throws {
        let deadline = Date(timeIntervalSinceNow: timeoutS)
        while Date() < deadline {
            if accepts(port: port) { return }
            usleep(50_000)
        }
        throw HarnessError("nothing accepted connections on 127.0.0.1:\(port) within \(timeoutS) s")
    }
}

/// Runs blocking work (waiting for a process to exit, polling a port) on a thread of its own, so it
/// never holds one of the few threads of the cooperative pool.
@discardableResult
public func offThePool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try work() }) }.start()
    }
}
