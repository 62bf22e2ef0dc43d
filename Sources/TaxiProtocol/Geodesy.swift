#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The geometry of the protocol's coordinates (WGS 84 degrees), for the unit and the dispatcher alike.
public enum Geodesy {
    public static let earthRadiusM = 6_371_008.8

    /// Great-circle (haversine) distance in metres.
    public static func distanceM(latitude lat1: Double, longitude lon1: Double, toLatitude lat2: Double, longitude lon2: Double) -> Double {
        let φ1 = lat1 * .pi / 180, φ2 = lat2 * .pi / 180
        let dφ = φ2 - φ1, dλ = (lon2 - lon1) * .pi / 180
        let h = sin(dφ / 2) * sin(dφ / 2) + cos(φ1) * cos(φ2) * sin(dλ / 2) * sin(dλ / 2)
        return 2 * earthRadiusM * asin(min(1, h.squareRoot()))
    }

    /// The smaller angle between two courses, 0...180 degrees.
    public static func angleBetween(_ a: Double, _ b: Double) -> Double {
        let difference = abs(a - b).truncatingRemainder(dividingBy: 360)
        return difference > 180 ? 360 - difference : difference
    }
}
