import Foundation
import Liveness
import Platform
import Synchronization
import Testing

/// The POSIX layer the adapters share: the errno wrapper, the blocking worker, private directories.
@Suite struct SystemCallTests {
    @Test func aFailureCarriesTheCallErrnoAndItsText() {
        var byte: UInt8 = 0
        #expect(throws: SystemCallError(function: "read", code: EBADF)) { try syscall("read") { read(-1, &byte, 1) } }
        let error = SystemCallError(function: "read", code: EBADF)
        #expect(error.message == "Bad file descriptor")
        #expect(error.description == "read failed: Bad file descriptor")
        #expect(!error.wouldBlock)
        #expect(SystemCallError(function: "recv", code: EAGAIN).wouldBlock)
    }

    @Test func aSuccessReturnsTheResult() throws {
        var ends: [Int32] = [-1, -1]
        try syscall("pipe") { pipe(&ends) }
        defer { ends.forEach(closeDescriptor) }
        var bytes: [UInt8] = [1, 2, 3]
        #expect(try syscall("write") { write(ends[1], &bytes, 3) } == 3)
        #expect(try syscall("read") { read(ends[0], &bytes, 3) } == 3)
    }

    /// A signal that interrupts a blocking read (no SA_RESTART) does not end it: the read is retried.
    @Test func aCallInterruptedByASignalIsRetried() async throws {
        var ends: [Int32] = [-1, -1]
        try syscall("pipe") { pipe(&ends) }
        defer { ends.forEach(closeDescriptor) }
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { _ in }
        action.sa_flags = 0
        sigemptyset(&action.sa_mask)
        var previous = sigaction()
        sigaction(SIGUSR2, &action, &previous)
        defer { sigaction(SIGUSR2, &previous, nil) }

        let reader = ends[0]
        let thread = Locked<pthread_t?>(nil)
        let result = Locked<Result<Int, SystemCallError>?>(nil)
        // A thread of its own: a blocking read must not hold one of the cooperative pool's.
        Thread.detachNewThread {
            thread.withLock { $0 = pthread_self() }
            var byte: UInt8 = 0
            let outcome = Result { () throws(SystemCallError) in try syscall("read") { read(reader, &byte, 1) } }
            result.withLock { $0 = outcome }
        }
        while thread.withLock({ $0 }) == nil { try await Task.sleep(for: .milliseconds(5)) }
        try await Task.sleep(for: .milliseconds(100))
        if let target = thread.withLock({ $0 }) { pthread_kill(target, SIGUSR2) }
        try await Task.sleep(for: .milliseconds(100))
        #expect(result.withLock { $0 } == nil, "still reading after the signal")
        var byte: UInt8 = 7
        try syscall("write") { write(ends[1], &byte, 1) }
        while result.withLock({ $0 }) == nil { try await Task.sleep(for: .milliseconds(5)) }
        #expect(try result.withLock { $0 }?.get() == 1)
    }

    /// statvfs as the store's upkeep reads it: sizes in bytes, and a missing path named in the error.
    @Test func theFilesystemSpaceIsInBytes() throws {
        let temporary = try filesystemSpace(of: NSTemporaryDirectory())
        let expected = try FileManager.default.attributesOfFileSystem(forPath: NSTemporaryDirectory())
        #expect(temporary.totalBytes == (expected[.systemSize] as? NSNumber)?.int64Value)
        #expect(temporary.availableBytes >= 0 && temporary.availableBytes <= temporary.totalBytes)
        #expect(throws: SystemCallError(function: "statvfs /no/such/dir", code: ENOENT)) { try filesystemSpace(of: "/no/such/dir") }
    }

    @Test func aPrivateDirectoryIsFreshAndOnlyOurs() throws {
        let base = NSTemporaryDirectory()
        let first = try makePrivateDirectory(in: base, prefix: "platform-test")
        let second = try makePrivateDirectory(in: base, prefix: "platform-test")
        defer { for path in [first, second] { try? FileManager.default.removeItem(atPath: path) } }
        #expect(first != second)
        #expect(first.hasPrefix(base + (base.hasSuffix("/") ? "" : "/") + "platform-test-"))
        var info = stat()
        try syscall("stat") { stat(first, &info) }
        #expect(info.st_mode & S_IFMT == S_IFDIR)
        #expect(info.st_mode & 0o777 == 0o700)
        #expect(info.st_uid == getuid())
        #expect(throws: SystemCallError.self) { try makePrivateDirectory(in: base + "/no-such-directory-\(getpid())", prefix: "x") }
    }

    /// A bounded read says what went wrong by errno, so `--check` never calls a loop "permission denied".
    @Test func aBoundedReadStopsAtItsLimitAndNamesTheErrno() throws {
        let directory = try makePrivateDirectory(in: NSTemporaryDirectory(), prefix: "platform-read")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = directory + "/ten"
        try createPrivateFile(at: file, contents: Array(0..<10))
        #expect(try readFile(at: file, upTo: 4) == [0, 1, 2, 3])
        #expect(try readFile(at: file, upTo: 100) == Array(0..<10))
        #expect(try readFile(at: file, upTo: 0) == [])
        try syscall("symlink") { symlink(directory + "/loop", directory + "/loop") }
        let problems: [(String, Int32)] = [(directory + "/missing", ENOENT), (directory + "/loop", ELOOP), (directory, EISDIR)]
        for (path, code) in problems {
            #expect(throws: SystemCallError.self) { try readFile(at: path, upTo: 4) }
            do { _ = try readFile(at: path, upTo: 4) } catch { #expect(error.code == code, "\(path): \(error)") }
        }
    }
}

@Suite struct BlockingWorkerTests {
    /// The kernel's name of each thread of this process.
    static func threadNames() -> [String] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.compactMap { try? String(contentsOfFile: "/proc/self/task/\($0)/comm", encoding: .utf8) }
            .map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
    }

    @Test func runsOnANamedThreadUntilStoppedAndIsJoined() async throws {
        let heartbeat = Heartbeat(name: "test-worker", allowingSilenceS: 1)
        let worker = BlockingWorker(name: "test-worker-\(getpid() % 1000)", heartbeat: heartbeat)
        let rounds = Locked(0)
        let returned = Locked(false)
        worker.start {
            while !worker.isStopping {
                worker.beat(allowingSilenceS: 1)
                rounds.withLock { $0 += 1 }
                worker.sleep(0.01, beatAllowingSilenceS: 1)
            }
            returned.withLock { $0 = true }
        }
        while rounds.withLock({ $0 }) < 3 { try await Task.sleep(for: .milliseconds(5)) }
        #expect(Self.threadNames().contains(worker.name))
        #expect(heartbeat.current.allowedSilence == .seconds(1))

        worker.stop()
        #expect(returned.withLock { $0 }, "stop returns once the loop has")
        #expect(worker.isStopping)
        #expect(heartbeat.current.allowedSilence == nil, "a thread stopped for good is not wedged")
        // The thread exits just after its loop returns.
        let gone = ContinuousClock.now + .seconds(2)
        while Self.threadNames().contains(worker.name) && ContinuousClock.now < gone { try await Task.sleep(for: .milliseconds(10)) }
        #expect(!Self.threadNames().contains(worker.name))
    }

    @Test func stopEndsASleepAtOnceAndRunsTheWake() async throws {
        let worker = BlockingWorker(name: "test-sleeper")
        let slept = Locked<Bool?>(nil)
        worker.start { slept.withLock { $0 = worker.sleep(60, beatAllowingSilenceS: 70) } }
        let woken = Locked(false)
        let start = ContinuousClock.now
        // Give the thread time to be asleep; stop must not wait out the minute.
        try await Task.sleep(for: .milliseconds(100))
        worker.stop { woken.withLock { $0 = true } }
        #expect(ContinuousClock.now - start < .seconds(5))
        #expect(slept.withLock { $0 } == false, "the sleep says it was asked to stop")
        #expect(woken.withLock { $0 })
    }

    /// A worker stuck in a blocking call is abandoned, not joined; it ends when the call returns.
    @Test func abandonDoesNotWaitAndTheLoopEndsOnItsOwn() async throws {
        let worker = BlockingWorker(name: "test-abandoned")
        let release = DispatchSemaphore(value: 0)
        let ended = Locked(false)
        worker.start {
            release.wait()
            ended.withLock { $0 = !worker.sleep(60, beatAllowingSilenceS: 70) }
        }
        worker.abandon()
        #expect(worker.isStopping)
        release.signal()
        while !ended.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(5)) }
    }

    @Test func aWorkerStoppedBeforeItStartedNeverRuns() async throws {
        let worker = BlockingWorker(name: "test-never")
        let ran = Locked(false)
        worker.stop()
        worker.start { ran.withLock { $0 = true } }
        try await Task.sleep(for: .milliseconds(50))
        #expect(!ran.withLock { $0 })
    }
}

/// A value shared with the threads a test starts (a `Mutex` cannot be captured by their closures).
final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>

    init(_ value: Value) { mutex = Mutex(value) }

    func withLock<Result: Sendable>(_ body: (inout Value) -> Result) -> Result { mutex.withLock { body(&$0) } }
}
