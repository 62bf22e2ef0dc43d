import CGPS
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import Liveness
import Logging
import Platform
import Synchronization
import UnitCore

public enum GPSDEvent: Sendable, Equatable {
    case connected
    case disconnected(reason: String)
    case sample(GPSSample)
}

/// The libgps adapter. All unsafe code for gpsd lives in this file.
///
/// libgps reads block, so they run on one dedicated thread that hands TPV reports to `events`; it
/// reads whenever data is there, so gpsd never drops us as a slow client. When gpsd goes away
/// (it closes the socket, or it cannot be reached) the thread closes, backs off and opens again:
/// the daemon never exits for this. The backoff is capped at `maxRetryDelayS` so that fixes flow
/// again within a few seconds of gpsd coming back (udev and package upgrades restart it).
///
/// Built against gpsd 3.22 (API 11). Only `mode`, `time`, coordinates and error estimates are read:
/// gpsd 3.23.1 renamed the `STATUS_*` constants, so validity never depends on `status`.
public final class GPSDConnection: BackgroundAdapter {
    public typealias EventHandler = @Sendable (GPSDEvent) -> Void

    /// The events, unless `deliverEvents(to:)` sends them elsewhere.
    public let events: AsyncStream<GPSDEvent>
    private let eventSink: AsyncStream<GPSDEvent>.Continuation
    /// The reader thread takes its copy when it starts.
    private let eventHandler: Platform.EventHandler<GPSDEvent>
    private let host: String
    private let port: Int
    private let minRetryDelayS: Double
    private let maxRetryDelayS: Double

    /// Beats each time round the reader loop, for the systemd watchdog.
    public let heartbeat = Heartbeat(name: "gpsd-reader", allowingSilenceS: Liveness.blockingConnectS)
    /// The reader thread.
    private let worker: BlockingWorker

    /// How long one wait for gpsd's data blocks (at least 2 s, so an idle gpsd costs nothing): also how
    /// quickly `stop()` is noticed.
    static let waitMilliseconds: Int32 = 2000

    public init(host: String, port: Int, minRetryDelayS: Double = 0.25, maxRetryDelayS: Double = 1) {
        self.host = host
        self.port = port
        self.minRetryDelayS = minRetryDelayS
        self.maxRetryDelayS = max(minRetryDelayS, maxRetryDelayS)
        let (events, eventSink) = AsyncStream.makeStream(of: GPSDEvent.self, bufferingPolicy: .bufferingNewest(1024))
        (self.events, self.eventSink) = (events, eventSink)
        eventHandler = Platform.EventHandler { eventSink.yield($0) }
        worker = BlockingWorker(name: "gpsd-reader", heartbeat: heartbeat)
    }

    /// Hands every event to `handler` on the reader thread itself, instead of to `events`: for a
    /// consumer with a queue of its own (the engine), which spares each fix a hop through a task.
    /// Call before `start()`.
    public func deliverEvents(to handler: @escaping EventHandler) {
        eventHandler.replace(with: handler)
    }

    public func start() {
        worker.start { [self] in runReader(delivering: eventHandler.deliver) }
    }

    /// Returns once the reader thread has closed its gpsd socket (within one wait for data).
    public func stop() {
        worker.stop()
        eventSink.finish()
    }

    private var stopping: Bool { worker.isStopping }

    private func waitBeforeRetry(_ delayS: Double) {
        worker.sleep(delayS, beatAllowingSilenceS: delayS + Liveness.slackS)
    }

    private func runReader(delivering deliver: EventHandler) {
        let data = UnsafeMutablePointer<gps_data_t>.allocate(capacity: 1)
        defer { data.deallocate() }
        var lastFailure: String?
        var retryDelayS = minRetryDelayS
        while !stopping {
            data.initialize(to: gps_data_t())
            worker.beat(allowingSilenceS: Liveness.blockingConnectS)
            guard gps_open(host, String(port), data) == 0 else {
                let reason = "cannot reach gpsd at \(host):\(port): \(String(cString: gps_errstr(errno)))"
                if reason != lastFailure { deliver(.disconnected(reason: reason)) }
                lastFailure = reason
                waitBeforeRetry(retryDelayS)
                retryDelayS = min(retryDelayS * 2, maxRetryDelayS)
                continue
            }
            lastFailure = nil
            retryDelayS = minRetryDelayS
            guard gps_stream(data, UInt32(WATCH_ENABLE | WATCH_JSON), nil) == 0 else {
                gps_close(data)
                let reason = "gpsd refused the watch request"
                lastFailure = reason
                deliver(.disconnected(reason: reason))
                waitBeforeRetry(retryDelayS)
                continue
            }
            deliver(.connected)
            let reason = readReports(data, delivering: deliver)
            gps_close(data)
            deliver(.disconnected(reason: reason))
            lastFailure = reason
            if !stopping { waitBeforeRetry(retryDelayS) }
        }
    }

    /// Reads until gpsd closes the socket or we are stopped; returns why it ended.
    ///
    /// Reads gpsd's socket itself rather than through `gps_read`, which takes one object per call
    /// (a wait and a read each) and parses every one: each cycle brings a SKY report with its list
    /// of satellites, and often GST, DEVICE... Only TPV carries a fix, so only TPV lines go through
    /// libgps's parser (`gps_unpack`, what `gps_read` calls on each line), and every line one read
    /// brought is handled before waiting again.
    private func readReports(_ data: UnsafeMutablePointer<gps_data_t>, delivering deliver: EventHandler) -> String {
        let socket = data.pointee.gps_fd
        var lines = LineBuffer()
        while !stopping {
            worker.beat(allowingSilenceS: Double(Self.waitMilliseconds) / 1e3 + Liveness.slackS)
            var ready = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            do throws(SystemCallError) {
                // A timeout is normal (no receiver attached).
                guard try syscall("poll", { poll(&ready, 1, Self.waitMilliseconds) }) > 0 else { continue }
                if try lines.read(from: socket) == 0 { return "gpsd closed the connection" }
            } catch {
                if error.wouldBlock { continue }
                return "gpsd socket error: \(error.message)"
            }
            lines.forEachLine { line in
                guard Self.isTPV(line), gps_unpack(line, data) == 0 else { return }
                deliver(.sample(Self.sample(from: data.pointee.fix)))
            }
        }
        return "stopped"
    }

    /// gpsd's stream, cut into lines: what one read brought, and the start of a line it cut off.
    struct LineBuffer {
        /// Far more than any gpsd report (GPS_JSON_RESPONSE_MAX is 4096): a longer line is dropped.
        static let capacity = 65_536
        private var bytes = [CChar](repeating: 0, count: Self.capacity + 1)
        private var filled = 0

        /// Appends what `socket` has; returns how many bytes that was (0: the end of the stream).
        mutating func read(from socket: Int32) throws(SystemCallError) -> Int {
            if filled == Self.capacity { filled = 0 }
            let count = try bytes.withUnsafeMutableBufferPointer { buffer throws(SystemCallError) in
                try syscall("read") { Glibc.read(socket, buffer.baseAddress! + filled, Self.capacity - filled) }
            }
            filled += count
            return count
        }

        /// Hands over each complete line, NUL-terminated in place of its newline, and keeps the rest.
        mutating func forEachLine(_ body: (UnsafeMutablePointer<CChar>) -> Void) {
            let filled = self.filled
            let consumed = bytes.withUnsafeMutableBufferPointer { buffer -> Int in
                let base = buffer.baseAddress!
                var start = 0
                while start < filled, let newline = memchr(base + start, 0x0A, filled - start) {
                    let end = newline.assumingMemoryBound(to: CChar.self)
                    end.pointee = 0
                    body(base + start)
                    start = end - base + 1
                }
                if start > 0 && start < filled { memmove(base, base + start, filled - start) }
                return start
            }
            self.filled -= consumed
        }
    }

    /// `line`: one NUL-terminated gpsd report.
    static func isTPV(_ line: UnsafePointer<CChar>) -> Bool {
        strstr(line, "\"class\":\"TPV\"") != nil
    }

    static func sample(from fix: gps_fix_t) -> GPSSample {
        GPSSample(
            mode: Int(fix.mode),
            time: Double(fix.time.tv_sec) + Double(fix.time.tv_nsec) / 1e9,
            latitude: fix.latitude,
            longitude: fix.longitude,
            speed: fix.speed,
            track: fix.track,
            horizontalError: fix.eph,
            altitude: fix.altMSL
        )
    }

    /// Decodes one gpsd JSON line with libgps's own parser (what `gps_read` does to each line).
    public static func unpack(_ line: String) -> GPSSample? {
        let data = UnsafeMutablePointer<gps_data_t>.allocate(capacity: 1)
        defer { data.deallocate() }
        data.initialize(to: gps_data_t())
        var bytes = Array(line.utf8CString)
        let status = bytes.withUnsafeMutableBufferPointer { gps_unpack($0.baseAddress, data) }
        guard status == 0, isTPV(bytes) else { return nil }
        return sample(from: data.pointee.fix)
    }
}
