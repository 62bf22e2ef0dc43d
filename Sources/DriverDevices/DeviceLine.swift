import Foundation
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// A driver input from a button or the terminal: the input as configured (`accept`, `pob 2`, `sos`),
/// the same words `taxiunitctl press` takes.
public struct DriverPress: Sendable, Equatable {
    public var input: String
    /// Where it came from, for the log: `button KEY_F1`, `terminal a`.
    public var source: String

    public init(input: String, source: String) {
        self.input = input
        self.source = source
    }
}

/// What both device adapters share: one thread that keeps a device file open while it exists,
/// retries every few seconds while it does not, and logs once when it goes and once when it comes
/// back. The adapter opens and configures the file and serves it until it fails or ends.
final class DeviceLine: @unchecked Sendable {
    enum Served {
        /// The device failed (unplugged, driver reloaded): log it and retry.
        case lost(String)
        /// The writer of a FIFO went away: open again at once, nothing to report.
        case ended
        case stopped
    }

    enum Wait {
        case readable
        case timedOut
        case woken
        case failed(String)
    }

    enum Read {
        case bytes(Int)
        case nothingYet
        case end
        case failed(String)
    }

    let path: String
    /// `button device`, `serial terminal`: how the log names it.
    let role: String
    let retryIntervalS: Double
    let logger: Logger

    /// A pipe whose read end sits in every poll: writing a byte wakes the thread.
    private let wakePipe: (read: Int32, write: Int32)
    private let lock = NSLock()
    private var isStopping = false
    private var thread: Thread?
    private let finished = DispatchSemaphore(value: 0)

    init(path: String, role: String, retryIntervalS: Double, logger: Logger) {
        self.path = path
        self.role = role
        self.retryIntervalS = retryIntervalS
        self.logger = logger
        var ends: [Int32] = [-1, -1]
        _ = pipe(&ends)
        for end in ends {
            _ = fcntl(end, F_SETFL, O_NONBLOCK)
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
        }
        wakePipe = (ends[0], ends[1])
    }

    deinit {
        close(wakePipe.read)
        close(wakePipe.write)
    }

    var stopping: Bool { lock.withLock { isStopping } }

    /// `open` returns a descriptor or why there is none; `serve` runs until the device fails or ends.
    func start(name: String, open: @escaping @Sendable (String) -> Result<Int32, DeviceError>, serve: @escaping @Sendable (Int32) -> Served) {
        let thread = Thread { [self] in
            run(open: open, serve: serve)
            finished.signal()
        }
        thread.name = name
        lock.withLock { self.thread = thread }
        thread.start()
    }

    func stop() {
        let running = lock.withLock {
            let running = thread != nil && !isStopping
            isStopping = true
            return running
        }
        wake()
        if running { finished.wait() }
    }

    /// Makes the thread's current `wait` return `.woken` (new screen content, or stop).
    func wake() {
        var byte: UInt8 = 1
        _ = Glibc.write(wakePipe.write, &byte, 1)
    }

    private func run(open: (String) -> Result<Int32, DeviceError>, serve: (Int32) -> Served) {
        var reportedMissing = false
        var everOpened = false
        while !stopping {
            switch open(path) {
            case .failure(let error):
                if !reportedMissing {
                    logger.warning("\(role) unavailable; retrying every \(retryIntervalS) s", metadata: ["path": "\(path)", "error": "\(error)"])
                    reportedMissing = true
                }
                _ = wait(fd: nil, timeoutMs: Int(retryIntervalS * 1000))
            case .success(let fd):
                if reportedMissing {
                    logger.notice("\(role) is back", metadata: ["path": "\(path)"])
                } else if !everOpened {
                    logger.info("\(role) opened", metadata: ["path": "\(path)"])
                }
                reportedMissing = false
                everOpened = true
                let outcome = serve(fd)
                close(fd)
                if case .lost(let reason) = outcome {
                    logger.warning("\(role) lost; retrying every \(retryIntervalS) s", metadata: ["path": "\(path)", "reason": "\(reason)"])
                    reportedMissing = true
                    _ = wait(fd: nil, timeoutMs: Int(retryIntervalS * 1000))
                }
            }
        }
    }

    /// As `wait(fd:timeoutMs:)`, to the µs, for the terminal's noise guard of a couple of character
    /// times. poll counts whole ms: a rest under 1 ms is slept and the line looked at afterwards;
    /// bytes that came meanwhile are read then, and a `wake()` waits that long at most.
    func wait(fd: Int32?, timeoutUs: Int64) -> Wait {
        if timeoutUs > 0, timeoutUs < 1000 {
            var rest = timespec(tv_sec: 0, tv_nsec: Int(timeoutUs) * 1000)
            nanosleep(&rest, nil)
        }
        return wait(fd: fd, timeoutMs: Int(max(0, timeoutUs) / 1000))
    }

    /// Waits until `fd` has bytes (or hung up: the next read tells), the timeout passes, or `wake()`.
    func wait(fd: Int32?, timeoutMs: Int) -> Wait {
        var descriptors = [pollfd(fd: wakePipe.read, events: Int16(POLLIN), revents: 0)]
        if let fd { descriptors.append(pollfd(fd: fd, events: Int16(POLLIN), revents: 0)) }
        let ready = poll(&descriptors, nfds_t(descriptors.count), Int32(clamping: max(0, timeoutMs)))
        if ready < 0 {
            return errno == EINTR ? .timedOut : .failed(String(cString: strerror(errno)))
        }
        if descriptors[0].revents != 0 {
            var drained = [UInt8](repeating: 0, count: 64)
            _ = Glibc.read(wakePipe.read, &drained, drained.count)
            return .woken
        }
        if descriptors.count > 1 && descriptors[1].revents != 0 { return .readable }
        return .timedOut
    }

    static func read(_ fd: Int32, into buffer: inout [UInt8]) -> Read {
        let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
        if count > 0 { return .bytes(count) }
        if count == 0 { return .end }
        switch errno {
        case EAGAIN, EINTR: return .nothingYet
        default: return .failed(String(cString: strerror(errno)))
        }
    }

    enum Written {
        case all
        /// The output queue is full: nobody reads the line (terminal off). Not a lost port.
        case full
        case failed(String)
    }

    static func write(_ fd: Int32, _ bytes: [UInt8]) -> Written {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if written < 0 {
                switch errno {
                case EINTR: continue
                case EAGAIN: return .full
                default: return .failed(String(cString: strerror(errno)))
                }
            }
            offset += written
        }
        return .all
    }

    /// Milliseconds on the monotonic clock: what the button debouncer counts in.
    static func monotonicMs() -> Int64 {
        monotonicUs() / 1000
    }

    /// Microseconds on the monotonic clock: what the terminal's key decoder counts in.
    static func monotonicUs() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Int64(now.tv_sec) * 1_000_000 + Int64(now.tv_nsec) / 1000
    }

    /// Opens `path` non-blocking; refuses regular files, which would be read again from the start on every reopen.
    static func openDevice(_ path: String, flags: Int32) -> Result<Int32, DeviceError> {
        let fd = Glibc.open(path, flags | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)
        guard fd >= 0 else { return .failure(DeviceError(String(cString: strerror(errno)))) }
        var info = stat()
        if fstat(fd, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG {
            close(fd)
            return .failure(DeviceError("is a regular file, not a device or FIFO"))
        }
        return .success(fd)
    }
}

struct DeviceError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
