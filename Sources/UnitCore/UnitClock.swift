import TaxiProtocol

/// What the shell read from the machine's clocks at one moment. The core has no clock of its own.
public struct ClockSample: Sendable, Equatable {
    /// System (wall) time, seconds since the Unix epoch.
    public var systemS: Double
    /// Whether the kernel says the system time is synchronised (NTP, or something else that set it).
    public var systemSynchronised: Bool
    /// A monotonic clock, seconds from any origin; never jumps.
    public var monotonicS: Double

    public init(systemS: Double, systemSynchronised: Bool, monotonicS: Double) {
        self.systemS = systemS
        self.systemSynchronised = systemSynchronised
        self.monotonicS = monotonicS
    }
}

/// Which clock the unit's time comes from.
public enum ClockSource: String, Sendable, Codable, CaseIterable {
    /// The system clock, synchronised.
    case system
    /// GPS time of the last valid fix plus monotonic time since.
    case gps
    /// The system clock although it is not synchronised: no valid fix has been seen yet.
    case unsynchronised
}

public struct ClockReading: Sendable, Equatable {
    /// Seconds since the Unix epoch.
    public var time: Double
    public var source: ClockSource

    public init(time: Double, source: ClockSource) {
        self.time = time
        self.source = source
    }

    public var milliseconds: Int64 { Int64(millisecondsOf: time) ?? (time > 0 ? .max : .min) }
}

/// The unit's wall clock for messages. Boards without a real-time clock boot in 1970 and may never
/// reach an NTP server, so the GPS is the fallback time source.
public struct UnitClock: Sendable, Equatable {
    private var lastFixTimeS: Double?
    private var lastFixMonotonicS: Double = 0

    public init() {}

    /// A valid fix with GPS time `fixTimeS` arrived when the monotonic clock read `sample.monotonicS`.
    public mutating func fixAccepted(fixTimeS: Double, at sample: ClockSample) {
        lastFixTimeS = fixTimeS
        lastFixMonotonicS = sample.monotonicS
    }

    public func reading(at sample: ClockSample) -> ClockReading {
        if sample.systemSynchronised { return ClockReading(time: sample.systemS, source: .system) }
        guard let lastFixTimeS else { return ClockReading(time: sample.systemS, source: .unsynchronised) }
        return ClockReading(time: lastFixTimeS + (sample.monotonicS - lastFixMonotonicS), source: .gps)
    }
}
