/// The shell's one monotonic clock: `ContinuousClock`, read as a count from a fixed origin for the
/// pure parts that take plain numbers (the unit clock, the key decoder, the button debouncer, the
/// inbound rate limits). Elsewhere the shell uses `ContinuousClock.now` itself.
public enum Monotonic {
    /// The first reading in this process; every count starts here.
    private static let origin = ContinuousClock.now

    public static var elapsed: Duration { ContinuousClock.now - origin }

    public static func seconds() -> Double {
        let (seconds, attoseconds) = elapsed.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    public static func milliseconds() -> Int64 {
        microseconds() / 1000
    }

    public static func microseconds() -> Int64 {
        let (seconds, attoseconds) = elapsed.components
        return seconds * 1_000_000 + attoseconds / 1_000_000_000_000
    }
}
