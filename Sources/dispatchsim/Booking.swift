import DispatchCore
import Foundation
import TaxiProtocol
import UnitCore

/// The passengers' side, which a real dispatcher gets from its booking apps: requests and
/// withdrawals published on `dispatchsim/{fleet}/request` and `…/cancel`, so tests and the demo can
/// add them while the simulator runs (see docs/dispatchsim.md).
enum Booking {
    static func topics(fleet: String) -> (request: String, cancel: String) {
        ("dispatchsim/\(fleet)/request", "dispatchsim/\(fleet)/cancel")
    }

    struct Request: Decodable {
        struct Pickup: Decodable {
            var lat: Double
            var lon: Double
            var address: String?
        }

        var id: String
        var pickup: Pickup
        var passengers: Int?
        var meetingTime: Int64?
        var shares: String?
        var note: String?
        /// As in `job/offer`.
        var dropoff: Place?
        var passenger: Passenger?
        /// Quoted in the offer: minor units of `currency`.
        var fare: Int64?
        var currency: String?

        enum CodingKeys: String, CodingKey {
            case id, pickup, passengers, shares, note, dropoff, passenger, fare, currency
            case meetingTime = "meeting_time"
        }
    }

    struct Cancel: Decodable {
        var id: String
    }

    static func input(topic: String, payload: [UInt8], fleet: String) throws -> DispatchInput? {
        let (requestTopic, cancelTopic) = topics(fleet: fleet)
        switch topic {
        case requestTopic:
            let booking = try JSONDecoder().decode(Request.self, from: Data(payload))
            return .request(
                PassengerRequest(
                    id: booking.id, pickup: Coordinate(lat: booking.pickup.lat, lon: booking.pickup.lon), address: booking.pickup.address,
                    passengers: booking.passengers ?? 1, meetingTime: booking.meetingTime, sharesRideOf: booking.shares,
                    note: booking.note, dropoff: booking.dropoff, passenger: booking.passenger, fare: booking.fare, currency: booking.currency))
        case cancelTopic:
            return .withdraw(request: try JSONDecoder().decode(Cancel.self, from: Data(payload)).id)
        default:
            return nil
        }
    }
}
