import TaxiProtocol

/// A finished ride, kept on the unit (table `rides`). The shell measures the distance over the
/// fixes it stored from the pickup fix to the drop fix.
public struct RideSummary: Sendable, Equatable, Codable {
    public var job: String
    public var passengers: Int
    /// Unit clock, ms.
    public var pickupTime: Int64
    public var dropTime: Int64
    /// The last fix when the passengers got in and out; nil without a fix.
    public var pickupFix: Fix?
    public var dropFix: Fix?
    /// From arriving at the pickup to the passengers on board; nil when the arrival is not known.
    public var waitingMs: Int64?
    /// What the passenger was charged and where the amount came from; nil when no fare was known.
    public var fare: Fare?
    /// How the passenger paid (`[job] payments`); nil when the driver did not say.
    public var payment: String?

    public init(
        job: String, passengers: Int, pickupTime: Int64, dropTime: Int64, pickupFix: Fix?, dropFix: Fix?, waitingMs: Int64? = nil,
        fare: Fare? = nil, payment: String? = nil
    ) {
        self.job = job
        self.passengers = passengers
        self.pickupTime = pickupTime
        self.dropTime = dropTime
        self.pickupFix = pickupFix
        self.dropFix = dropFix
        self.waitingMs = waitingMs
        self.fare = fare
        self.payment = payment
    }
}
