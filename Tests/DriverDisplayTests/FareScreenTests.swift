import DriverDisplay
import TaxiProtocol
import Testing

/// The fare and payment screen: the fare with the language's decimal separator and its source,
/// one digit key per method, the skip hint only when the pick may be skipped.
@Suite struct FareScreenTests {
    let payments = ["cash", "card", "account", "voucher-long-name"]

    func rows(_ screen: DriverView.FareScreen, _ language: String = "en") throws -> [String] {
        try renderer(language).render(DriverView(mode: .fare(screen)), now: 0, utcOffsetS: 0, showNotice: false).screen.rows
    }

    @Test func thePaymentScreenShowsTheFareItsSourceAndOneKeyPerMethod() throws {
        let quoted = Fare(amount: 2350, currency: "EUR", source: .quoted)
        #expect(try rows(DriverView.FareScreen(fare: quoted, currency: "EUR", typing: false, payments: payments, skippable: true)) == [
            "PAYMENT       c=Skip", "EUR 23.50     quoted", "1=Cash        2=Card", "3=Account  4=voucher",
        ])
        #expect(try rows(DriverView.FareScreen(fare: quoted, currency: "EUR", typing: false, payments: ["cash"], skippable: false), "it") == [
            "PAGAMENTO           ", "EUR 23,50      fissa", "1=Denaro            ", "                    ",
        ])
        #expect(try rows(DriverView.FareScreen(fare: nil, currency: "EUR", typing: false, payments: payments, skippable: true))[1] == "No fare             ")
    }

    @Test func theTypingScreenShowsTheDigitsInTheCurrencysDecimals() throws {
        let typed = Fare(amount: 1890, currency: "JPY", source: .typed)
        #expect(try rows(DriverView.FareScreen(fare: typed, currency: "JPY", typing: true, payments: payments, skippable: true)) == [
            "FARE                ", "JPY 1890_           ", "                    ", "ENTER=OK LEFT=Erase ",
        ])
        #expect(try rows(DriverView.FareScreen(fare: nil, currency: "KWD", typing: true, payments: payments, skippable: true))[1] == "KWD _               ")
        let fils = Fare(amount: 5, currency: "KWD", source: .typed)
        #expect(try rows(DriverView.FareScreen(fare: fils, currency: "KWD", typing: true, payments: payments, skippable: true))[1] == "KWD 0.005_          ")
    }
}
