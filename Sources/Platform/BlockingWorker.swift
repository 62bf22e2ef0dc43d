import CTaxiUnitLinux
import Dispatch
#if canImport(Glibc)
import Glibc
#endif
import Liveness
import Synchronization

/// One named thread for a blocking loop (a C library's, or a poll on descriptors): started once,
/// asked to stop, and joined. The loop checks `isStopping` each time round; `stop(wake:)` sets it,
/// wakes the loop out of what it blocks in, and waits until it has returned.
///
/// A thread the systemd watchdog watches gets a `Heartbeat`: the loop beats it each time round (with
/// how long it may stay silent), `sleep` beats it while waiting, and `stop` marks it finished, so a
/// thread that ended for good is not taken for a wedged one.
public final class BlockingWorker: Sendable {
    /// The thread's kernel name (15 bytes at most are kept), as `top -H` and the tests' ThreadFreezer see it.
    public let name: String
    public let heartbeat: Heartbeat?

    private let phase = Mutex(Phase.idle)
    /// Signalled once, by `stop`/`abandon`: ends a `sleep` early.
    private let stopRequested = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)

    private enum Phase {
        case idle
        case running
        case stopping
    }

    public init(name: String, heartbeat: Heartbeat? = nil) {
        self.name = name
        self.heartbeat = heartbeat
    }

    /// Runs `body` on a new thread of its own. A worker runs once: a later call does nothing, and
    /// so does one after `stop`.
    public func start(_ body: @escaping @Sendable () -> Void) {
        let starts = phase.withLock { phase in
            guard phase == .idle else { return false }
            phase = .running
            return true
        }
        guard starts else { return }
        let name = name
        let finished = finished
        // Detached: `stop` joins it through `finished`, and an abandoned one ends on its own.
        detachThread {
            _ = CTaxiUnitLinux_nameCurrentThread(String(name.prefix(15)))
            body()
            finished.signal()
        }
    }

    /// True once `stop` or `abandon` was called: the loop returns as soon as it sees it.
    public var isStopping: Bool {
        phase.withLock { $0 == .stopping }
    }

    /// Asks the loop to return, runs `wake` (which makes a blocking call return: shut a socket down,
    /// write to a wake pipe), and waits until the loop has returned. Returns at once if it never ran.
    public func stop(wake: () -> Void = {}) {
        let running = phase.withLock { phase in
            defer { phase = .stopping }
            return phase == .running
        }
        guard running else { return }
        stopRequested.signal()
        wake()
        finished.wait()
        heartbeat?.finished()
    }

    /// Asks the loop to return without waiting for it: for a thread stuck in a blocking call, which is
    /// replaced by a fresh worker and ends whenever the call returns. Its heartbeat is left as it is
    /// (the replacement may share it).
    public func abandon() {
        let running = phase.withLock { phase in
            defer { phase = .stopping }
            return phase == .running
        }
        if running { stopRequested.signal() }
    }

    /// Beats the heartbeat: the loop promises to come round again within `allowingSilenceS`.
    public func beat(allowingSilenceS: Double) {
        heartbeat?.beat(allowingSilenceS: allowingSilenceS)
    }

    /// Waits `seconds` on the worker's own thread, returning early once the worker is asked to stop.
    /// Beats at least once a second meanwhile, each beat allowing `allowingSilenceS`, so a long
    /// backoff never looks like a wedge. Returns false if it was asked to stop.
    @discardableResult
    public func sleep(_ seconds: Double, beatAllowingSilenceS allowingSilenceS: Double) -> Bool {
        // A day at most: the backoffs that call this are minutes, and a bound keeps the conversion exact.
        let bounded = seconds.isNaN ? 0 : min(max(0, seconds), 86_400)
        let deadline = ContinuousClock.now + .milliseconds(Int64((bounded * 1000).rounded()))
        while true {
            beat(allowingSilenceS: allowingSilenceS)
            let now = ContinuousClock.now
            guard now < deadline else { return !isStopping }
            // The semaphore takes a dispatch time; only the slice's length crosses over.
            let (_, attoseconds) = min(deadline - now, .milliseconds(999)).components
            if stopRequested.wait(timeout: .now() + .nanoseconds(Int(attoseconds / 1_000_000_000))) == .success {
                // Kept signalled: every later sleep of this worker returns at once too.
                stopRequested.signal()
                return false
            }
        }
    }
}

/// A detached POSIX thread running `body`: what Foundation's `Thread.detachNewThread` does, without
/// linking Foundation (bench/README.md, "Footprint").
public func detachThread(_ body: @escaping @Sendable () -> Void) {
    final class Start: Sendable {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }
    let start = Unmanaged.passRetained(Start(body)).toOpaque()
    var attributes = pthread_attr_t()
    pthread_attr_init(&attributes)
    defer { pthread_attr_destroy(&attributes) }
    pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
    var thread = pthread_t()
    let result = pthread_create(&thread, &attributes, { start in
        Unmanaged<Start>.fromOpaque(start!).takeRetainedValue().body()
        return nil
    }, start)
    // As with Foundation's Thread: out of threads at this point, the unit cannot run; systemd restarts it.
    precondition(result == 0, "pthread_create failed: \(String(cString: strerror(result)))")
}
