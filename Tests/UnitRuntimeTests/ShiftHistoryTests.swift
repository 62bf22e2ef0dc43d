import DriverDisplay
@testable import LocalCache
import TaxiProtocol
import TestHarness
import Testing
import UnitCore
@testable import UnitRuntime

/// The history pages' rides, kept in memory: read once at the start, added to by the steps that
/// end rides, and only ever the open shift's.
@Suite struct ShiftHistoryTests {
    let t = TestClock.now()
    var shift: Shift { Shift(startedAt: t, driving: .seconds(600)) }

    func ride(_ job: String, address: String?, fix: Fix?, payment: String) -> RideSummary {
        RideSummary(
            job: job, passengers: 1, pickupTime: t + .seconds(60), dropTime: t + .seconds(600), pickupFix: fix, dropFix: nil,
            fare: Fare(amount: 1500, currency: "EUR", source: .quoted), payment: payment, pickupAddress: address)
    }

    @Test func theStoredRidesOfTheShiftAndEachRideEndedSinceAreShownNewestFirst() {
        let stored = RideRecord(
            job: "S1", passengers: 1, pickupTime: t + .seconds(10), dropTime: t + .seconds(20), pickupPosition: Coordinate(lat: 46.5, lon: 7.5),
            dropPosition: nil, distanceM: 0, fare: Fare(amount: 900, currency: "EUR", source: .typed), payment: "cash", pickupAddress: nil)
        var history = ShiftHistory(shift: shift, rides: [stored])
        history.ended(ride("J2", address: "Via Roma 12", fix: nil, payment: "card"), in: shift)
        history.ended(ride("hail-1", address: nil, fix: nil, payment: "card"), in: shift)

        let shown = history.history(in: shift)
        #expect(shown.rides.map(\.label) == ["hail-1", "Via Roma 12", "46.50000,7.50000"])
        #expect(shown.rideCount == 3)
        #expect(shown.totals == [
            DriverView.HistoryTotal(currency: "EUR", payment: "cash", amount: 900), DriverView.HistoryTotal(currency: "EUR", payment: "card", amount: 3000),
        ])
        #expect(shown.driving == .seconds(600))
    }

    @Test func aRideOfANewShiftLetsTheEarlierShiftsRidesGo() {
        var history = ShiftHistory(shift: shift, rides: [])
        history.ended(ride("J1", address: "Via Roma 12", fix: nil, payment: "cash"), in: shift)
        let next = Shift(startedAt: t + .seconds(3600))
        #expect(history.history(in: next).rides.isEmpty, "a shift that started after the rides shows none of them")
        #expect(history.history(in: nil) == DriverView.History(rides: [], driving: nil))

        history.ended(ride("J2", address: "Bahnhofplatz 1", fix: nil, payment: "card"), in: next)
        #expect(history.history(in: next).rides.map(\.label) == ["Bahnhofplatz 1"])
        #expect(history.history(in: next).rideCount == 1)
        #expect(history.history(in: shift).rides.isEmpty)
    }

    @Test func onlyTheNewestRidesKeepAPageAndAllOfThemCount() {
        var history = ShiftHistory(shift: shift, rides: [])
        for index in 0..<(ShiftHistory.pagesKept + 5) {
            history.ended(ride("J\(index)", address: "Stop \(index)", fix: nil, payment: "cash"), in: shift)
        }
        let shown = history.history(in: shift)
        #expect(shown.rides.count == ShiftHistory.pagesKept)
        #expect(shown.rides.first?.label == "Stop \(ShiftHistory.pagesKept + 4)")
        #expect(shown.rideCount == ShiftHistory.pagesKept + 5)
        #expect(shown.totals.map(\.amount) == [Int64(1500 * (ShiftHistory.pagesKept + 5))])
    }
}
