import TaxiProtocol

/// What the shell read from the machine's clocks at one moment. The core has no clock of its own.
public struct ClockSample: Sendable, Equatable {
    /// System (wall) time.
    public var system: UnitTime
    /// Whether the kernel says the system time is synchronised (NTP, or something else that set it).
    public var systemSynchronised: Bool
    /// A monotonic clock, from any origin; never jumps.
    public var monotonic: Duration

    public init(system: UnitTime, systemSynchronised: Bool, monotonic: Duration) {
        self.system = system
        self.systemSynchronised = systemSynchronised
        self.monotonic = monotonic
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
    public var time: UnitTime
    public var source: ClockSource

    public init(time: UnitTime, source: ClockSource) {
        self.time = time
        self.source = source
    }
}

/// The unit's wall clock for messages. Boards without a real-time clock boot in 1970 and may never
/// reach an NTP server, so the GPS is the fallback time source.
public struct UnitClock: Sendable, Equatable {
    private var lastFixTime: UnitTime?
    private var lastFixMonotonic: Duration = .zero

    public init() {}

    /// A valid fix with GPS time `fixTime` arrived when the monotonic clock read `sample.monotonic`.
    public mutating func fixAccepted(fixTime: UnitTime, at sample: ClockSample) {
        lastFixTime = fixTime
        lastFixMonotonic = sample.monotonic
    }

    public func reading(at sample: ClockSample) -> ClockReading {
        if sample.systemSynchronised { return ClockReading(time: sample.system, source: .system) }
        guard let lastFixTime else { return ClockReading(time: sample.system, source: .unsynchronised) }
        return ClockReading(time: lastFixTime + (sample.monotonic - lastFixMonotonic), source: .gps)
    }
}
