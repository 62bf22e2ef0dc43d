/// `ride`: a finished ride for the dispatcher (docs/protocol.md, "ride"), the basis for distance
/// fares. Built from the ride as the unit stored it, so the message and the local history agree.
public typealias RideMessage = Envelope<FinishedRide>

extension RideMessage {
    /// The topic suffix below `{prefix}/{fleet}/{unit}/`.
    public static let topic = ContractTopic.ride.rawValue

    public typealias Stop = FinishedRide.Stop
}

/// The body of a `RideMessage`.
public struct FinishedRide: Sendable, Equatable, Codable {
    public var job: String
    public var passengers: Int
    public var pickup: Stop
    public var drop: Stop
    /// Metres driven over the stored fixes from pickup to drop; nil when not measured.
    public var distanceM: Int64?
    /// Seconds from arriving at the pickup to the passengers on board; nil when not known.
    public var waitingS: Int64?
    /// The fare in minor units of `currency`, and where it came from; all three or none.
    public var fare: Int64?
    public var currency: String?
    public var fareSource: FareSource?
    /// How the passenger paid, one of the unit's `[job] payments`; nil when the driver did not say.
    public var payment: String?

    /// Where and when passengers got in or out; the position is absent without a fix.
    public struct Stop: Sendable, Equatable, Codable {
        /// Unit clock, ms.
        public var t: UnitTime
        public var lat: Double?
        public var lon: Double?

        public init(t: UnitTime, at position: Coordinate?) {
            self.t = t
            lat = position?.lat
            lon = position?.lon
        }
    }

    enum CodingKeys: String, CodingKey {
        case job, passengers, pickup, drop
        case distanceM = "distance_m"
        case waitingS = "waiting_s"
        case fare, currency, payment
        case fareSource = "fare_source"
    }

    public init(
        job: String, passengers: Int, pickup: Stop, drop: Stop, distanceM: Int64?, waitingS: Int64?, fare: Fare? = nil, payment: String? = nil
    ) {
        self.job = job
        self.passengers = passengers
        self.pickup = pickup
        self.drop = drop
        self.distanceM = distanceM
        self.waitingS = waitingS
        self.fare = fare?.amount
        currency = fare?.currency
        fareSource = fare?.source
        self.payment = payment
    }
}
