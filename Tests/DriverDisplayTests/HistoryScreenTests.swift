import DriverDisplay
import TaxiProtocol
import Testing

/// The shift's history pages: a ride per page, newest first, then the totals per payment and currency.
@Suite struct HistoryScreenTests {
    let history = DriverView.History(
        rides: [
            DriverView.HistoryRide(dropTime: halfPastTwo, label: "J-4711", fare: Fare(amount: 2350, currency: "EUR", source: .typed), payment: "card"),
            DriverView.HistoryRide(dropTime: halfPastTwo - .seconds(50 * 60), label: "J-4702", fare: Fare(amount: 980, currency: "EUR", source: .quoted), payment: "cash"),
            DriverView.HistoryRide(dropTime: halfPastTwo - .seconds(90 * 60), label: "J-4698", fare: Fare(amount: 1750, currency: "EUR", source: .meter), payment: "card"),
            DriverView.HistoryRide(dropTime: halfPastTwo - .seconds(120 * 60), label: "J-4690", fare: nil, payment: nil),
        ],
        driving: .seconds(85 * 60))

    func rows(page: Int, _ language: String = "en", utcOffsetS: Int = 0) throws -> [String] {
        var view = DriverView(mode: .available, online: true)
        view.history = history
        view.historyPage = page
        return try renderer(language).render(view, now: halfPastTwo, utcOffsetS: utcOffsetS, showNotice: true).screen.rows
    }

    @Test func aRidesPageShowsItsJobFareTimeAndPayment() throws {
        #expect(try rows(page: 0, utcOffsetS: 3600) == ["JOB              1/5", "J-4711              ", "EUR 23.50      15:30", "Card                "])
        #expect(try rows(page: 3) == ["JOB              4/5", "J-4690              ", "No fare        12:30", "                    "])
        #expect(try rows(page: 0, "it")[2] == "EUR 23,50      14:30")
    }

    @Test func theTotalsPageSumsTheFaresPerPaymentAndCurrency() throws {
        #expect(try rows(page: 4) == ["JOBS 4           5/5", "Driving 1h25        ", "Card       EUR 41.00", "Cash        EUR 9.80"])
        #expect(try rows(page: 4, "zu")[0] == "UHAMBO 4         5/5")
    }

    @Test func withoutAShiftTheTotalsSayNoDrivingTime() throws {
        var view = DriverView(mode: .available, online: true)
        view.history = DriverView.History(rides: [], driving: nil)
        view.historyPage = 0
        #expect(try renderer().render(view, now: halfPastTwo, utcOffsetS: 0, showNotice: true).screen.rows == [
            "JOBS 0           1/1", "Driving -           ", "                    ", "                    ",
        ])
    }

    @Test func noHistoryPageShowsTheStatesScreen() throws {
        var view = DriverView(mode: .available, online: true)
        view.history = history
        #expect(try renderer().render(view, now: halfPastTwo, utcOffsetS: 0, showNotice: true).screen.rows[0] == "AVAILABLE           ")
    }

    @Test(arguments: shippedLanguages)
    func everyHistoryPageFits20x4(language: String) throws {
        let r = try renderer(language)
        for page in 0..<history.pageCount {
            var view = DriverView(mode: .available, online: true)
            view.history = history
            view.historyPage = page
            let rendered = r.render(view, now: halfPastTwo, utcOffsetS: 0, showNotice: true)
            #expect(rendered.overflow == [], "\(language): page \(page)")
            #expect(rendered.screen.lines.count == 4)
            for line in rendered.screen.lines { #expect(line.text.count == 20) }
        }
    }
}
