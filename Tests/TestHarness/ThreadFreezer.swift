import Foundation

/// Stops ONE thread of a running process, as a thread wedged inside a C library would be, while its
/// other threads run on: a tracer seizes the thread with ptrace and interrupts it, and holds it for
/// as long as the tracer lives. Stopping the freezer lets the thread run again.
public final class ThreadFreezer: @unchecked Sendable {
    private let tracer: ChildProcess

    /// Freezes the thread of `pid` whose kernel name (`/proc/PID/task/TID/comm`) is `threadName`.
    public init(pid: pid_t, threadName: String, logPath: String) async throws {
        let script = """
            import ctypes, os, sys, time
            pid, name = sys.argv[1], sys.argv[2]
            names = {t: open(f"/proc/{pid}/task/{t}/comm").read().strip() for t in os.listdir(f"/proc/{pid}/task")}
            tids = [t for t, n in names.items() if n == name]
            if len(tids) != 1: sys.exit(f"want one thread named {name}, found {names}")
            libc = ctypes.CDLL(None, use_errno=True)
            libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
            PTRACE_SEIZE, PTRACE_INTERRUPT = 0x4206, 0x4207
            tid = int(tids[0])
            if libc.ptrace(PTRACE_SEIZE, tid, None, None) != 0 or libc.ptrace(PTRACE_INTERRUPT, tid, None, None) != 0:
                sys.exit(f"ptrace failed: errno {ctypes.get_errno()}")
            os.waitpid(tid, 0x40000000)  # __WALL: the tracee is a thread, not a child
            print(f"frozen {name} {tid}", flush=True)
            while True: time.sleep(60)
            """
        tracer = try ChildProcess("python3", ["-c", script, String(pid), threadName], logPath: logPath)
        try await waitUntil("thread \(threadName) frozen", timeoutS: 10, detail: { self.tracer.log }) {
            if !tracer.isRunning { throw HarnessError("cannot freeze \(threadName): \(tracer.log)") }
            return tracer.log.contains("frozen \(threadName)")
        }
    }

    /// The tracer's exit detaches it, and the thread runs again.
    public func thaw() { tracer.stop() }

    deinit { tracer.stop() }
}
