import DispatchCore
import Foundation
import TaxiProtocol
import Testing

/// dispatchsim quotes a request's fare in its offer and reads the fare and payment of the rides.
@Suite struct FareDispatchTests {
    @Test func aQuotedFareGoesIntoTheOffer() throws {
        var h = Harness()
        h.status("T1", "available", zone: "A")
        let actions = h.feed(.request(PassengerRequest(id: "R1", pickup: inA, fare: 2350, currency: "USD")))
        let offer = try #require(actions.compactMap { if case .send(_, .offer(let o)) = $0 { o } else { nil } }.first)
        #expect(offer.fare == 2350 && offer.currency == "USD" && offer.quotedFare?.source == .quoted)
    }

    @Test func theRidesFaresAreAddedUpExactlyPerCurrencyAndPaymentsCounted() {
        var h = Harness()
        func ride(_ id: String, _ fields: String) -> [DispatchAction] {
            let message: RideMessage = decoded(
                #"{"id":"\#(id)","unit":"T1","seq":1,"job":"J\#(id)","passengers":1,"pickup":{"t":1},"drop":{"t":2}\#(fields)}"#)
            return h.feed(.report(unit: "T1", .ride(message)))
        }
        #expect(logs(ride("1", #","fare":2350,"currency":"USD","fare_source":"quoted","payment":"card""#))
            .contains("fare 23.50 USD (quoted), paid by card"))
        ride("2", #","fare":5,"currency":"USD","fare_source":"typed","payment":"cash""#)
        ride("3", #","fare":1200,"currency":"JPY","fare_source":"typed""#)
        ride("4", "")
        ride("4", #","fare":1,"currency":"USD","fare_source":"typed""#)
        #expect(h.dispatcher.stats.fares == ["USD": 2355, "JPY": 1200], "a duplicate counts once")
        #expect(h.dispatcher.stats.payments == ["card": 1, "cash": 1])
        #expect(h.dispatcher.stats.summary.contains("fares 1200 JPY, 23.55 USD"))
    }

    @Test func everyOtherGeneratedRequestQuotesAFareInCents() throws {
        let map = ZoneMap(zones: [squareA, squareB])
        let inputs = try RequestSchedule.generate([ZoneDemand(zone: "A", rate: .every(seconds: 60))], zones: map, durationS: 600, seed: 7)
        let requests = inputs.compactMap { if case .request(let request) = $0.input { request } else { nil } }
        #expect(requests.count == 10)
        for (index, request) in requests.enumerated() {
            if index % 2 == 1 {
                #expect(request.currency == "USD" && (request.fare ?? 0) >= 300 && FareLimits.check(fare: request.fare, currency: request.currency) == nil)
            } else {
                #expect(request.fare == nil && request.currency == nil)
            }
        }
    }
}
