import Dispatch
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Platform
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The local control socket: one request line in, one response line out, per connection.
/// All unsafe socket code for it lives in this file.
public enum ControlSocketError: Error, Sendable, Equatable, CustomStringConvertible {
    case daemonNotRunning(path: String)
    case permissionDenied(path: String)
    case pathTooLong(path: String)
    case system(call: String, message: String)
    case noResponse

    public var description: String {
        switch self {
        case .daemonNotRunning(let path): "taxiunitd is not running (nothing listens on \(path))"
        case .permissionDenied(let path): "not permitted to use \(path) (run as the taxiunitd user or root)"
        case .pathTooLong(let path): "socket path too long: \(path)"
        case .system(let call, let message): "\(call) failed: \(message)"
        case .noResponse: "the daemon closed the connection without answering"
        }
    }
}

/// Each admitted connection is served on a thread of its own (requests are rare and short), and
/// answered by an async handler that runs in the daemon's concurrency domain.
///
/// A local client cannot tie the daemon up: at most `maxClients` connections are served at once, and a
/// connection over that is answered `{"ok":false,"error":"busy"}` at once (taxiunitctl prints the
/// error; a script retries). It is closed once its request line has been read (or its deadline
/// passed): a unix socket closed with bytes unread resets the connection, and the client would
/// get ECONNRESET or EPIPE instead of the answer. Each connection has ONE deadline for its whole request
/// (`requestDeadline`), however the bytes trickle in, and one for writing its answer: a client that
/// sends a byte every few seconds, or never reads, loses its connection when it passes.
public final class ControlServer: BackgroundAdapter {
    public typealias Handler = @Sendable (_ request: [UInt8]) async -> [UInt8]

    private let path: String
    private let handler: Handler
    private let maxClients: Int
    private let requestDeadline: Duration
    /// The listening socket; -1 before `start` and after `stop`.
    private let listener = Mutex<Int32>(-1)
    /// Connections being served now.
    private let clients = Mutex(0)
    private let worker = BlockingWorker(name: "control-accept")
    /// Connections told busy, read to the end of their request before they are closed.
    private let refused = Mutex<[Refused]>([])
    private let refuser = BlockingWorker(name: "control-busy")
    /// Signalled when a connection is refused: the refuser sleeps until then rather than polling
    /// (a 20 ms poll cost the idle daemon 50 wakeups a second, 18 % of its CPU at 50 fixes/s).
    private let refusedArrived = DispatchSemaphore(value: 0)

    private struct Refused {
        var fd: Int32
        var deadline: ContinuousClock.Instant
    }

    /// Largest request accepted; control requests are a few hundred bytes.
    static let maxRequestBytes = 64 * 1024
    /// What a connection over `maxClients` is told before it is closed.
    static let busy = Array(#"{"ok":false,"error":"busy"}"#.utf8) + [UInt8(ascii: "\n")]
    /// Busy connections waiting to be read out at once; more are closed as soon as they are told,
    /// so a flood of clients holds a bounded number of descriptors.
    static let maxRefused = 256

    /// `maxClients`: connections served at once. `requestDeadline`: how long a client has to send its
    /// whole request line, and again to take its whole answer.
    public init(path: String, maxClients: Int = 8, requestDeadline: Duration = .seconds(5), handler: @escaping Handler) {
        self.path = path
        self.maxClients = max(1, maxClients)
        self.requestDeadline = requestDeadline
        self.handler = handler
    }

    /// Binds the socket (replacing a stale one left by a crash) and starts accepting.
    public func start() throws(ControlSocketError) {
        let directory = path.lastIndex(of: "/").map { String(path[..<$0]) } ?? ""
        if !directory.isEmpty {
            try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        }
        var address = try Self.address(path)
        do throws(SystemCallError) {
            try syscall("unlink \(path)") { unlink(path) }
        } catch where error.code == ENOENT {
            // No stale socket to replace.
        } catch {
            // Said here rather than as bind's EADDRINUSE.
            throw ControlSocketError(error)
        }
        let fd: Int32
        do throws(SystemCallError) {
            fd = try syscall("socket") { socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0) }
        } catch {
            throw ControlSocketError(error)
        }
        do throws(SystemCallError) {
            try syscall("bind \(path)") {
                withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
                }
            }
            // Owner and group only: the control socket can press the driver's buttons.
            try syscall("chmod \(path)") { chmod(path, 0o660) }
            try syscall("listen") { listen(fd, 16) }
        } catch {
            closeDescriptor(fd)
            throw ControlSocketError(error)
        }
        listener.withLock { $0 = fd }
        worker.start { [self] in acceptLoop(fd) }
        refuser.start { [self] in readOutRefused() }
    }

    /// Stops accepting and removes the socket; connections being served finish on their own.
    public func stop() {
        let fd = listener.withLock { fd in
            defer { fd = -1 }
            return fd
        }
        guard fd >= 0 else { return }
        // accept() returns once the listening socket is shut down.
        worker.stop { _ = shutdown(fd, Int32(SHUT_RDWR)) }
        refuser.stop { refusedArrived.signal() }
        for connection in refused.withLock({ $0 }) { closeDescriptor(connection.fd) }
        refused.withLock { $0 = [] }
        closeDescriptor(fd)
        _ = try? syscall("unlink \(path)") { unlink(path) }
    }

    private func acceptLoop(_ listenFD: Int32) {
        while !worker.isStopping {
            let client: Int32
            do throws(SystemCallError) {
                client = try syscall("accept") { accept(listenFD, nil, nil) }
            } catch {
                if worker.isStopping { return }
                switch error.code {
                // The client gave up before it was accepted.
                case ECONNABORTED: continue
                // Out of descriptors or memory: the clients being served free some.
                // (No heartbeat watches this thread: the allowance is unused.)
                case EMFILE, ENFILE, ENOBUFS, ENOMEM: worker.sleep(0.1, beatAllowingSilenceS: 0)
                default: return
                }
                continue
            }
            let admitted = clients.withLock { count in
                guard count < maxClients else { return false }
                count += 1
                return true
            }
            guard admitted else {
                // The line fits any socket buffer: this does not wait for a client that never reads.
                Self.writeAll(client, Self.busy, until: .now + .milliseconds(100))
                let kept = refused.withLock { connections in
                    guard connections.count < Self.maxRefused else { return false }
                    connections.append(Refused(fd: client, deadline: .now + requestDeadline))
                    return true
                }
                if kept { refusedArrived.signal() } else { closeDescriptor(client) }
                continue
            }
            detachThread { [self] in
                serve(client)
                clients.withLock { $0 -= 1 }
            }
        }
    }

    /// Reads what busy connections send until each has sent its line, closed its end or passed its
    /// deadline, then closes it: nothing is left unread to reset the connection.
    private func readOutRefused() {
        var scratch = [UInt8](repeating: 0, count: 4096)
        while !refuser.isStopping {
            let connections = refused.withLock { $0 }
            guard !connections.isEmpty else {
                _ = refusedArrived.wait(timeout: .now() + .seconds(1))
                continue
            }
            var ready = connections.map { pollfd(fd: $0.fd, events: Int16(POLLIN), revents: 0) }
            _ = try? syscall("poll") { poll(&ready, nfds_t(ready.count), 20) }
            var finished: Set<Int32> = []
            let now = ContinuousClock.now
            for (connection, state) in zip(connections, ready) {
                if state.revents != 0 {
                    do throws(SystemCallError) {
                        let count = try syscall("recv") {
                            scratch.withUnsafeMutableBytes { recv(connection.fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
                        }
                        if count == 0 || scratch[..<count].contains(UInt8(ascii: "\n")) { finished.insert(connection.fd) }
                    } catch {
                        if !error.wouldBlock { finished.insert(connection.fd) }
                    }
                }
                if now >= connection.deadline { finished.insert(connection.fd) }
            }
            guard !finished.isEmpty else { continue }
            refused.withLock { $0.removeAll { finished.contains($0.fd) } }
            for fd in finished { closeDescriptor(fd) }
        }
    }

    private func serve(_ client: Int32) {
        defer { closeDescriptor(client) }
        guard let request = Self.readLine(client, limit: Self.maxRequestBytes, until: .now + requestDeadline) else { return }
        let done = DispatchSemaphore(value: 0)
        let response = ResponseBox()
        Task { [handler] in
            let bytes = await handler(request)
            response.bytes.withLock { $0 = bytes }
            done.signal()
        }
        done.wait()
        Self.writeAll(client, response.bytes.withLock { $0 } + [UInt8(ascii: "\n")], until: .now + requestDeadline)
    }

    /// The handler's answer, handed from its task to the serving thread; the semaphore orders the two.
    private final class ResponseBox: Sendable {
        let bytes = Mutex<[UInt8]>([])
    }

    /// One line (without its newline) read before `deadline`; what came before the end of the stream
    /// if it has no newline; nil if nothing came, the deadline passed, or the socket failed.
    static func readLine(_ fd: Int32, limit: Int, until deadline: ContinuousClock.Instant) -> [UInt8]? {
        var line: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while line.count < limit {
            guard waitUntilReady(fd, for: POLLIN, until: deadline) else { return nil }
            let wanted = min(chunk.count, limit - line.count)
            let count: Int
            do throws(SystemCallError) {
                count = try syscall("recv") { chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, wanted, Int32(MSG_DONTWAIT)) } }
            } catch {
                if error.wouldBlock { continue }
                return nil
            }
            if count == 0 { return line.isEmpty ? nil : line }
            // One request per connection: whatever follows its newline is ignored.
            if let newline = chunk[..<count].firstIndex(of: UInt8(ascii: "\n")) {
                return line + chunk[..<newline]
            }
            line += chunk[..<count]
        }
        return line
    }

    /// Writes all of `bytes` before `deadline`, or gives up (the peer went away, or does not read).
    static func writeAll(_ fd: Int32, _ bytes: [UInt8], until deadline: ContinuousClock.Instant) {
        var offset = 0
        while offset < bytes.count {
            guard waitUntilReady(fd, for: POLLOUT, until: deadline) else { return }
            do throws(SystemCallError) {
                // MSG_NOSIGNAL: a peer that closed its end is an error here, not a SIGPIPE that ends the process.
                offset += try syscall("send") {
                    bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL)) }
                }
            } catch {
                if error.wouldBlock { continue }
                return
            }
        }
    }

    /// Waits until `fd` is ready for `events` (or failed: the next call says how); false once
    /// `deadline` has passed.
    private static func waitUntilReady(_ fd: Int32, for events: Int32, until deadline: ContinuousClock.Instant) -> Bool {
        while true {
            let remaining = deadline - .now
            guard remaining > .zero else { return false }
            let (seconds, attoseconds) = remaining.components
            // Rounded up: a wait that ends before the deadline only comes round again.
            let milliseconds = Int32(clamping: seconds * 1000 + attoseconds / 1_000_000_000_000_000 + 1)
            var ready = pollfd(fd: fd, events: Int16(events), revents: 0)
            do throws(SystemCallError) {
                if try syscall("poll", { poll(&ready, 1, milliseconds) }) > 0 { return true }
            } catch {
                return false
            }
        }
    }

    static func address(_ path: String) throws(ControlSocketError) -> sockaddr_un {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { throw .pathTooLong(path: path) }
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            buffer.copyBytes(from: bytes)
        }
        return address
    }
}

extension ControlSocketError {
    init(_ error: SystemCallError) {
        self = .system(call: error.function, message: error.message)
    }
}

/// The client side, for `taxiunitctl` and tests.
public enum ControlClient {
    /// `timeoutS`: for sending the request and receiving the whole answer.
    public static func request(_ request: [UInt8], socket path: String, timeoutS: Int = 10) throws(ControlSocketError) -> [UInt8] {
        var address = try ControlServer.address(path)
        let fd: Int32
        do throws(SystemCallError) {
            fd = try syscall("socket") { socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0) }
        } catch {
            throw ControlSocketError(error)
        }
        defer { closeDescriptor(fd) }
        do throws(SystemCallError) {
            try syscall("connect \(path)") {
                withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
                }
            }
        } catch {
            switch error.code {
            case ENOENT, ECONNREFUSED: throw .daemonNotRunning(path: path)
            case EACCES, EPERM: throw .permissionDenied(path: path)
            default: throw ControlSocketError(error)
            }
        }
        let deadline = ContinuousClock.now + .seconds(timeoutS)
        ControlServer.writeAll(fd, request + [UInt8(ascii: "\n")], until: deadline)
        guard let response = ControlServer.readLine(fd, limit: 16 * 1024 * 1024, until: deadline) else { throw .noResponse }
        return response
    }
}
