import UnitCore

/// Tells every available taxi its place in its zone's queue (`queue`, docs/protocol.md "Queue
/// position"), from the dispatcher's queues: whoever's place, zone or queue length changed since
/// the last announcement, and everyone again every `refreshMs`, so that a unit never shows a place
/// older than `MessageLimits.queueFreshMs`. Pure.
public struct QueueAnnouncer: Sendable {
    public let refreshMs: Int64
    /// Unit → the place last announced (without `t`).
    public private(set) var announced: [String: QueuePosition] = [:]
    private var lastRefresh: Int64?
    /// The queues last announced from: the same queues again need no work (most inputs move none).
    private var lastQueues: [String: [String]]?

    public init(refreshMs: Int64 = 5 * 60_000) {
        self.refreshMs = refreshMs
    }

    /// Everyone is due to be told again.
    public func refreshDue(now: Int64) -> Bool {
        lastRefresh.map { now.saturatingSubtract($0) >= refreshMs } ?? true
    }

    /// `queues`: zone → available taxis, head first (`Dispatcher.queues`). Returns what to send, by unit name.
    public mutating func announcements(for queues: [String: [String]], now: Int64) -> [(unit: String, position: QueuePosition)] {
        let refresh = refreshDue(now: now)
        guard refresh || queues != lastQueues else { return [] }
        lastQueues = queues
        if refresh { lastRefresh = now }
        var current: [String: QueuePosition] = [:]
        let longest = MessageLimits.queueLength.upperBound
        for (zone, units) in queues where !units.isEmpty {
            // Beyond the longest queue the protocol can say, a taxi is told nothing.
            for (index, unit) in units.prefix(longest).enumerated() {
                current[unit] = QueuePosition(zone: zone, position: index + 1, of: min(units.count, longest))
            }
        }
        var due: [(unit: String, position: QueuePosition)] = []
        for (unit, position) in current.sorted(by: { $0.key < $1.key }) where refresh || announced[unit] != position {
            var stamped = position
            stamped.t = now
            due.append((unit, stamped))
        }
        announced = current
        return due
    }
}
