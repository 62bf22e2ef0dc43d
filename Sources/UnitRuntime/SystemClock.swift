import CTaxiUnitLinux
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Platform
import TaxiProtocol
import UnitCore

/// The machine's clocks, read for the core (which has none).
enum SystemClock {
    /// `trustSystem`: treat the system clock as synchronised whatever the kernel says.
    static func sample(trustSystem: Bool) -> ClockSample {
        ClockSample(
            system: UnitTime(seconds: Date().timeIntervalSince1970), systemSynchronised: trustSystem || isSynchronised,
            monotonic: Monotonic.elapsed)
    }

    /// What `timedatectl` calls "System clock synchronized": the kernel's NTP state, set by chrony,
    /// ntpd or systemd-timesyncd. Reading it needs no privilege.
    static var isSynchronised: Bool { CTaxiUnitLinux_clockSynchronised() }
}
