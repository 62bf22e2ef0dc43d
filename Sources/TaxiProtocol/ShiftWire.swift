/// `event` with `"type":"shift"` (docs/protocol.md, "Shift").
public typealias ShiftEventMessage = Envelope<ShiftEvent>

/// The body of a `ShiftEventMessage`: what happened to the driver's shift, with its counters then.
public struct ShiftEvent: Sendable, Equatable, Codable {
    public var type = "shift"
    /// Unit clock, ms since the Unix epoch.
    public var t: UnitTime
    /// `start`, `end`, `break` (a break long enough to reset continuous driving ended) or `limit`.
    public var what: String
    /// Seconds since the shift started.
    public var shiftS: Int64
    public var onDutyS: Int64
    public var drivingS: Int64
    /// Driving since the last break.
    public var continuousDrivingS: Int64
    /// The odometer the driver typed at `start` or `end`, whole km.
    public var odometerKm: Int?
    /// With `limit`: `continuous_driving` or `shift_length`.
    public var limit: String?
    /// With `break`: how long it was, seconds.
    public var breakS: Int64?

    enum CodingKeys: String, CodingKey {
        case type, t, what, limit
        case shiftS = "shift_s"
        case onDutyS = "on_duty_s"
        case drivingS = "driving_s"
        case continuousDrivingS = "continuous_driving_s"
        case odometerKm = "odometer_km"
        case breakS = "break_s"
    }

    public init(
        t: UnitTime, what: String, shiftS: Int64, onDutyS: Int64, drivingS: Int64, continuousDrivingS: Int64, odometerKm: Int? = nil,
        limit: String? = nil, breakS: Int64? = nil
    ) {
        self.t = t
        self.what = what
        self.shiftS = shiftS
        self.onDutyS = onDutyS
        self.drivingS = drivingS
        self.continuousDrivingS = continuousDrivingS
        self.odometerKm = odometerKm
        self.limit = limit
        self.breakS = breakS
    }
}
