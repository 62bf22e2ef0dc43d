import TaxiProtocol

public struct ZoneChange: Sendable, Equatable {
    public var from: String?
    public var to: String?

    public init(from: String?, to: String?) {
        self.from = from
        self.to = to
    }
}

/// Which zone the taxi is in. A taxi enters a zone when a fix is inside its polygon and leaves only
/// when a fix is more than `hysteresisM` outside it, so waiting on a border does not flap.
/// Overlapping zones: the first in configuration order wins.
public struct ZoneTracker: Sendable, Equatable {
    public let zones: [Zone]
    public let hysteresisM: Double
    public private(set) var current: String?

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
