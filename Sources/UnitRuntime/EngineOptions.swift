import Logging

/// What the daemon hands the engine beyond its adapters.
public struct EngineOptions: Sendable {
    /// The store could not be opened and this volatile one is used instead (`status`, `health`).
    public var volatileStore: String?
    /// The log level of every logger, for `taxiunitctl log-level`; nil: not adjustable.
    public var logLevel: LogLevelControl?
    /// The swift-metrics backend the telemetry is read from; nil: metrics are recorded nowhere.
    public var telemetry: TelemetryRegistry?

    public init(volatileStore: String? = nil, logLevel: LogLevelControl? = nil, telemetry: TelemetryRegistry? = nil) {
        self.volatileStore = volatileStore
        self.logLevel = logLevel
        self.telemetry = telemetry
    }
}

/// Reads and sets the level the daemon's log handlers follow.
public struct LogLevelControl: Sendable {
    public var current: @Sendable () -> Logger.Level
    public var set: @Sendable (Logger.Level) -> Void

    public init(current: @escaping @Sendable () -> Logger.Level, set: @escaping @Sendable (Logger.Level) -> Void) {
        self.current = current
        self.set = set
    }
}
