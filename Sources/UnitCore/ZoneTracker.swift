#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A named area, such as a taxi rank's catchment, as a polygon of WGS84 vertices.
public struct Zone: Sendable, Equatable {
    public struct Vertex: Sendable, Equatable {
        public var latitude: Double
        public var longitude: Double

        public init(latitude: Double, longitude: Double) {
            self.latitude = latitude
            self.longitude = longitude
        }
    }

    public var id: String
    /// At least three vertices; the last connects back to the first.
    public var polygon: [Vertex]

    public init(id: String, polygon: [Vertex]) {
        self.id = id
        self.polygon = polygon
    }

    /// Ray casting on latitude/longitude: exact enough for city-sized zones away from the poles and the antimeridian.
    public func contains(latitude: Double, longitude: Double) -> Bool {
        var inside = false
        var previous = polygon[polygon.count - 1]
        for vertex in polygon {
            if (vertex.latitude > latitude) != (previous.latitude > latitude) {
                let crossing = (previous.longitude - vertex.longitude) * (latitude - vertex.latitude)
                    / (previous.latitude - vertex.latitude) + vertex.longitude
                if longitude < crossing { inside.toggle() }
            }
            previous = vertex
        }
        return inside
    }

    /// Metres from the point to the nearest edge, on a local flat projection around the point.
    public func distanceToEdgeM(latitude: Double, longitude: Double) -> Double {
        let metresPerDegree = Geodesy.earthRadiusM * .pi / 180
        let xScale = metresPerDegree * cos(latitude * .pi / 180)
        func project(_ vertex: Vertex) -> (x: Double, y: Double) {
            ((vertex.longitude - longitude) * xScale, (vertex.latitude - latitude) * metresPerDegree)
        }
        var nearest = Double.infinity
        var previous = project(polygon[polygon.count - 1])
        for vertex in polygon {
            let current = project(vertex)
            nearest = min(nearest, Self.distanceFromOrigin(toSegment: previous, current))
            previous = current
        }
        return nearest
    }

    private static func distanceFromOrigin(toSegment a: (x: Double, y: Double), _ b: (x: Double, y: Double)) -> Double {
        let dx = b.x - a.x, dy = b.y - a.y
        let lengthSquared = dx * dx + dy * dy
        let t = lengthSquared == 0 ? 0 : min(1, max(0, -(a.x * dx + a.y * dy) / lengthSquared))
        let x = a.x + t * dx, y = a.y + t * dy
        return (x * x + y * y).squareRoot()
    }
}

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
