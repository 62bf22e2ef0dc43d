import DriverKeys
import Foundation
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// A FIFO standing in for `/dev/input/eventN` (test machines have none): the test writes binary
/// `input_event` records into it, the unit reads them as from a keypad.
public final class EvdevFIFO: @unchecked Sendable {
    public let path: String
    private var writer: Int32 = -1

    public init(path: String) throws {
        self.path = path
        try create()
    }

    /// Makes the FIFO (again): the device appears.
    public func create() throws {
        guard mkfifo(path, 0o600) == 0 else { throw HarnessError("mkfifo \(path): \(String(cString: strerror(errno)))") }
    }

    /// Opens the writing end once the unit has opened the reading end.
    public func connect(timeoutS: Double = 10) async throws {
        try await waitUntil("a reader on \(path)", timeoutS: timeoutS) {
            writer = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
            return writer >= 0
        }
    }

    /// Writes raw bytes: whole records, or deliberately a part of one.
    public func send(_ bytes: [UInt8]) throws {
        let written = bytes.withUnsafeBytes { write(writer, $0.baseAddress, $0.count) }
        guard written == bytes.count else { throw HarnessError("short write to \(path): \(written)") }
    }

    /// The device goes away: the path disappears, then the writer closes (in the other order the
    /// reader could reopen the old FIFO in between and wait on it forever).
    public func remove() {
        unlink(path)
        if writer >= 0 { close(writer) }
        writer = -1
    }

    deinit { remove() }
}

extension EvdevFIFO {
    /// A badge reader typing `number` and ENTER: key down and up, framed as a keyboard frames them.
    public static func badgeTyped(_ number: String) -> [UInt8] {
        (number.map { "KEY_\($0)" } + ["KEY_ENTER"]).flatMap { name -> [UInt8] in
            let code = EvdevKeyNames.code(named: name)!
            return [1, 0].flatMap { value -> [UInt8] in
                InputEventDecoder.encode(InputEventRecord(type: 1, code: code, value: value))
                    + InputEventDecoder.encode(InputEventRecord(type: 0, code: 0, value: 0))
            }
        }
    }
}

/// Keeps every log message, so tests can count what an adapter reported.
public final class LogRecorder: @unchecked Sendable {
    private let lock = NSLock()
    private var recorded: [(level: Logger.Level, message: String)] = []

    public init() {}

    public var logger: Logger {
        Logger(label: "test") { _ in Handler(recorder: self) }
    }

    public var messages: [String] { lock.withLock { recorded.map(\.message) } }

    public func count(containing text: String) -> Int { messages.filter { $0.contains(text) }.count }

    func append(_ level: Logger.Level, _ message: String) {
        lock.withLock { recorded.append((level, message)) }
    }

    struct Handler: LogHandler {
        let recorder: LogRecorder
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            recorder.append(event.level, event.message.description)
        }
    }
}
