import Foundation
import TaxiProtocol

/// Times for tests that run the daemon, the engine or the store against the real clock. A literal
/// epoch time passes only until the calendar passes it (retention, offer windows and command expiry
/// compare stored times with the clock), so these tests take their times from here when they start;
/// `scripts/check-test-clock.py`, run by `make test`, holds them to it.
public enum TestClock {
    /// Unix time in milliseconds, now.
    public static func milliseconds() -> Int64 { Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)) }

    /// Unix time in whole seconds, now.
    public static func seconds() -> Int64 { milliseconds() / 1000 }

    /// A day before now: a backlog of up to 86,400 one-second fixes ending before now, recent enough
    /// for the store's retention.
    public static func aDayAgoMilliseconds() -> Int64 { milliseconds() - 86_400_000 }

    /// Now, as the unit tells times.
    public static func now() -> UnitTime { UnitTime(milliseconds: milliseconds()) }

    /// A day before now, as the unit tells times.
    public static func aDayAgo() -> UnitTime { UnitTime(milliseconds: aDayAgoMilliseconds()) }
}
