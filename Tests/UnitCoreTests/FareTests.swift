import Foundation
import TaxiProtocol
import Testing
import UnitCore

/// The fare at clear: quoted by the offer (checked where it enters), reported by the meter, or typed
/// by the driver, exact in minor units, with the payment the driver picked.
@Suite struct FareWireTests {
    let now = Scenario.t0
    let pickup = #""pickup":{"lat":46.5,"lon":7.5}"#

    func decode(_ json: String) -> Result<InboundMessage, InboundProblem> {
        InboundMessage.decode(topic: .jobOffer, payload: Array(json.utf8), now: now)
    }

    @Test func anOfferQuotesAFareInMinorUnitsWithItsCurrency() throws {
        guard case .success(.offer(let offer)) = decode(#"{"job":"J1",\#(pickup),"fare":2350,"currency":"EUR"}"#) else {
            Issue.record("a quoted fare is refused"); return
        }
        #expect(Job(offer).fare == Fare(amount: 2350, currency: "EUR", source: .quoted))
        guard case .success(.offer(let bare)) = decode(#"{"job":"J1",\#(pickup)}"#) else { Issue.record("an offer without a fare is refused"); return }
        #expect(Job(bare).fare == nil)
        guard case .success(.offer(let largest)) = decode(#"{"job":"J1",\#(pickup),"fare":99999999,"currency":"JPY"}"#) else {
            Issue.record("the largest fare is refused"); return
        }
        #expect(largest.fare == 99_999_999)
    }

    @Test func aMalformedFareIsAnsweredInvalidWithTheReason() {
        let cases: [(String, String)] = [
            (#""fare":-1,"currency":"EUR""#, "fare must be from 0 to 99999999 minor units"),
            (#""fare":100000000,"currency":"EUR""#, "fare must be from 0 to 99999999 minor units"),
            (#""fare":2350"#, "fare is given without currency"),
            (#""currency":"EUR""#, "currency is given without fare"),
            (#""fare":2350,"currency":"eur""#, "currency must be an ISO 4217 code of three upper-case letters"),
            (#""fare":2350,"currency":"EURO""#, "currency must be an ISO 4217 code of three upper-case letters"),
        ]
        for (fields, reason) in cases {
            guard case .failure(let problem) = decode(#"{"job":"J1",\#(pickup),\#(fields)}"#) else { Issue.record("\(fields) accepted"); continue }
            #expect(problem.job == "J1" && problem.reason == reason, "\(fields): \(problem.reason)")
        }
        // A fraction is no amount of minor units: refused, never rounded; nor is a string.
        for fields in [#""fare":23.5,"currency":"EUR""#, #""fare":2.35e3,"currency":"EUR""#] {
            guard case .failure(let problem) = decode(#"{"job":"J1",\#(pickup),\#(fields)}"#) else { Issue.record("\(fields) accepted"); continue }
            #expect(problem.reason == "fare must be a whole number of minor units (2350 for 23.50)", "\(fields): \(problem.reason)")
        }
        for fields in [#""fare":"2350","currency":"EUR""#, #""fare":2350,"currency":978"#] {
            guard case .failure(let problem) = decode(#"{"job":"J1",\#(pickup),\#(fields)}"#) else { Issue.record("\(fields) accepted"); continue }
            #expect(problem.job == "J1", "\(fields) is answered invalid: \(problem.reason)")
        }
    }

    @Test func anAmountIsShownWithTheCurrencysDecimals() {
        #expect(Fare(amount: 2350, currency: "EUR", source: .typed).formatted() == "EUR 23.50")
        #expect(Fare(amount: 5, currency: "USD", source: .typed).formatted(decimalSeparator: ",") == "USD 0,05")
        #expect(Fare(amount: 2350, currency: "JPY", source: .typed).formatted() == "JPY 2350")
        #expect(Fare(amount: 12345, currency: "KWD", source: .typed).formatted() == "KWD 12.345")
        #expect(Fare(amount: 0, currency: "XYZ", source: .typed).formatted() == "XYZ 0.00")
    }
}

@Suite struct FareAtClearTests {
    let t = Scenario.t0

    /// On board with a job whose offer quoted `fare` (EUR minor units).
    func onBoard(quoting fare: Int64?, settings: UnitSettings = UnitSettings()) -> UnitStateMachine {
        var machine = UnitStateMachine(settings: settings)
        let start = t - .milliseconds(600_000)
        var offer = Scenario.offer("J1")
        offer.fare = fare
        offer.currency = fare.map { _ in "EUR" }
        for event: UnitEvent in [
            .driver(.duty, at: start), .inbound(.offer(offer), receivedAt: start), .driver(.accept, at: start), .driver(.arrived, at: start),
            .driver(.passengersOnBoard(1), at: start),
        ] { _ = machine.handle(event) }
        #expect(machine.state.name == .onBoard)
        return machine
    }

    @Test func aQuotedFarePaidByCardIsInTheRideAndItsMessage() throws {
        var machine = onBoard(quoting: 2350)
        let step = machine.handle(.driver(.clearSettled(Settlement(payment: "card")), at: t))
        let ride = try #require(step.ride)
        #expect(ride.fare == Fare(amount: 2350, currency: "EUR", source: .quoted) && ride.payment == "card")
        #expect(step.messages.last == .ride(ride))
        let json = String(decoding: try JSONEncoder.wire.encode(RideMessage(ride, distanceM: nil, unit: "T1", seq: 1, id: "m")), as: UTF8.self)
        #expect(json.contains(#""currency":"EUR""#) && json.contains(#""fare":2350"#) && json.contains(#""fare_source":"quoted""#)
            && json.contains(#""payment":"card""#), "\(json)")
    }

    @Test func aTypedFareIsInTheConfiguredCurrencyAndWinsOverAQuotedOne() throws {
        var settings = UnitSettings()
        settings.currency = "CHF"
        var machine = onBoard(quoting: nil, settings: settings)
        let ride = try #require(machine.handle(.driver(.clearSettled(Settlement(payment: "cash", typedFare: 1890)), at: t)).ride)
        #expect(ride.fare == Fare(amount: 1890, currency: "CHF", source: .typed) && ride.payment == "cash")
        var quoted = onBoard(quoting: 2350, settings: settings)
        #expect(try #require(quoted.handle(.driver(.clearSettled(Settlement(typedFare: 2500)), at: t)).ride).fare?.source == .typed)
    }

    @Test func theMetersFareReplacesTheQuotedOneOnlyOnBoard() throws {
        var machine = onBoard(quoting: 2350)
        let metered = machine.handle(.meterFare(amount: 2710, currency: "EUR", at: t))
        #expect(metered.snapshot?.state.job?.fare == Fare(amount: 2710, currency: "EUR", source: .meter))
        #expect(machine.handle(.meterFare(amount: -5, currency: "EUR", at: t)).snapshot == nil, "a bad meter reading changes nothing")
        #expect(try #require(machine.handle(.driver(.clear, at: t)).ride).fare == Fare(amount: 2710, currency: "EUR", source: .meter))
        #expect(machine.handle(.meterFare(amount: 100, currency: "EUR", at: t)).snapshot == nil, "nobody on board")
    }

    @Test func skippingThePaymentClearsWithoutOneUnlessItIsRequired() throws {
        var free = onBoard(quoting: 2350)
        let ride = try #require(free.handle(.driver(.clear, at: t)).ride)
        #expect(ride.payment == nil && ride.fare?.amount == 2350)
        var settings = UnitSettings()
        settings.paymentRequired = true
        var strict = onBoard(quoting: nil, settings: settings)
        for input: DriverInput in [.clear, .clearSettled(Settlement(typedFare: 100))] {
            let refused = strict.handle(.driver(input, at: t))
            #expect(refused.refusals == [.paymentRequired] && refused.ride == nil && refused.snapshot == nil)
        }
        #expect(strict.state.name == .onBoard)
        let unknown = strict.handle(.driver(.clearSettled(Settlement(payment: "bitcoin")), at: t))
        #expect(unknown.refusals == [.unknownPayment] && strict.state.name == .onBoard)
        // Only code can hand the machine a fare beyond the bounds (the word and the terminal stop at them).
        let huge = strict.handle(.driver(.clearSettled(Settlement(payment: "cash", typedFare: FareLimits.amount.upperBound + 1)), at: t))
        #expect(huge.refusals == [.fareOutOfRange] && strict.state.name == .onBoard)
        #expect(strict.handle(.driver(.clearSettled(Settlement(payment: "account")), at: t)).ride?.payment == "account")
    }

    @Test func theClearWordTakesAPaymentAndAFareInMinorUnits() {
        #expect(DriverInput.parse("clear") == .success(.clear))
        #expect(DriverInput.parse("clear card") == .success(.clearSettled(Settlement(payment: "card"))))
        #expect(DriverInput.parse("clear Cash 2350") == .success(.clearSettled(Settlement(payment: "cash", typedFare: 2350))))
        #expect(DriverInput.parse("clear 2350") == .success(.clearSettled(Settlement(typedFare: 2350))))
        for refused in ["clear cash card", "clear 1 2", "clear 100000000", "clear 23.50", "clear ca$h"] {
            guard case .failure = DriverInput.parse(refused) else { Issue.record("\(refused) parsed"); continue }
        }
    }
}

@Suite struct FareEntryTests {
    let payments = ["cash", "card", "account"]

    @Test func withoutAFareTheDriverTypesOneThenPicksThePayment() {
        var entry = FareEntry(job: "J1", known: nil, payments: payments, currency: "EUR")
        #expect(!entry.choosingPayment)
        for key: FareEntry.Key in [.digit(0), .digit(2), .digit(3), .digit(5), .digit(9), .erase, .digit(0)] { #expect(entry.type(key) == .typing) }
        #expect(entry.fare == Fare(amount: 2350, currency: "EUR", source: .typed), "a leading zero is not typed; erase takes the 9 back")
        #expect(entry.type(.digit(1)) == .typing && entry.typedFare == 23501)
        _ = entry.type(.erase)
        #expect(entry.type(.enter) == .typing && entry.choosingPayment)
        #expect(entry.type(.digit(4)) == .typing, "no fourth method")
        #expect(entry.type(.other) == .typing)
        #expect(entry.type(.digit(2)) == .submit(Settlement(payment: "card", typedFare: 2350)))
    }

    @Test func atMostEightDigitsAndLostKeysEmptyTheFare() {
        var entry = FareEntry(job: "J1", known: nil, payments: payments, currency: "EUR")
        for _ in 0..<12 { _ = entry.type(.digit(9)) }
        #expect(entry.typedFare == FareLimits.amount.upperBound)
        _ = entry.type(.lost)
        #expect(entry.typedFare == nil && !entry.choosingPayment)
    }

    @Test func aKnownFareGoesStraightToThePaymentAndTheClearKeySkipsIt() {
        let quoted = Fare(amount: 2350, currency: "USD", source: .quoted)
        var entry = FareEntry(job: "J1", known: quoted, payments: payments, currency: "EUR")
        #expect(entry.choosingPayment && entry.fare == quoted)
        #expect(entry.type(.clear) == .submit(Settlement()))
        #expect(entry.type(.erase) == .cancelled, "back from the payment with a known fare: the screen closes")
    }

    @Test func enterWithoutDigitsGoesOnWithoutAFareAndEraseGoesBack() {
        var entry = FareEntry(job: "J1", known: nil, payments: payments, currency: "EUR")
        _ = entry.type(.enter)
        #expect(entry.choosingPayment && entry.fare == nil)
        _ = entry.type(.erase)
        #expect(!entry.choosingPayment)
        #expect(entry.type(.erase) == .cancelled, "erase on no digits gives up")
        var skipping = FareEntry(job: "J1", known: nil, payments: payments, currency: "EUR")
        _ = skipping.type(.digit(7))
        #expect(skipping.type(.clear) == .typing && skipping.choosingPayment, "the clear key while typing goes on like ENTER")
        #expect(skipping.type(.clear) == .submit(Settlement(typedFare: 7)))
    }
}
