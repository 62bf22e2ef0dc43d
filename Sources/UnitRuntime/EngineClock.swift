#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import TaxiProtocol
import UnitCore

/// The clocks as the engine reads them: once per batch of inputs (each reading of the kernel's
/// synchronisation state is a system call, and a batch is handled within milliseconds), then
/// turned into the unit clock by the core's `UnitClock`.
struct EngineClock {
    /// `[gps] trust_system_clock`: the system clock counts as synchronised whatever the kernel says.
    var trustSystemClock: Bool
    private var batch: ClockSample?

    init(trustSystemClock: Bool) {
        self.trustSystemClock = trustSystemClock
    }

    /// A new batch of inputs: the next reading is fresh.
    mutating func newBatch() {
        batch = nil
    }

    mutating func sample() -> ClockSample {
        if let batch { return batch }
        let sample = SystemClock.sample(trustSystem: trustSystemClock)
        batch = sample
        return sample
    }

    /// The clocks as they were when an input arrived (monotonic `arrivedAtS`): a fix may have
    /// waited in the inbox for its batch, and the unit clock follows GPS time from its arrival.
    mutating func sample(arrivedAtS: Double) -> ClockSample {
        var sample = sample()
        let waitedS = max(0, sample.monotonicS - arrivedAtS)
        sample.systemS -= waitedS
        sample.monotonicS -= waitedS
        return sample
    }

    /// The system clock, ms since the Unix epoch; saturates rather than trapping on a clock set to
    /// the far future.
    static func systemMs() -> Int64 {
        Int64(roundingChecked: Date().timeIntervalSince1970 * 1000) ?? .max
    }
}
