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

    /// The clocks as they were when an input arrived (monotonic `arrivedAt`): a fix may have
    /// waited in the inbox for its batch, and the unit clock follows GPS time from its arrival.
    mutating func sample(arrivedAt: Duration) -> ClockSample {
        var sample = sample()
        let waited = max(.zero, sample.monotonic - arrivedAt)
        sample.system = sample.system - waited
        sample.monotonic -= waited
        return sample
    }

    /// The system clock; saturates rather than trapping on a clock set to the far future.
    static func systemTime() -> UnitTime {
        UnitTime(seconds: Date().timeIntervalSince1970)
    }
}
