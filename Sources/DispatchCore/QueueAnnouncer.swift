import TaxiProtocol

/// Tells every available taxi its place in its zone's queue (`queue`, docs/protocol.md "Queue
/// position"), from the dispatcher's queues: whoever's place, zone or queue length changed since
/// the last announcement, and everyone again every `refreshMs`, so that a unit never shows a place
/// older than `MessageLimits.queueFreshMs`. A taxi is told a change at most once per
/// `minIntervalMs` (the newest place, once the interval is over): in a zone of a hundred taxis
/// every join and every job changes everyone's place or length, which with 500 units sent 3,800
/// messages a second and saturated the fleet bench's machine. Pure.
public struct QueueAnnouncer: Sendable {
    public let refreshMs: Int64
    public let minIntervalMs: Int64
    /// Unit → the place last announced (without `t`).
    public private(set) var announced: [String: QueuePosition] = [:]
    private var lastRefresh: Int64?
    /// The queues last announced from: the same queues again need no work (most inputs move none).
    private var lastQueues: [String: [String]]?
    /// Every queued taxi's place now.
    private var current: [String: QueuePosition] = [:]
    /// Taxis whose place differs from the one they were told, waiting for their interval to pass.
    private var pending: Set<String> = []
    private var sentAt: [String: Int64] = [:]

    public init(refreshMs: Int64 = 5 * 60_000, minIntervalMs: Int64 = 5_000) {
        self.refreshMs = refreshMs
        self.minIntervalMs = minIntervalMs
    }

    /// Everyone is due to be told again.
    public func refreshDue(now: Int64) -> Bool {
        lastRefresh.map { now.saturatingSubtract($0) >= refreshMs } ?? true
    }

    /// `queues`: zone → available taxis, head first (`Dispatcher.queues`). Returns what to send, by
    /// unit name, at most `limit` (by unit name; the rest stay due for the next call).
    public mutating func announcements(
        for queues: [String: [String]], now: Int64, limit: Int = .max
    ) -> [(unit: String, position: QueuePosition)] {
        let refresh = refreshDue(now: now)
        if refresh || queues != lastQueues {
            lastQueues = queues
            current = [:]
            let longest = MessageLimits.queueLength.upperBound
            for (zone, units) in queues where !units.isEmpty {
                // Beyond the longest queue the protocol can say, a taxi is told nothing.
                for (index, unit) in units.prefix(longest).enumerated() {
                    current[unit] = QueuePosition(zone: zone, position: index + 1, of: min(units.count, longest))
                }
            }
            // A taxi that left the queue is told its place again when it comes back.
            announced = announced.filter { current[$0.key] != nil }
            // A refresh cut short by `limit` is still owed to the taxis it has not reached.
            let refreshedAt = lastRefresh ?? .min
            pending = Set(current.keys.filter { refresh || announced[$0] != current[$0] || (sentAt[$0] ?? .min) < refreshedAt })
        }
        if refresh { lastRefresh = now }
        var due: [(unit: String, position: QueuePosition)] = []
        for unit in pending.sorted() where refresh || intervalOver(unit, now: now) {
            guard due.count < limit else { break }
            guard var position = current[unit] else { continue }
            announced[unit] = position
            sentAt[unit] = now
            position.t = now
            due.append((unit, position))
        }
        pending.subtract(due.map(\.unit))
        return due
    }

    private func intervalOver(_ unit: String, now: Int64) -> Bool {
        sentAt[unit].map { now.saturatingSubtract($0) >= minIntervalMs } ?? true
    }
}
