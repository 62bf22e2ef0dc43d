/// `ride`: a finished ride for the dispatcher (docs/protocol.md, "ride"), the basis for distance
/// fares. Built from the ride as the unit stored it, so the message and the local history agree.
public struct RideMessage: Sendable, Equatable, Codable {
    /// The topic suffix below `{prefix}/{fleet}/{unit}/`.
    public static let topic = "ride"

    public var unit: String
    public var seq: Int64
    public var id: String
    public var job: String
    public var passengers: Int
    public var pickup: Stop
    public var drop: Stop
    /// Metres driven over the stored fixes from pickup to drop; nil when not measured.
    public var distanceM: Int64?
    /// Seconds from arriving at the pickup to the passengers on board; nil when not known.
    public var waitingS: Int64?
    /// The driver logged in when the ride was cleared; nil with nobody logged in.
    public var driver: String?

    /// Where and when passengers got in or out; the position is absent without a fix.
    public struct Stop: Sendable, Equatable, Codable {
        /// Unit clock, ms.
        public var t: Int64
        public var lat: Double?
        public var lon: Double?

        public init(t: Int64, at position: Coordinate?) {
            self.t = t
            lat = position?.lat
            lon = position?.lon
        }
    }

    enum CodingKeys: String, CodingKey {
        case unit, seq, id, job, passengers, pickup, drop, driver
        case distanceM = "distance_m"
        case waitingS = "waiting_s"
    }

    /// `distanceM`: what the unit measured, nil when it could not.
    public init(_ ride: RideSummary, distanceM: Double?, unit: String, seq: Int64, id: String, driver: String? = nil) {
        self.driver = driver
        self.unit = unit
        self.seq = seq
        self.id = id
        job = ride.job
        passengers = ride.passengers
        pickup = Stop(t: ride.pickupTime, at: ride.pickupFix.map(Coordinate.init))
        drop = Stop(t: ride.dropTime, at: ride.dropFix.map(Coordinate.init))
        self.distanceM = distanceM.flatMap { Int64(roundingChecked: $0) }.map { max(0, $0) }
        waitingS = ride.waitingMs.map { max(0, $0) / 1000 }
    }
}
