import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Plays systemd's side of sd_notify: a Unix datagram socket the daemon finds in `NOTIFY_SOCKET`.
/// Non-blocking, so tests poll it with `waitUntil` instead of blocking a cooperative thread.
public final class NotifySocket: @unchecked Sendable {
    public let path: String
    private let fd: Int32
    private let lock = NSLock()
    private var received: [String] = []

    public init(path: String) throws {
        self.path = path
        unlink(path)
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw HarnessError("socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { throw HarnessError("path too long: \(path)") }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0 else { throw HarnessError("bind \(path): \(String(cString: strerror(errno)))") }
    }

    /// Every datagram so far, each one notification (`READY=1\nSTATUS=...`).
    public var messages: [String] {
        lock.withLock {
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = recv(fd, &buffer, buffer.count, 0)
                guard count > 0 else { break }
                received.append(String(decoding: buffer[..<count], as: UTF8.self))
            }
            return received
        }
    }

    /// Every `KEY=value` assignment received, in order.
    public var assignments: [String] { messages.flatMap { $0.split(separator: "\n").map(String.init) } }

    public func waitFor(_ what: String, timeoutS: Double = 20, _ condition: ([String]) -> Bool) async throws {
        try await waitUntil(what, timeoutS: timeoutS, detail: { "received: \(self.assignments)" }) { condition(assignments) }
    }

    deinit {
        close(fd)
        unlink(path)
    }
}
