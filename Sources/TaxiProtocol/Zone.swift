#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The zones are the protocol's (`status.zone`, `queue.zone`, zone events): the unit and the
/// dispatcher read the same `[[zones]]` polygons with this one geometry, so they agree on the zone.
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
