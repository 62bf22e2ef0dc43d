import CGPS
import Foundation
import Liveness
import Logging
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
/// (`gps_read` returns -1, or it cannot be reached) the thread closes, backs off and opens again:
/// the daemon never exits for this. The backoff is capped at `maxRetryDelayS` so that fixes flow
/// again within a few seconds of gpsd coming back (udev and package upgrades restart it).
///
/// Built against gpsd 3.22 (API 11). Only `mode`, `time`, coordinates and error estimates are read:
/// gpsd 3.23.1 renamed the `STATUS_*` constants, so validity never depends on `status`.
public final class GPSDConnection: @unchecked Sendable {
    public typealias EventHandler = @Sendable (GPSDEvent) -> Void

    /// The events, unless `deliverEvents(to:)` sends them elsewhere.
    public let events: AsyncStream<GPSDEvent>
    private let eventSink: AsyncStream<GPSDEvent>.Continuation
    /// Guarded by `state`; the reader thread takes its copy when it starts.
    private var eventHandler: EventHandler
    private let host: String
    private let port: Int
    private let minRetryDelayS: Double
    private let maxRetryDelayS: Double

    private let state = NSCondition()
    private var isStopping = false
    private var readerThread: Thread?
    private let readerFinished = DispatchSemaphore(value: 0)
    /// Beats each time round the reader loop, for the systemd watchdog.
    public let heartbeat = Heartbeat(name: "gpsd-reader", allowingSilenceS: Liveness.blockingConnectS)

    /// How long one `gps_waiting` blocks (at least 2 s, so an idle gpsd costs nothing): also how
    /// quickly `stop()` is noticed.
    static let waitMicroseconds: Int32 = 2_000_000

    public init(host: String, port: Int, minRetryDelayS: Double = 0.25, maxRetryDelayS: Double = 1) {
        self.host = host
        self.port = port
        self.minRetryDelayS = minRetryDelayS
        self.maxRetryDelayS = max(minRetryDelayS, maxRetryDelayS)
        let (events, eventSink) = AsyncStream.makeStream(of: GPSDEvent.self, bufferingPolicy: .bufferingNewest(1024))
        (self.events, self.eventSink) = (events, eventSink)
        eventHandler = { eventSink.yield($0) }
    }

    /// Hands every event to `handler` on the reader thread itself, instead of to `events`: for a
    /// consumer with a queue of its own (the engine), which spares each fix a hop through a task.
    /// Call before `start()`.
    public func deliverEvents(to handler: @escaping EventHandler) {
        state.withLock { eventHandler = handler }
    }

    public func start() {
        let thread = Thread { [self] in
            Liveness.nameCurrentThread("gpsd-reader")
            runReader(delivering: state.withLock { eventHandler })
            heartbeat.finished()
            readerFinished.signal()
        }
        readerThread = thread
        thread.start()
    }

    /// Returns once the reader thread has closed its gpsd socket.
    public func stop() {
        state.lock()
        let wasRunning = readerThread != nil && !isStopping
        isStopping = true
        state.broadcast()
        state.unlock()
        if wasRunning { readerFinished.wait() }
        eventSink.finish()
    }

    private var stopping: Bool {
        state.lock()
        defer { state.unlock() }
        return isStopping
    }

    private func waitBeforeRetry(_ delayS: Double) {
        state.lock()
        defer { state.unlock() }
        heartbeat.beat(allowingSilenceS: delayS + Liveness.slackS)
        let deadline = Date(timeIntervalSinceNow: delayS)
        while !isStopping && state.wait(until: deadline) {}
    }

    private func runReader(delivering deliver: EventHandler) {
        let data = UnsafeMutablePointer<gps_data_t>.allocate(capacity: 1)
        defer { data.deallocate() }
        var lastFailure: String?
        var retryDelayS = minRetryDelayS
        while !stopping {
            data.initialize(to: gps_data_t())
            heartbeat.beat(allowingSilenceS: Liveness.blockingConnectS)
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
                lastFailure = "gpsd refused the watch request"
                deliver(.disconnected(reason: lastFailure!))
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
    private func readReports(_ data: UnsafeMutablePointer<gps_data_t>, delivering deliver: EventHandler) -> String {
        var message = [CChar](repeating: 0, count: 8192)
        while !stopping {
            heartbeat.beat(allowingSilenceS: Double(Self.waitMicroseconds) / 1e6 + Liveness.slackS)
            errno = 0
            guard gps_waiting(data, Self.waitMicroseconds) else {
                // A timeout is normal (no receiver attached); a dead socket shows up as a failed read below.
                if errno != 0 && errno != EINTR && errno != EAGAIN { return "gpsd socket error: \(String(cString: strerror(errno)))" }
                continue
            }
            let count = message.withUnsafeMutableBufferPointer { buffer in
                gps_read(data, buffer.baseAddress, Int32(buffer.count))
            }
            if count == -1 { return "gpsd closed the connection" }
            // gps_read leaves the previous fix in place for SKY, DEVICE... reports: only TPV carries one.
            guard Self.isTPV(message) else { continue }
            deliver(.sample(Self.sample(from: data.pointee.fix)))
        }
        return "stopped"
    }

    static func isTPV(_ message: [CChar]) -> Bool {
        message.withUnsafeBufferPointer { buffer in
            strstr(buffer.baseAddress!, "\"class\":\"TPV\"") != nil
        }
    }

    static func sample(from fix: gps_fix_t) -> GPSSample {
        GPSSample(
            mode: Int(fix.mode),
            time: Double(fix.time.tv_sec) + Double(fix.time.tv_nsec) / 1e9,
            latitude: fix.latitude,
            longitude: fix.longitude,
            speed: fix.speed,
            track: fix.track,
            horizontalError: fix.eph
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
