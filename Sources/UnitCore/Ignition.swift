/// What the unit does when the ignition goes off while the driver is available (`[ignition]
/// off_while_available`): a taxi parked with the engine off takes no jobs unless its driver says so.
public enum IgnitionOffPolicy: Sendable, Equatable {
    /// The terminal asks the driver to go off duty.
    case ask
    /// Off duty once the ignition has been off this long (ms, unit clock), unless it comes back on.
    case offDuty(afterMs: Int64)
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

/// `event` with `"type":"ignition"` (docs/protocol.md, "Ignition").
public struct IgnitionEventMessage: Sendable, Equatable, Codable {
    public var type = "ignition"
    public var unit: String
    public var seq: Int64
    public var id: String
    /// Unit clock, ms since the Unix epoch.
    public var t: Int64
    /// `on` or `off`.
    public var ignition: String
    public var state: StateName
    /// The driver logged in; omitted with nobody logged in.
    public var driver: String?

    public init(unit: String, seq: Int64, id: String, t: Int64, change: IgnitionChange, driver: String? = nil) {
        self.unit = unit
        self.seq = seq
        self.id = id
        self.t = t
        ignition = change.on ? "on" : "off"
        state = change.state
        self.driver = driver
    }
}
