import Logging
import Platform
import Synchronization

/// swift-log to stderr, one line per entry, each prefixed with its syslog priority (`<3>` error …
/// `<7>` debug). journald reads the prefix, strips it and keeps the level, so `journalctl -p warning`
/// works; it adds the timestamp itself, so lines carry none.
///
/// Warnings and worse are rate-limited per identical line (same label, level, message and
/// metadata): one per `repeatWindow`, the next one carrying the count of those swallowed.
public struct JournalLogHandler: LogHandler {
    /// A level set on this handler, else the output's (which `taxiunitctl log-level` changes).
    private var ownLevel: Logger.Level?
    public var logLevel: Logger.Level {
        get { ownLevel ?? output.level }
        set { ownLevel = newValue }
    }
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    private let label: String
    private let output: JournalOutput

    public init(label: String, level: Logger.Level, output: JournalOutput) {
        self.label = label
        ownLevel = level
        self.output = output
    }

    /// A handler that follows `output.level`, also when it changes later.
    public init(label: String, output: JournalOutput) {
        self.label = label
        self.output = output
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { $1 } }
        if let explicit = event.metadata { merged.merge(explicit) { $1 } }
        if let error = event.error { merged["error"] = "\(error)" }
        let text = Self.format(label: label, level: event.level, message: "\(event.message)", metadata: merged)
        output.write(text, priority: Self.priority(event.level), limited: event.level >= .warning)
    }

    /// syslog(3) priorities, as sd-daemon(3) defines the prefixes.
    public static func priority(_ level: Logger.Level) -> Int {
        switch level {
        case .critical: 2
        case .error: 3
        case .warning: 4
        case .notice: 5
        case .info: 6
        case .debug, .trace: 7
        }
    }

    static func format(label: String, level: Logger.Level, message: String, metadata: Logger.Metadata) -> String {
        let fields = metadata.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        let line = ([label + ":", message] + fields).joined(separator: " ")
        // One entry must stay one journal line.
        return line.split(whereSeparator: \.isNewline).joined(separator: " ")
    }
}

/// The shared sink of every logger: serialises writes and owns the repeat limiter.
public final class JournalOutput: Sendable {
    /// Held while a line is written too, so lines never interleave.
    private let limiter: Mutex<RepeatLimiter<ContinuousClock.Instant>>
    private let write: @Sendable (String) -> Void
    private let sharedLevel: Mutex<Logger.Level>

    public init(
        level: Logger.Level = .info, repeatWindow: Duration = .seconds(60),
        write: @escaping @Sendable (String) -> Void = JournalOutput.standardError
    ) {
        sharedLevel = Mutex(level)
        limiter = Mutex(RepeatLimiter(window: repeatWindow))
        self.write = write
    }

    /// The level of every handler made without one of its own. Read at every log call: a lock of
    /// its own, so that a level check never waits for a line being written.
    public var level: Logger.Level {
        get { sharedLevel.withLock { $0 } }
        set { sharedLevel.withLock { $0 = newValue } }
    }

    public static let standardError: @Sendable (String) -> Void = { line in
        writeToStandardError(line)
    }

    func write(_ text: String, priority: Int, limited: Bool) {
        limiter.withLock { limiter in
            var line = text
            if limited {
                switch limiter.record("\(priority) \(text)", at: .now) {
                case .suppress:
                    return
                case .emit(let suppressed) where suppressed > 0:
                    line += " (\(suppressed) identical lines suppressed since the last one)"
                case .emit:
                    break
                }
            }
            write("<\(priority)>\(line)\n")
        }
    }
}
