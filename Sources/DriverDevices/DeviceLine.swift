#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging
import DriverKeys
import Platform
import UnitCore

#if canImport(Glibc)
import Glibc
#endif

/// A driver input from a button or the terminal: what its key is mapped to (`accept`, `pob 2`,
/// `sos`), parsed when the configuration was read.
public struct DriverPress: Sendable, Equatable {
    /// nil for an unmapped key, a badge, an ignition change and a dropped burst.
    public var command: DriverCommand?
    /// Where it came from, for the log: `button KEY_F1`, `terminal a`.
    public var source: String
    /// The terminal key itself, mapped or not, for typing a login: a printable character, `\n`
    /// for ENTER, `\u{8}` for LEFT (erase). nil for buttons and other keys.
    public var typed: Character?
    /// A badge number from a badge reader (`command` is then nil). Never logged.
    public var badge: String?
    /// The serial terminal dropped a burst of line noise here, with any keys in it (`command` is then
    /// nil): the driver is told, and a login being typed starts its field again.
    public var discarded: Bool
    /// The ignition input says the ignition is on (true) or off (`command` is then nil).
    public var ignition: Bool?
    /// The taximeter said hired, vacant or a fare (`command` is then nil).
    public var meter: MeterReading?
    /// `meter` is the first hired or vacant since the meter's device opened: the state it was found
    /// in, not a change.
    public var meterFound: Bool

    public init(
        command: DriverCommand?, source: String, typed: Character? = nil, badge: String? = nil, discarded: Bool = false, ignition: Bool? = nil,
        meter: MeterReading? = nil, meterFound: Bool = false
    ) {
        self.meter = meter
        self.meterFound = meterFound
        self.ignition = ignition
        self.command = command
        self.source = source
        self.typed = typed
        self.badge = badge
        self.discarded = discarded
    }
}

/// What the device adapters share: one thread that keeps a device file open while it exists,
/// retries every few seconds while it does not, and logs once when it goes and once when it comes
/// back. The adapter opens and configures the file and serves it until it fails or ends.
final class DeviceLine: Sendable {
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
    /// `button device`, `badge reader`, `serial terminal`: how the log names it.
    let role: String
    let retryIntervalS: Double
    let logger: Logger

    /// A pipe whose read end sits in every poll: writing a byte wakes the thread. Without one (no
    /// descriptors left) the thread still notices `stop` within one wait.
    private let wakePipe: (read: Int32, write: Int32)
    private let worker: BlockingWorker

    /// `threadName`: the thread's name for the kernel (`buttons`, `badge`, `serial-terminal`).
    init(path: String, role: String, threadName: String, retryIntervalS: Double, logger: Logger) {
        self.path = path
        self.role = role
        self.retryIntervalS = retryIntervalS
        self.logger = logger
        worker = BlockingWorker(name: threadName)
        var ends: [Int32] = [-1, -1]
        if (try? syscall("pipe", { pipe(&ends) })) != nil {
            for end in ends {
                _ = try? syscall("fcntl") { fcntl(end, F_SETFL, O_NONBLOCK) }
                _ = try? syscall("fcntl") { fcntl(end, F_SETFD, FD_CLOEXEC) }
            }
        } else {
            ends = [-1, -1]
        }
        wakePipe = (ends[0], ends[1])
    }

    deinit {
        if wakePipe.read >= 0 { closeDescriptor(wakePipe.read) }
        if wakePipe.write >= 0 { closeDescriptor(wakePipe.write) }
    }

    var stopping: Bool { worker.isStopping }

    /// `open` returns a descriptor or why there is none; `serve` runs until the device fails or ends.
    func start(open: @escaping @Sendable (String) -> Result<Int32, DeviceError>, serve: @escaping @Sendable (Int32) -> Served) {
        worker.start { [self] in run(open: open, serve: serve) }
    }

    func stop() {
        worker.stop(wake: wake)
    }

    /// Makes the thread's current `wait` return `.woken` (new screen content, or stop). A full pipe
    /// already holds a wake-up.
    func wake() {
        var byte: UInt8 = 1
        _ = try? syscall("write") { Glibc.write(wakePipe.write, &byte, 1) }
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
                closeDescriptor(fd)
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
        do throws(SystemCallError) {
            try syscall("poll") { poll(&descriptors, nfds_t(descriptors.count), Int32(clamping: max(0, timeoutMs))) }
        } catch {
            return .failed(error.message)
        }
        if descriptors[0].revents != 0 {
            var drained = [UInt8](repeating: 0, count: 64)
            _ = try? syscall("read") { Glibc.read(wakePipe.read, &drained, drained.count) }
            return .woken
        }
        if descriptors.count > 1 && descriptors[1].revents != 0 { return .readable }
        return .timedOut
    }

    /// What one turn of a serial port's read loop brought.
    enum SerialRead {
        /// `count` bytes at the start of the buffer.
        case bytes(Int)
        case timedOut
        /// Woken, or the poll said readable and the read found nothing: nothing to do.
        case nothing
        /// The port failed or hung up (the USB adapter went away).
        case lost(String)
    }

    /// One turn of a serial adapter's loop: waits up to `timeoutUs` for the port, `wake()` or the
    /// timeout, and reads what came into `buffer`.
    func readSerial(_ fd: Int32, into buffer: inout [UInt8], timeoutUs: Int64) -> SerialRead {
        switch wait(fd: fd, timeoutUs: timeoutUs) {
        case .failed(let reason): return .lost(reason)
        case .woken: return .nothing
        case .timedOut: return .timedOut
        case .readable:
            switch Self.read(fd, into: &buffer) {
            case .failed(let reason): return .lost(reason)
            // A tty that reads end-of-file has hung up.
            case .end: return .lost("hung up")
            case .nothingYet: return .nothing
            case .bytes(let count): return .bytes(count)
            }
        }
    }

    static func read(_ fd: Int32, into buffer: inout [UInt8]) -> Read {
        do throws(SystemCallError) {
            let count = try syscall("read") { buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) } }
            return count > 0 ? .bytes(count) : .end
        } catch {
            return error.wouldBlock ? .nothingYet : .failed(error.message)
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
            do throws(SystemCallError) {
                offset += try syscall("write") { bytes[offset...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) } }
            } catch {
                return error.wouldBlock ? .full : .failed(error.message)
            }
        }
        return .all
    }

    /// Opens an evdev device for reading and grabs it (EVIOCGRAB): the keys are ours alone, so KEY_F1
    /// does not also switch the console and a badge number is not typed into a console login.
    static func openInputDevice(_ path: String) -> Result<Int32, DeviceError> {
        let opened = openDevice(path, flags: O_RDONLY)
        if case .success(let fd) = opened {
            // Fails harmlessly (ENOTTY) on a FIFO.
            _ = try? syscall("ioctl EVIOCGRAB") { ioctl(fd, evdevGrabRequest, 1) }
        }
        return opened
    }

    /// `EVIOCGRAB`: _IOW('E', 0x90, int).
    static let evdevGrabRequest: UInt = 0x4004_4590

    /// Whether `code` is set in the device's switch state (`EVIOCGSW`) or key state (`EVIOCGKEY`)
    /// now; nil where the file is no evdev device (a FIFO in tests): its next event says.
    static func inputState(_ fd: Int32, switches: Bool, code: UInt16) -> Bool? {
        // KEY_MAX is 0x2ff: 96 bytes hold every key's bit, and every switch's.
        var bits = [UInt8](repeating: 0, count: 96)
        // _IOC(_IOC_READ, 'E', 0x1b or 0x18, len).
        let request: UInt = (2 << 30) | (UInt(bits.count) << 16) | (0x45 << 8) | (switches ? 0x1b : 0x18)
        let read = bits.withUnsafeMutableBytes { buffer in try? syscall("ioctl EVIOCGSW/EVIOCGKEY") { ioctl(fd, request, buffer.baseAddress!) } }
        let index = Int(code)
        guard read != nil, index / 8 < bits.count else { return nil }
        return bits[index / 8] & (1 << (index % 8)) != 0
    }

    public static let baudRates: [Int: speed_t] = [
        1200: speed_t(B1200), 2400: speed_t(B2400), 4800: speed_t(B4800), 9600: speed_t(B9600),
        19200: speed_t(B19200), 38400: speed_t(B38400), 57600: speed_t(B57600), 115200: speed_t(B115200),
    ]

    /// Opens a serial port read-write and sets it raw 8N1 at `baud`.
    static func openSerialPort(_ path: String, baud: Int) -> Result<Int32, DeviceError> {
        let opened = openDevice(path, flags: O_RDWR)
        guard case .success(let fd) = opened else { return opened }
        var settings = termios()
        do throws(SystemCallError) {
            try syscall("tcgetattr") { tcgetattr(fd, &settings) }
        } catch {
            closeDescriptor(fd)
            return .failure(DeviceError("not a serial port", error))
        }
        cfmakeraw(&settings)
        // 8N1, no flow control, ignore modem lines (a missing cable must not hang writes), ignore
        // breaks and bytes with framing or parity errors (line noise).
        settings.c_cflag &= ~(tcflag_t(PARENB | CSTOPB | CSIZE) | tcflag_t(CRTSCTS))
        settings.c_cflag |= tcflag_t(CS8 | CLOCAL | CREAD)
        settings.c_iflag &= ~tcflag_t(IXON | IXOFF | IXANY)
        settings.c_iflag |= tcflag_t(IGNBRK | IGNPAR)
        let speed = baudRates[baud] ?? speed_t(B9600)
        cfsetispeed(&settings, speed)
        cfsetospeed(&settings, speed)
        do throws(SystemCallError) {
            try syscall("tcsetattr") { tcsetattr(fd, TCSANOW, &settings) }
        } catch {
            closeDescriptor(fd)
            return .failure(DeviceError("cannot configure the port", error))
        }
        return .success(fd)
    }

    /// Opens `path` non-blocking; refuses regular files, which would be read again from the start on every reopen.
    static func openDevice(_ path: String, flags: Int32) -> Result<Int32, DeviceError> {
        let fd: Int32
        do throws(SystemCallError) {
            fd = try syscall("open") { Glibc.open(path, flags | O_NONBLOCK | O_CLOEXEC | O_NOCTTY) }
        } catch {
            return .failure(DeviceError(error.message))
        }
        var info = stat()
        if (try? syscall("fstat", { fstat(fd, &info) })) != nil && (info.st_mode & S_IFMT) == S_IFREG {
            closeDescriptor(fd)
            return .failure(DeviceError("is a regular file, not a device or FIFO"))
        }
        return .success(fd)
    }
}

struct DeviceError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }

    /// A configuration call on an open device failed: `what` says which step.
    init(_ what: String, _ error: SystemCallError) { description = "\(what): \(error.message)" }
}
