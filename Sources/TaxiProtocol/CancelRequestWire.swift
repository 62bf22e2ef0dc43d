/// Why the driver asks the dispatcher to drop a job (docs/protocol.md, "Cancel requests").
public enum CancelReason: String, Sendable, Equatable, Codable, CaseIterable {
    /// Nobody at the pickup answers the phone or comes out.
    case passengerUnreachable = "passenger_unreachable"
    /// The taxi cannot do the job (breakdown, flat tyre, accident).
    case vehicleProblem = "vehicle_problem"
    case other
}

/// `event` with `"type":"cancel_request"`: the driver asks to drop the job. The job stands until
/// the dispatcher confirms with `job/cancel` or refuses with a `job/update` holding `cancel_refused`.
public typealias CancelRequestEventMessage = Envelope<CancelRequestEvent>

/// The body of a `CancelRequestEventMessage`.
public struct CancelRequestEvent: Sendable, Equatable, Codable {
    public var type = "cancel_request"
    /// Unit clock, ms since the Unix epoch, when the driver asked.
    public var t: UnitTime
    public var job: String
    public var reason: CancelReason
    /// The driver's state when asking: `en_route` or `at_pickup`.
    public var state: StateName

    public init(t: UnitTime, job: String, reason: CancelReason, state: StateName) {
        self.t = t
        self.job = job
        self.reason = reason
        self.state = state
    }
}
