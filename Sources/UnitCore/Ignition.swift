import TaxiProtocol

/// What the unit does when the ignition goes off while the driver is available (`[ignition]
/// off_while_available`): a taxi parked with the engine off takes no jobs unless its driver says so.
public enum IgnitionOffPolicy: Sendable, Equatable {
    /// The terminal asks the driver to go off duty.
    case ask
    /// Off duty once the ignition has been off this long (unit clock), unless it comes back on.
    case offDuty(after: Duration)
    case ignore
}

/// An ignition change, for the dispatcher on `event` (`"type":"ignition"`).
public struct IgnitionChange: Sendable, Equatable {
    public var on: Bool
    /// The driver's state when it changed.
    public var state: StateName

    public init(on: Bool, state: StateName) {
        self.on = on
        self.state = state
    }
}
