import Foundation
import Liveness

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

/// Requests are handled on a thread of their own each (they are rare and short), and answered by an
/// async handler that runs in the daemon's concurrency domain.
public final class ControlServer: @unchecked Sendable {
    public typealias Handler = @Sendable (_ request: [UInt8]) async -> [UInt8]

    private let path: String
    private let handler: Handler
    private var listenFD: Int32 = -1
    private let stopped = NSLock()
    private var isStopped = false
    private let acceptFinished = DispatchSemaphore(value: 0)

    /// Largest request accepted; control requests are a few hundred bytes.
    static let maxRequestBytes = 64 * 1024

    public init(path: String, handler: @escaping Handler) {
        self.path = path
        self.handler = handler
    }

    /// Binds the socket (replacing a stale one left by a crash) and starts accepting.
    public func start() throws(ControlSocketError) {
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty {
            try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        }
        unlink(path)
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw .system(call: "socket", message: Self.lastError()) }
        var address = try Self.address(path)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0 else {
            close(fd)
            throw .system(call: "bind \(path)", message: Self.lastError())
        }
        // Owner and group only: the control socket can press the driver's buttons.
        chmod(path, 0o660)
        guard listen(fd, 16) == 0 else {
            close(fd)
            throw .system(call: "listen", message: Self.lastError())
        }
        listenFD = fd
        let thread = Thread { [self] in
            Liveness.nameCurrentThread("control-accept")
            acceptLoop()
            acceptFinished.signal()
        }
        thread.start()
    }

    public func stop() {
        let wasRunning = stopped.withLock {
            defer { isStopped = true }
            return !isStopped && listenFD >= 0
        }
        guard wasRunning else { return }
        shutdown(listenFD, Int32(SHUT_RDWR))
        acceptFinished.wait()
        close(listenFD)
        unlink(path)
    }

    private func acceptLoop() {
        while true {
            let client = accept(listenFD, nil, nil)
            if stopped.withLock({ isStopped }) {
                if client >= 0 { close(client) }
                return
            }
            guard client >= 0 else {
                if errno == EINTR || errno == ECONNABORTED { continue }
                return
            }
            let thread = Thread { [self] in serve(client) }
            thread.start()
        }
    }

    private func serve(_ client: Int32) {
        defer { close(client) }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        guard let request = Self.readLine(client, limit: Self.maxRequestBytes) else { return }
        let done = DispatchSemaphore(value: 0)
        let response = ResponseBox()
        Task { [handler] in
            response.bytes = await handler(request)
            done.signal()
        }
        done.wait()
        Self.writeAll(client, response.bytes + [UInt8(ascii: "\n")])
    }

    private final class ResponseBox: @unchecked Sendable {
        var bytes: [UInt8] = []
    }

    static func readLine(_ fd: Int32, limit: Int) -> [UInt8]? {
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while line.count < limit {
            let count = read(fd, &byte, 1)
            if count <= 0 { return line.isEmpty ? nil : line }
            if byte == UInt8(ascii: "\n") { return line }
            line.append(byte)
        }
        return line
    }

    static func writeAll(_ fd: Int32, _ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if written <= 0 {
                if errno == EINTR { continue }
                return
            }
            offset += written
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

    static func lastError() -> String { String(cString: strerror(errno)) }
}

/// The client side, for `taxiunitctl` and tests.
public enum ControlClient {
    public static func request(_ request: [UInt8], socket path: String, timeoutS: Int = 10) throws(ControlSocketError) -> [UInt8] {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw .system(call: "socket", message: ControlServer.lastError()) }
        defer { close(fd) }
        var address = try ControlServer.address(path)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else {
            switch errno {
            case ENOENT, ECONNREFUSED: throw .daemonNotRunning(path: path)
            case EACCES, EPERM: throw .permissionDenied(path: path)
            default: throw .system(call: "connect \(path)", message: ControlServer.lastError())
            }
        }
        var timeout = timeval(tv_sec: timeoutS, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        ControlServer.writeAll(fd, request + [UInt8(ascii: "\n")])
        guard let response = ControlServer.readLine(fd, limit: 16 * 1024 * 1024) else { throw .noResponse }
        return response
    }
}
