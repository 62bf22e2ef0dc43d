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
/// time but NaN coordinates, so the rule needs the previous accepted time.
public struct FixValidator: Sendable, Equatable {
    public enum Rejection: Error, Sendable, Equatable {
        case noFix(mode: Int)
        case coordinatesNotFinite
        case coordinatesOutOfRange
        case noTime
        case sameTimeAsPrevious
    }

    public private(set) var previousTime: Double?

    public init(previousTime: Double? = nil) {
        self.previousTime = previousTime
    }

    public mutating func validate(_ sample: GPSSample) -> Result<Fix, Rejection> {
        guard sample.mode >= 2 else { return .failure(.noFix(mode: sample.mode)) }
        guard sample.latitude.isFinite, sample.longitude.isFinite else { return .failure(.coordinatesNotFinite) }
        guard abs(sample.latitude) <= 90, abs(sample.longitude) <= 180 else { return .failure(.coordinatesOutOfRange) }
        guard sample.time.isFinite, sample.time > 0 else { return .failure(.noTime) }
        guard sample.time != previousTime else { return .failure(.sameTimeAsPrevious) }
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
