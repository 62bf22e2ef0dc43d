import TaxiProtocol

/// A finished ride, kept on the unit (table `rides`). The shell measures the distance over the
/// fixes it stored from the pickup fix to the drop fix.
public struct RideSummary: Sendable, Equatable {
    public var job: String
    public var passengers: Int
    /// Unit clock.
    public var pickupTime: UnitTime
    public var dropTime: UnitTime
    /// The last fix when the passengers got in and out; nil without a fix.
    public var pickupFix: Fix?
    public var dropFix: Fix?
    /// From arriving at the pickup to the passengers on board; nil when the arrival is not known.
    public var waiting: Duration?
    /// What the passenger was charged and where the amount came from; nil when no fare was known.
    public var fare: Fare?
    /// How the passenger paid (`[job] payments`); nil when the driver did not say.
    public var payment: String?
    /// The job's pickup address, for the driver's history; nil when the job gave none.
    public var pickupAddress: String?

    public init(
        job: String, passengers: Int, pickupTime: UnitTime, dropTime: UnitTime, pickupFix: Fix?, dropFix: Fix?, waiting: Duration? = nil,
        fare: Fare? = nil, payment: String? = nil, pickupAddress: String? = nil
    ) {
        self.job = job
        self.passengers = passengers
        self.pickupTime = pickupTime
        self.dropTime = dropTime
        self.pickupFix = pickupFix
        self.dropFix = dropFix
        self.waiting = waiting
        self.fare = fare
        self.payment = payment
        self.pickupAddress = pickupAddress
    }
}
