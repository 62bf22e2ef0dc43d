import TaxiProtocol
import Testing
import UnitCore

@Suite struct ZoneTrackerTests {
    /// Two squares sharing the border at longitude 7.5, each about 1.1 km tall and 0.77 km wide.
    static let west = Zone(id: "west", polygon: [
        .init(latitude: 46.50, longitude: 7.49), .init(latitude: 46.50, longitude: 7.50),
        .init(latitude: 46.51, longitude: 7.50), .init(latitude: 46.51, longitude: 7.49),
    ])
    static let east = Zone(id: "east", polygon: [
        .init(latitude: 46.50, longitude: 7.50), .init(latitude: 46.50, longitude: 7.51),
        .init(latitude: 46.51, longitude: 7.51), .init(latitude: 46.51, longitude: 7.50),
    ])
    /// Degrees of longitude per metre at 46.505 N.
    static let lonPerMetre = 1 / 76_570.0

    func longitude(metresEastOfBorder metres: Double) -> Double { 7.5 + metres * Self.lonPerMetre }

    @Test func pointInPolygon() {
        #expect(Self.west.contains(latitude: 46.505, longitude: 7.495))
        #expect(!Self.west.contains(latitude: 46.505, longitude: 7.505))
        #expect(!Self.west.contains(latitude: 46.515, longitude: 7.495))
        let triangle = Zone(id: "t", polygon: [.init(latitude: 0, longitude: 0), .init(latitude: 0, longitude: 2), .init(latitude: 2, longitude: 0)])
        #expect(triangle.contains(latitude: 0.5, longitude: 0.5))
        #expect(!triangle.contains(latitude: 1.5, longitude: 1.5))
    }

    @Test func distanceToTheEdgeIsInMetres() {
        let distance = Self.west.distanceToEdgeM(latitude: 46.505, longitude: longitude(metresEastOfBorder: 20))
        #expect(abs(distance - 20) < 0.5)
    }

    @Test func enteringAZoneIsAnEvent() {
        var tracker = ZoneTracker(zones: [Self.west, Self.east])
        #expect(tracker.update(latitude: 46.52, longitude: 7.495) == nil)
        #expect(tracker.update(latitude: 46.505, longitude: 7.495) == ZoneChange(from: nil, to: "west"))
        #expect(tracker.current == "west")
        #expect(tracker.update(latitude: 46.506, longitude: 7.496) == nil)
    }

    @Test func aTaxiWaitingOnTheBorderDoesNotFlap() {
        var tracker = ZoneTracker(zones: [Self.west, Self.east], hysteresisM: 30)
        _ = tracker.update(latitude: 46.505, longitude: longitude(metresEastOfBorder: -5))
        // GPS noise moves the fix back and forth across the border, up to 25 m into the neighbour.
        for metres in [3.0, -2, 25, 10, -8, 29, 1] {
            #expect(tracker.update(latitude: 46.505, longitude: longitude(metresEastOfBorder: metres)) == nil, "at \(metres) m")
            #expect(tracker.current == "west")
        }
        #expect(tracker.update(latitude: 46.505, longitude: longitude(metresEastOfBorder: 35)) == ZoneChange(from: "west", to: "east"))
        // And now the same holds the other way round.
        #expect(tracker.update(latitude: 46.505, longitude: longitude(metresEastOfBorder: -25)) == nil)
        #expect(tracker.update(latitude: 46.505, longitude: longitude(metresEastOfBorder: -31)) == ZoneChange(from: "east", to: "west"))
    }

    @Test func leavingEveryZoneIsAnEventOnlyBeyondTheHysteresis() {
        var tracker = ZoneTracker(zones: [Self.west], hysteresisM: 30)
        _ = tracker.update(latitude: 46.505, longitude: 7.495)
        #expect(tracker.update(latitude: 46.505, longitude: longitude(metresEastOfBorder: 20)) == nil)
        #expect(tracker.update(latitude: 46.505, longitude: longitude(metresEastOfBorder: 40)) == ZoneChange(from: "west", to: nil))
        #expect(tracker.current == nil)
    }

    @Test func withoutHysteresisTheBorderIsExact() {
        var tracker = ZoneTracker(zones: [Self.west, Self.east], hysteresisM: 0)
        _ = tracker.update(latitude: 46.505, longitude: longitude(metresEastOfBorder: -1))
        #expect(tracker.update(latitude: 46.505, longitude: longitude(metresEastOfBorder: 1)) == ZoneChange(from: "west", to: "east"))
    }

    @Test func overlappingZonesGoToTheFirstListed() {
        var tracker = ZoneTracker(zones: [Self.east, Self.west.with(id: "west-copy"), Self.west])
        #expect(tracker.update(latitude: 46.505, longitude: 7.495) == ZoneChange(from: nil, to: "west-copy"))
    }
}

extension Zone {
    func with(id: String) -> Zone { Zone(id: id, polygon: polygon) }
}
