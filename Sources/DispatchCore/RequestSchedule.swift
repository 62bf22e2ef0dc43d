import Foundation
import TaxiProtocol

/// Where passenger requests come from: a scenario (explicit times) and random generators with a
/// rate per zone, merged into one time-ordered list of inputs for the dispatcher.

public struct ScheduledInput: Sendable, Equatable {
    /// Milliseconds after the start of the run.
    public var atMs: Int64
    public var input: DispatchInput

    public init(atMs: Int64, input: DispatchInput) {
        self.atMs = atMs
        self.input = input
    }
}

/// Requests in one zone: every `everyS` seconds exactly, or as a Poisson process of `perMinute`.
public struct ZoneDemand: Sendable, Equatable {
    public enum Rate: Sendable, Equatable {
        case every(seconds: Double)
        case poisson(perMinute: Double)
    }

    public var zone: String
    public var rate: Rate
    public var firstAtS: Double
    /// No requests from this time on (seconds from the start); nil: until the run's end.
    public var untilS: Double?
    /// Every n-th request of the zone is a reservation `aheadS` after its request: a pre-booking
    /// when that is more than the dispatcher's `preBookingLeadS` ahead.
    public var preBookings: PreBookingShare?

    public init(zone: String, rate: Rate, firstAtS: Double = 0, untilS: Double? = nil, preBookings: PreBookingShare? = nil) {
        self.zone = zone
        self.rate = rate
        self.firstAtS = firstAtS
        self.untilS = untilS
        self.preBookings = preBookings
    }
}

public struct PreBookingShare: Sendable, Equatable {
    public var every: Int
    public var aheadS: Double

    public init(every: Int, aheadS: Double) {
        self.every = every
        self.aheadS = aheadS
    }
}

public enum RequestSchedule {
    /// Random requests for `durationS`, pickups uniformly inside each zone's polygon; the same seed
    /// gives the same run. Ids are `{zone}-{n}`, and `{zone}-g{k}-{n}` for a zone's k-th generator
    /// from the second on. `startMs` (ms since the epoch) turns the
    /// pre-bookings' meeting times into wall-clock times, as a scenario's `meeting_at_s`.
    public static func generate(
        _ demands: [ZoneDemand], zones: ZoneMap, durationS: Double, seed: UInt64, startMs: Int64 = 0
    ) throws(ScheduleError) -> [ScheduledInput] {
        var random = SplitMix64(seed: seed)
        // Passengers and destinations from a generator of their own, so the pickups stay what the
        // seed gave before requests had them.
        var details = SplitMix64(seed: seed ^ 0x5EED_DE7A_115)
        var inputs: [ScheduledInput] = []
        var generatorsPerZone: [String: Int] = [:]
        for demand in demands {
            guard let zone = zones[demand.zone] else { throw ScheduleError("generator for unknown zone \(demand.zone)") }
            generatorsPerZone[zone.id, default: 0] += 1
            let generator = generatorsPerZone[zone.id, default: 1]
            let idPrefix = generator == 1 ? zone.id : "\(zone.id)-g\(generator)"
            var atS = demand.firstAtS
            var number = 0
            let endS = min(durationS, demand.untilS ?? durationS)
            while atS < endS {
                number += 1
                // The id doubles as the address, so a 20-column terminal shows something readable.
                let id = "\(idPrefix)-\(number)"
                var request = PassengerRequest(id: id, pickup: randomPoint(in: zone, using: &random), address: id)
                // Somewhere in a zone of the map, and someone with a name and a pickup code.
                let destinations = zones.zones
                if let target = destinations.randomElement(using: &details) {
                    let point = randomPoint(in: target, using: &details)
                    request.dropoff = Place(lat: point.lat, lon: point.lon, address: "to \(target.id)")
                }
                let name = passengerNames.randomElement(using: &details) ?? "Passenger"
                request.passenger = Passenger(name: name, pickupCode: String(UInt64.random(in: 1000...9999, using: &details)))
                // Every other booking comes with a price agreed up front: the driver sees it at
                // clear; the rest are charged what the driver types.
                if number % 2 == 0, let dropoff = request.dropoff {
                    let metres = request.pickup.distance(to: Coordinate(lat: dropoff.lat, lon: dropoff.lon))
                    request.fare = Self.quotedFareBase.saturatingAdd((Int64(roundingChecked: metres) ?? 0) / Self.quotedFareMetresPerCent)
                    request.currency = Self.quotedCurrency
                }
                if let share = demand.preBookings, share.every > 0, number % share.every == 0 {
                    request.meetingTime = startMs.saturatingAdd(Int64((atS + share.aheadS) * 1000))
                }
                inputs.append(ScheduledInput(atMs: Int64(atS * 1000), input: .request(request)))
                switch demand.rate {
                case .every(let seconds):
                    atS += seconds
                case .poisson(let perMinute):
                    // Exponential gaps; 1 - u keeps the logarithm finite.
                    atS += -log(1 - Double.random(in: 0..<1, using: &random)) * 60 / perMinute
                }
            }
        }
        return inputs
    }

    /// A quoted fare: a flag fall plus a cent per so many metres of the straight line, in US dollars
    /// (the demo drives through Manhattan).
    static let quotedFareBase: Int64 = 300
    static let quotedFareMetresPerCent: Int64 = 5
    static let quotedCurrency = "USD"
    static let passengerNames = ["A. Rossi", "J. Smith", "N. Dlamini", "M. García", "L. Chen", "S. Okafor", "K. Müller", "P. Nowak"]

    /// Scenario and generated inputs in time order; ties keep the order given (stable).
    public static func merge(_ lists: [ScheduledInput]...) -> [ScheduledInput] {
        lists.joined().enumerated().sorted { ($0.element.atMs, $0.offset) < ($1.element.atMs, $1.offset) }.map(\.element)
    }

    static func randomPoint<R: RandomNumberGenerator>(in zone: Zone, using random: inout R) -> Coordinate {
        let lats = zone.polygon.map(\.lat), lons = zone.polygon.map(\.lon)
        while true {
            let point = Coordinate(
                lat: Double.random(in: lats.min()!...lats.max()!, using: &random),
                lon: Double.random(in: lons.min()!...lons.max()!, using: &random))
            if zone.contains(point) { return point }
        }
    }
}

public struct ScheduleError: Error, Sendable, Equatable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// A small seedable generator, so that a benchmark or test run can be repeated exactly.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
