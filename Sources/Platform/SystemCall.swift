#if canImport(Glibc)
import Glibc
#endif

/// A POSIX call that failed: which call, and errno with its text.
public struct SystemCallError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What the caller named the call (`poll`, `read`, `bind /run/taxiunitd/control.sock`).
    public let function: String
    public let code: Int32
    /// strerror's text, taken when the call failed.
    public let message: String

    public init(function: String, code: Int32) {
        self.function = function
        self.code = code
        message = String(cString: strerror(code))
    }

    /// A non-blocking descriptor has nothing for now (or no room): not a failure of the descriptor.
    public var wouldBlock: Bool { code == EAGAIN || code == EWOULDBLOCK }

    public var description: String { "\(function) failed: \(message)" }
}

/// Runs one POSIX call that returns -1 and sets errno on failure: retries it while a signal
/// interrupts it (EINTR), and turns any other failure into a `SystemCallError` named `function`.
///
/// errno is read straight after `body` returns, before anything else can run on this thread and
/// overwrite it. Never inlined into a caller whose code could run between the two.
@inline(never)
@discardableResult
public func syscall<Result: FixedWidthInteger>(_ function: @autoclosure () -> String, _ body: () -> Result) throws(SystemCallError) -> Result {
    while true {
        let result = body()
        guard result == -1 else { return result }
        let code = errno
        if code == EINTR { continue }
        throw SystemCallError(function: function(), code: code)
    }
}

/// Closes a descriptor. Not retried on EINTR: Linux has released the descriptor by then, and a retry
/// could close one another thread has just been given. Its result says nothing the caller can act on.
public func closeDescriptor(_ fd: Int32) {
    _ = close(fd)
}

/// Creates a fresh directory only this user can enter (mode 0700), under `base` with a random name
/// (`prefix-XXXXXX`) that nobody could have prepared beforehand, and returns its path.
public func makePrivateDirectory(in base: String, prefix: String) throws(SystemCallError) -> String {
    let parent = base.hasSuffix("/") ? base : base + "/"
    var template = Array((parent + prefix + "-XXXXXX").utf8CString)
    let (made, code) = template.withUnsafeMutableBufferPointer { buffer -> (String?, Int32) in
        guard let start = buffer.baseAddress, let made = mkdtemp(start) else { return (nil, errno) }
        return (String(cString: made), 0)
    }
    guard let made else { throw SystemCallError(function: "mkdtemp \(parent)", code: code) }
    return made
}

/// Creates `path` with `contents`, readable by this user only (mode 0600 from the first moment),
/// and synced: never over an existing file and never through a link (O_EXCL, O_NOFOLLOW). What it
/// made is removed again if writing fails.
public func createPrivateFile(at path: String, contents: [UInt8]) throws(SystemCallError) {
    let fd = try syscall("open \(path)") { open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600) }
    defer { closeDescriptor(fd) }
    do throws(SystemCallError) {
        try writeAll(contents, to: fd, path: path)
        try syscall("fsync \(path)") { fsync(fd) }
    } catch {
        _ = unlink(path)
        throw error
    }
}

/// Replaces `path` whole with `contents` and `mode`: written to `path.tmp` beside it, then
/// rename(2), so a reader never sees half a file (node_exporter's textfile collector skips the
/// temporary, whose name does not end in `.prom`). `mode` is set on the descriptor, past the umask.
public func replaceFile(at path: String, contents: [UInt8], mode: mode_t) throws(SystemCallError) {
    let temporary = path + ".tmp"
    let fd = try syscall("open \(temporary)") { open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0o600) }
    do throws(SystemCallError) {
        defer { closeDescriptor(fd) }
        try writeAll(contents, to: fd, path: temporary)
        try syscall("fchmod \(temporary)") { fchmod(fd, mode) }
    } catch {
        _ = unlink(temporary)
        throw error
    }
    do throws(SystemCallError) {
        try syscall("rename to \(path)") { rename(temporary, path) }
    } catch {
        _ = unlink(temporary)
        throw error
    }
}

/// At most the first `limit` bytes of `path`: a reader that refuses larger files learns the size
/// without the whole of one in memory. A failure names the call and its errno (`ENOENT`, `EACCES`, `ELOOP`).
public func readFile(at path: String, upTo limit: Int) throws(SystemCallError) -> [UInt8] {
    let fd = try syscall("open \(path)") { open(path, O_RDONLY | O_CLOEXEC) }
    defer { closeDescriptor(fd) }
    var bytes = [UInt8](repeating: 0, count: max(0, limit))
    var filled = 0
    while filled < bytes.count {
        let count = try bytes.withUnsafeMutableBytes { buffer in
            Result { () throws(SystemCallError) in try syscall("read \(path)") { read(fd, buffer.baseAddress! + filled, buffer.count - filled) } }
        }.get()
        if count == 0 { break }
        filled += count
    }
    bytes.removeSubrange(filled...)
    return bytes
}

private func writeAll(_ contents: [UInt8], to fd: Int32, path: String) throws(SystemCallError) {
    var offset = 0
    while offset < contents.count {
        offset += try syscall("write \(path)") { contents[offset...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } }
    }
}

/// `text` written whole to standard error: a short write goes on with the rest, EINTR is retried,
/// and a failure drops what is left (there is nowhere else to say it).
public func writeToStandardError(_ text: String) {
    var text = text
    text.withUTF8 { bytes in
        var offset = 0
        while offset < bytes.count {
            guard let written = try? syscall("write", { write(STDERR_FILENO, bytes.baseAddress! + offset, bytes.count - offset) }),
                written > 0
            else { return }
            offset += written
        }
    }
}

/// The size of the filesystem holding a path, and what an unprivileged writer may still use of it.
public struct FilesystemSpace: Sendable, Equatable {
    public var totalBytes: Int64
    /// Free blocks not kept for root (statvfs `f_bavail`): what the daemon's user may fill.
    public var availableBytes: Int64

    public init(totalBytes: Int64, availableBytes: Int64) {
        self.totalBytes = totalBytes
        self.availableBytes = availableBytes
    }
}

/// statvfs of the filesystem holding `path`.
public func filesystemSpace(of path: String) throws(SystemCallError) -> FilesystemSpace {
    var info = statvfs()
    try syscall("statvfs \(path)") { statvfs(path, &info) }
    func bytes(_ blocks: some BinaryInteger) -> Int64 {
        let (product, overflow) = Int64(clamping: blocks).multipliedReportingOverflow(by: Int64(clamping: info.f_frsize))
        return overflow ? .max : product
    }
    return FilesystemSpace(totalBytes: bytes(info.f_blocks), availableBytes: bytes(info.f_bavail))
}
