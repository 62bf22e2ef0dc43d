import TaxiProtocol

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
    /// Altitude above mean sea level, metres.
    public var altitude: Double

    public init(
        mode: Int, time: Double, latitude: Double, longitude: Double,
        speed: Double = .nan, track: Double = .nan, horizontalError: Double = .nan, altitude: Double = .nan
    ) {
        self.mode = mode
        self.time = time
        self.latitude = latitude
        self.longitude = longitude
        self.speed = speed
        self.track = track
        self.horizontalError = horizontalError
        self.altitude = altitude
    }
}

/// A position the unit trusts. Unknown values are nil, never NaN, so they can be omitted on the wire.
public struct Fix: Sendable, Equatable, Codable {
    /// The receiver's time of the fix.
    public var time: UnitTime
    public var latitude: Double
    public var longitude: Double
    public var speed: Double?
    public var track: Double?
    public var accuracy: Double?
    /// Altitude above mean sea level, metres (OwnTracks' `alt`; not on the dispatcher's wire).
    public var altitude: Double?

    public init(
        time: UnitTime, latitude: Double, longitude: Double, speed: Double? = nil, track: Double? = nil, accuracy: Double? = nil,
        altitude: Double? = nil
    ) {
        self.time = time
        self.latitude = latitude
        self.longitude = longitude
        self.speed = speed
        self.track = track
        self.accuracy = accuracy
        self.altitude = altitude
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
        /// Dated after `latestTimeS`: no receiver is right about that, and later times would not fit
        /// the millisecond arithmetic.
        case timeOutOfRange
        /// Speed, course or error estimate outside what a road vehicle's receiver can report.
        case outOfRange(field: String, value: Double)

        /// Rejections that mean a receiver reported nonsense, counted in `status` (the others are
        /// gpsd's ordinary no-fix and duplicate reports).
        public var isOutOfRange: Bool {
            switch self {
            case .coordinatesOutOfRange, .coordinatesNotFinite, .timeOutOfRange, .outOfRange, .inFuture: true
            case .noFix, .noTime, .sameTimeAsPrevious, .weekRollover, .tooInaccurate: false
            }
        }
    }

    /// The GPS week counter's range: a receiver that wraps it reports a date this much too early.
    public static let rolloverPeriodS: Double = 1024 * 7 * 86_400
    /// No fix this software sees can be older than its release, even when no clock can be trusted
    /// (boards without a real-time clock start in 1970). 2024-01-01T00:00:00Z.
    public static let earliestReferenceS: Double = 1_704_067_200
    /// How far a fix may be ahead of a synchronised system clock.
    public static let futureAllowanceS: Double = 86_400
    /// 2100-01-01T00:00:00Z.
    public static let latestTimeS: Double = 4_102_444_800
    /// Over ground, m/s: 540 km/h, more than any road vehicle.
    public static let speedRange: ClosedRange<Double> = 0...150
    public static let courseRange: ClosedRange<Double> = 0...360
    /// The largest error estimate a stored point may carry, metres (`[gps] max_eph_m` is far lower).
    public static let largestErrorM: Double = 1_000_000

    public private(set) var previousTime: Double?
    /// Fixes with a larger estimated horizontal error are dropped; NaN (unknown) is accepted.
    public var maxHorizontalErrorM: Double

    /// Altitudes a taxi's receiver can mean, metres above sea level (the Dead Sea shore to the
    /// highest roads, with room).
    static let altitudeRange = -1_000.0...10_000.0

    public init(previousTime: Double? = nil, maxHorizontalErrorM: Double = 50) {
        self.previousTime = previousTime
        self.maxHorizontalErrorM = maxHorizontalErrorM
    }

    /// `clock` is the unit clock when the sample arrived: the reference for the date checks.
    public mutating func validate(_ sample: GPSSample, clock: ClockReading) -> Result<Fix, Rejection> {
        guard sample.mode >= 2 else { return .failure(.noFix(mode: sample.mode)) }
        // gpsd's modes end at 3D; a larger one is no mode this software knows how to trust.
        guard sample.mode <= 3 else { return .failure(.outOfRange(field: "mode", value: Double(sample.mode))) }
        guard sample.latitude.isFinite, sample.longitude.isFinite else { return .failure(.coordinatesNotFinite) }
        guard abs(sample.latitude) <= 90, abs(sample.longitude) <= 180 else { return .failure(.coordinatesOutOfRange) }
        guard sample.time.isFinite, sample.time > 0 else { return .failure(.noTime) }
        guard sample.time < Self.latestTimeS else { return .failure(.timeOutOfRange) }
        // NaN is "gpsd did not say"; anything else must be a value a receiver can mean.
        if !sample.speed.isNaN, !Self.speedRange.contains(sample.speed) { return .failure(.outOfRange(field: "speed", value: sample.speed)) }
        if !sample.track.isNaN, !Self.courseRange.contains(sample.track) { return .failure(.outOfRange(field: "track", value: sample.track)) }
        if !sample.horizontalError.isNaN, !(sample.horizontalError >= 0 && sample.horizontalError.isFinite) { return .failure(.outOfRange(field: "eph", value: sample.horizontalError)) }
        guard sample.time != previousTime else { return .failure(.sameTimeAsPrevious) }
        let reference = max(clock.time.seconds, Self.earliestReferenceS)
        guard sample.time > reference - Self.rolloverPeriodS else { return .failure(.weekRollover) }
        // Only a synchronised system clock can say a fix is from the future: the GPS clock is made of fixes.
        if clock.source == .system, sample.time > clock.time.seconds + Self.futureAllowanceS { return .failure(.inFuture) }
        if sample.horizontalError > maxHorizontalErrorM { return .failure(.tooInaccurate(horizontalErrorM: sample.horizontalError)) }
        previousTime = sample.time
        return .success(
            Fix(
                time: UnitTime(seconds: sample.time),
                latitude: sample.latitude,
                longitude: sample.longitude,
                speed: sample.speed.finiteOrNil,
                track: sample.track == 360 ? 0 : sample.track.finiteOrNil,
                accuracy: sample.horizontalError.finiteOrNil,
                // Only shown on maps: an impossible altitude is left out, the fix kept.
                altitude: Self.altitudeRange.contains(sample.altitude) ? sample.altitude : nil
            )
        )
    }
}

extension Double {
    var finiteOrNil: Double? { isFinite ? self : nil }
}

extension PositionPoint {
    /// The point as `FixValidator` would have let it through: nil when its time or coordinates are
    /// unusable, optional values out of range left out. For points read back from the store, which
    /// an older release or a hand-edited file may have filled with anything.
    public var sanitised: PositionPoint? {
        guard t > 0, t < Int64(FixValidator.latestTimeS) * 1000, lat.isFinite, lon.isFinite, abs(lat) <= 90, abs(lon) <= 180 else { return nil }
        var point = self
        if let spd, !FixValidator.speedRange.contains(spd) { point.spd = nil }
        if let hdg, !FixValidator.courseRange.contains(hdg) { point.hdg = nil }
        if let acc, !(acc >= 0 && acc <= FixValidator.largestErrorM) { point.acc = nil }
        if let age, age < 0 { point.age = nil }
        return point
    }
}
