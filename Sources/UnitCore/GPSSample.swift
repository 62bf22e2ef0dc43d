/// One TPV report as gpsd delivered it, before any judgement. NaN means "gpsd did not say".
public struct GPSSample: Sendable, Equatable {
    /// 0 not seen, 1 no fix, 2 2D, 3 3D (gpsd's MODE_*).
    public var mode: Int
    /// Seconds since the Unix epoch; 0 when gpsd sent no time.
    public var time: Double
    public var latitude: Double
    public var longitude: Double
    /// Metres per second over ground.
    public var speed: Double
    /// Degrees from true north.
    public var track: Double
    /// Estimated horizontal position error, metres.
    public var horizontalError: Double

    public init(
        mode: Int, time: Double, latitude: Double, longitude: Double,
        speed: Double = .nan, track: Double = .nan, horizontalError: Double = .nan
    ) {
        self.mode = mode
        self.time = time
        self.latitude = latitude
        self.longitude = longitude
        self.speed = speed
        self.track = track
        self.horizontalError = horizontalError
    }
}

/// A position the unit trusts. Unknown values are nil, never NaN, so they can be omitted on the wire.
public struct Fix: Sendable, Equatable, Codable {
    /// Fix time, milliseconds since the Unix epoch.
    public var time: Int64
    public var latitude: Double
    public var longitude: Double
    public var speed: Double?
    public var track: Double?
    public var accuracy: Double?

    public init(time: Int64, latitude: Double, longitude: Double, speed: Double? = nil, track: Double? = nil, accuracy: Double? = nil) {
        self.time = time
        self.latitude = latitude
        self.longitude = longitude
        self.speed = speed
        self.track = track
        self.accuracy = accuracy
    }
}

/// Decides which samples are fixes. gpsd sends several TPVs per cycle and mode-1 TPVs that carry a
/// time but NaN coordinates, so the rule needs the previous accepted time. Validity is decided by
/// `mode`, never by gpsd's `status`, whose constants were renamed in gpsd 3.23.1.
public struct FixValidator: Sendable, Equatable {
    public enum Rejection: Error, Sendable, Equatable {
        case noFix(mode: Int)
        case coordinatesNotFinite
        case coordinatesOutOfRange
        case noTime
        case sameTimeAsPrevious
        /// Dated 1024 weeks or more before the unit clock: a receiver hit by the GPS week rollover.
        case weekRollover
        /// Dated further ahead of a synchronised system clock than any receiver can be.
        case inFuture
        case tooInaccurate(horizontalErrorM: Double)
    }

    /// The GPS week counter's range: a receiver that wraps it reports a date this much too early.
    public static let rolloverPeriodS: Double = 1024 * 7 * 86_400
    /// No fix this software sees can be older than its release, even when no clock can be trusted
    /// (boards without a real-time clock start in 1970). 2024-01-01T00:00:00Z.
    public static let earliestReferenceS: Double = 1_704_067_200
    /// How far a fix may be ahead of a synchronised system clock.
    public static let futureAllowanceS: Double = 86_400

    public private(set) var previousTime: Double?
    /// Fixes with a larger estimated horizontal error are dropped; NaN (unknown) is accepted.
    public var maxHorizontalErrorM: Double

    public init(previousTime: Double? = nil, maxHorizontalErrorM: Double = 50) {
        self.previousTime = previousTime
        self.maxHorizontalErrorM = maxHorizontalErrorM
    }

    /// `clock` is the unit clock when the sample arrived: the reference for the date checks.
    public mutating func validate(_ sample: GPSSample, clock: ClockReading) -> Result<Fix, Rejection> {
        guard sample.mode >= 2 else { return .failure(.noFix(mode: sample.mode)) }
        guard sample.latitude.isFinite, sample.longitude.isFinite else { return .failure(.coordinatesNotFinite) }
        guard abs(sample.latitude) <= 90, abs(sample.longitude) <= 180 else { return .failure(.coordinatesOutOfRange) }
        guard sample.time.isFinite, sample.time > 0 else { return .failure(.noTime) }
        guard sample.time != previousTime else { return .failure(.sameTimeAsPrevious) }
        let reference = max(clock.time, Self.earliestReferenceS)
        guard sample.time > reference - Self.rolloverPeriodS else { return .failure(.weekRollover) }
        // Only a synchronised system clock can say a fix is from the future: the GPS clock is made of fixes.
        if clock.source == .system, sample.time > clock.time + Self.futureAllowanceS { return .failure(.inFuture) }
        if sample.horizontalError > maxHorizontalErrorM { return .failure(.tooInaccurate(horizontalErrorM: sample.horizontalError)) }
        previousTime = sample.time
        return .success(
            Fix(
                time: Int64((sample.time * 1000).rounded()),
                latitude: sample.latitude,
                longitude: sample.longitude,
                speed: sample.speed.finiteOrNil,
                track: sample.track.finiteOrNil,
                accuracy: sample.horizontalError.finiteOrNil
            )
        )
    }
}

extension Double {
    var finiteOrNil: Double? { isFinite ? self : nil }
}
