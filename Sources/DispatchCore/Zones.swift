import Foundation
import TaxiProtocol

/// The city's zones: the same `[[zones]]` polygons the units get, so that a taxi and the dispatcher
/// agree on which queue it is in.

extension Coordinate {
    /// Metres east/north of `origin` on a local flat projection: good to well under 1 % over a city.
    func metres(from origin: Coordinate) -> (x: Double, y: Double) {
        let metresPerDegree = 111_320.0
        let x = (lon - origin.lon) * metresPerDegree * cos(origin.lat * .pi / 180)
        let y = (lat - origin.lat) * metresPerDegree
        return (x, y)
    }
}

public struct Zone: Sendable, Equatable {
    public let id: String
    /// Vertices in order; the last connects back to the first.
    public let polygon: [Coordinate]
    /// The units' own zone geometry, so that the dispatcher and a taxi always agree on the zone.
    private let area: TaxiProtocol.Zone

    public init(id: String, polygon: [Coordinate]) {
        self.id = id
        self.polygon = polygon
        area = TaxiProtocol.Zone(id: id, polygon: polygon.map { TaxiProtocol.Zone.Vertex(latitude: $0.lat, longitude: $0.lon) })
    }

    public func contains(_ point: Coordinate) -> Bool {
        area.contains(latitude: point.lat, longitude: point.lon)
    }

    public var centroid: Coordinate {
        let count = Double(polygon.count)
        return Coordinate(lat: polygon.map(\.lat).reduce(0, +) / count, lon: polygon.map(\.lon).reduce(0, +) / count)
    }

    var edges: [(Coordinate, Coordinate)] {
        polygon.indices.map { (polygon[$0], polygon[($0 + 1) % polygon.count]) }
    }

    /// Shortest distance between the two outlines (0 when they touch, cross or one holds the other).
    func gapM(to other: Zone) -> Double {
        if contains(other.polygon[0]) || other.contains(polygon[0]) { return 0 }
        let origin = polygon[0]
        var gap = Double.infinity
        for (a, b) in edges {
            for (c, d) in other.edges {
                gap = min(gap, segmentGap(a.metres(from: origin), b.metres(from: origin), c.metres(from: origin), d.metres(from: origin)))
            }
        }
        return gap
    }
}

/// Looks zones up by point and knows which zones border which.
public struct ZoneMap: Sendable {
    public let zones: [Zone]
    /// For each zone, the zones whose outline comes within `neighbourGapM` of it, nearest centre first.
    public let neighbours: [String: [String]]

    /// Hand-drawn polygons of adjacent zones rarely share exact vertices, hence a tolerance.
    public init(zones: [Zone], neighbourGapM: Double = 100) {
        self.zones = zones
        var neighbours: [String: [String]] = [:]
        for zone in zones {
            let centre = zone.centroid
            neighbours[zone.id] = zones
                .filter { $0.id != zone.id && zone.gapM(to: $0) <= neighbourGapM }
                .sorted { centre.distance(to: $0.centroid) < centre.distance(to: $1.centroid) }
                .map(\.id)
        }
        self.neighbours = neighbours
    }

    /// The first zone (in file order) holding `point`: overlapping zones are resolved by order.
    public func zone(containing point: Coordinate) -> Zone? {
        zones.first { $0.contains(point) }
    }

    public subscript(id: String) -> Zone? { zones.first { $0.id == id } }
}

/// Distance between segments ab and cd in a plane.
private func segmentGap(_ a: (x: Double, y: Double), _ b: (x: Double, y: Double), _ c: (x: Double, y: Double), _ d: (x: Double, y: Double)) -> Double {
    func cross(_ o: (x: Double, y: Double), _ p: (x: Double, y: Double), _ q: (x: Double, y: Double)) -> Double {
        (p.x - o.x) * (q.y - o.y) - (p.y - o.y) * (q.x - o.x)
    }
    let d1 = cross(c, d, a), d2 = cross(c, d, b), d3 = cross(a, b, c), d4 = cross(a, b, d)
    if ((d1 > 0 && d2 < 0) || (d1 < 0 && d2 > 0)) && ((d3 > 0 && d4 < 0) || (d3 < 0 && d4 > 0)) { return 0 }
    return min(pointGap(a, c, d), pointGap(b, c, d), pointGap(c, a, b), pointGap(d, a, b))
}

private func pointGap(_ p: (x: Double, y: Double), _ a: (x: Double, y: Double), _ b: (x: Double, y: Double)) -> Double {
    let dx = b.x - a.x, dy = b.y - a.y
    let lengthSquared = dx * dx + dy * dy
    let t = lengthSquared == 0 ? 0 : max(0, min(1, ((p.x - a.x) * dx + (p.y - a.y) * dy) / lengthSquared))
    let ex = a.x + t * dx - p.x, ey = a.y + t * dy - p.y
    return (ex * ex + ey * ey).squareRoot()
}
