import GPSReader
import MQTTLink
import TaxiProtocol
import UnitConfig
import UnitCore

/// What the engine needs of the broker: `BrokerLink` on a unit, a recording one in the in-process
/// engine tests.
protocol BrokerPort: AnyObject, Sendable {
    /// Where every connection's events go, on the thread that has them. Set before `connect`.
    func deliverEvents(to handler: @escaping @Sendable (BrokerLink.Event) -> Void)
    /// Replaces the current connection with one for `configuration`; returns its generation.
    @discardableResult
    func connect(_ configuration: UnitConfiguration) -> Int
    func publish(topic: String, payload: [UInt8], qos: Int32, retain: Bool) throws(MQTTLinkError) -> MQTTPublishTicket
    func subscribe(_ pattern: String, qos: Int32) throws(MQTTLinkError)
    func unsubscribe(_ pattern: String) throws(MQTTLinkError)
    /// Drops the connection; it comes back by itself.
    func dropConnection()
    /// The newest reported fix to the OwnTracks feed's own connection; `clock` is the unit's.
    func publishOwnTracks(_ location: OwnTracksLocation, clock: UnitClock, trustSystemClock: Bool)
    /// Replaces a client loop that stopped coming round.
    func restartLoopIfSilent(longerThan limit: Duration)
    /// How many messages the outbox may hand over now under `[mqtt] max_publish_rate`.
    func publishAllowance() -> PublishAllowance
    /// The connection counter (`ConnectionCounter`): starts it above `stored`, and returns the
    /// reservation to write before the first connection.
    func restoreConnectionCounter(stored: Int64?) -> Int64?
    /// A new reservation to write, when the last one is half used.
    func connectionReservation() -> Int64?
    /// The current connection's number, for `status`.
    var connectionNumber: Int64? { get }
    /// `host:port` of the node connected to; nil while not connected.
    var nodeInUse: String? { get }
}

extension BrokerPort {
    // The in-process engine tests' recording broker has no rate limit, no connection counter, no
    // nodes and no OwnTracks feed.
    func publishAllowance() -> PublishAllowance { .unlimited }
    func publishOwnTracks(_ location: OwnTracksLocation, clock: UnitClock, trustSystemClock: Bool) {}
    func restoreConnectionCounter(stored: Int64?) -> Int64? { nil }
    func connectionReservation() -> Int64? { nil }
    var connectionNumber: Int64? { nil }
    var nodeInUse: String? { nil }
}

/// What the engine needs of gpsd: `GPSDConnection` on a unit.
protocol FixSource: AnyObject, Sendable {
    func deliverEvents(to handler: @escaping @Sendable (GPSDEvent) -> Void)
}

extension BrokerLink: BrokerPort {}
extension GPSDConnection: FixSource {}
