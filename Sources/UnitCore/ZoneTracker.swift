import TaxiProtocol

public struct ZoneChange: Sendable, Equatable {
    public var from: String?
    public var to: String?

    public init(from: String?, to: String?) {
        self.from = from
        self.to = to
    }
}

/// The zone broadcast topic the unit listens on moves with the taxi: off the zone it left, onto the
/// zone it entered (docs/protocol.md, "Broadcasts"). Performed by the shell after the step's commit.
public struct BroadcastZoneChange: Sendable, Equatable {
    public var leave: String?
    public var join: String?

    public init(leave: String?, join: String?) {
        self.leave = leave
        self.join = join
    }

    /// A later change follows this one: leave what this one left, join what the later one joins.
    func then(_ later: BroadcastZoneChange) -> BroadcastZoneChange {
        BroadcastZoneChange(leave: leave ?? later.leave, join: later.join)
    }
}

extension ZoneChange {
    /// The broadcast subscription that follows the change; nil when neither zone has a broadcast topic.
    public var broadcastZones: BroadcastZoneChange? {
        let leave = from.flatMap { ContractTopic.isBroadcastZone($0) ? $0 : nil }
        let join = to.flatMap { ContractTopic.isBroadcastZone($0) ? $0 : nil }
        guard leave != join else { return nil }
        return BroadcastZoneChange(leave: leave, join: join)
    }
}

/// Which zone the taxi is in. A taxi enters a zone when a fix is inside its polygon and leaves only
/// when a fix is more than `hysteresisM` outside it, so waiting on a border does not flap.
/// Overlapping zones: the first in configuration order wins.
public struct ZoneTracker: Sendable, Equatable {
    public let zones: [Zone]
    public let hysteresisM: Double
    public private(set) var current: String?

    /// The zone whose broadcasts reach the taxi: the one it is in, if its id can name a topic and
    /// the zone is still configured (the next fix reports leaving one the fleet removed).
    public var broadcastZone: String? {
        current.flatMap { id in ContractTopic.isBroadcastZone(id) && zones.contains { $0.id == id } ? id : nil }
    }

    /// `current`: the zone the taxi was last reported in; the next fix reports a change from it.
    public init(zones: [Zone], hysteresisM: Double = 30, current: String? = nil) {
        self.zones = zones
        self.hysteresisM = hysteresisM
        self.current = current
    }

    /// Returns the change, if the fix moved the taxi to another zone (or out of every zone).
    public mutating func update(latitude: Double, longitude: Double) -> ZoneChange? {
        if let current, let zone = zones.first(where: { $0.id == current }),
           zone.contains(latitude: latitude, longitude: longitude)
            || zone.distanceToEdgeM(latitude: latitude, longitude: longitude) <= hysteresisM {
            return nil
        }
        let next = zones.first { $0.contains(latitude: latitude, longitude: longitude) }?.id
        guard next != current else { return nil }
        defer { current = next }
        return ZoneChange(from: current, to: next)
    }
}
