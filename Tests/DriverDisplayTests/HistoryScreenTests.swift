import DriverDisplay
import TaxiProtocol
import Testing

/// The shift's history pages: a ride per page, newest first, then the totals per payment and currency.
@Suite struct HistoryScreenTests {
    let history = DriverView.History(
        rides: [
            DriverView.HistoryRide(dropTime: halfPastTwo, label: "Via Roma 12", fare: Fare(amount: 2350, currency: "EUR", source: .typed), payment: "card"),
            DriverView.HistoryRide(dropTime: halfPastTwo - .seconds(50 * 60), label: "Corso Buenos Aires 1, Milano", fare: Fare(amount: 980, currency: "EUR", source: .quoted), payment: "cash"),
            DriverView.HistoryRide(dropTime: halfPastTwo - .seconds(90 * 60), label: "45.46421,9.18951", fare: Fare(amount: 1750, currency: "EUR", source: .meter), payment: "card"),
            DriverView.HistoryRide(dropTime: halfPastTwo - .seconds(120 * 60), label: "hail-1795264200000", fare: nil, payment: nil),
        ],
        driving: .seconds(85 * 60))

    func rows(page: Int, _ language: String = "en", utcOffsetS: Int = 0) throws -> [String] {
        var view = DriverView(mode: .available, online: true)
        view.history = history
        view.historyPage = page
        return try renderer(language).render(view, now: halfPastTwo, utcOffsetS: utcOffsetS, showNotice: true).screen.rows
    }

    @Test func aRidesPageShowsItsPickupFareTimeAndPayment() throws {
        #expect(try rows(page: 0, utcOffsetS: 3600) == ["JOB              1/5", "Via Roma 12         ", "EUR 23.50      15:30", "Card                "])
        #expect(try rows(page: 1)[1] == "Corso Buenos Aires 1", "a long address is cut to the width")
        #expect(try rows(page: 2)[1] == "45.46421,9.18951    ")
        #expect(try rows(page: 3) == ["JOB              4/5", "hail-1795264200000  ", "No fare        12:30", "                    "])
        #expect(try rows(page: 0, "it")[2] == "EUR 23,50      14:30")
    }

    @Test func theTotalsPageSumsTheFaresPerPaymentAndCurrency() throws {
        #expect(try rows(page: 4) == ["JOBS 4           5/5", "Driving 1h25        ", "Card       EUR 41.00", "Cash        EUR 9.80"])
        #expect(try rows(page: 4, "zu")[0] == "UHAMBO 4         5/5")
    }

    /// The pickup: the job's address, else where the passengers got in (five decimals), else the job's id.
    @Test func aRidesPickupIsItsAddressElseItsPositionElseItsJob() {
        typealias Ride = DriverView.HistoryRide
        #expect(Ride.pickupLabel(address: "Via Roma 12", position: Coordinate(lat: 45.5, lon: 9.2), job: "J1") == "Via Roma 12")
        #expect(Ride.pickupLabel(address: nil, position: Coordinate(lat: 45.464213, lon: 9.189507), job: "J1") == "45.46421,9.18951")
        #expect(Ride.pickupLabel(address: nil, position: Coordinate(lat: -33.9249, lon: -0.000001), job: "J1") == "-33.92490,0.00000")
        #expect(Ride.pickupLabel(address: nil, position: Coordinate(lat: -89.999999, lon: -179.999999), job: "J1").count <= 20)
        #expect(Ride.pickupLabel(address: nil, position: nil, job: "hail-1") == "hail-1")
    }

    /// Every payment that took a fare gets its row: the totals go on over as many pages as they need.
    @Test func theTotalsRunOverAsManyPagesAsThePaymentsNeed() throws {
        let payments = ["cash", "card", "account", "voucher", "app", "invoice"]
        let rides = payments.enumerated().map { index, payment in
            DriverView.HistoryRide(dropTime: halfPastTwo, label: "P\(index)", fare: Fare(amount: Int64(100 * (index + 1)), currency: "EUR", source: .typed), payment: payment)
        }.reversed()
        var view = DriverView(mode: .available, online: true)
        view.history = DriverView.History(rides: Array(rides), driving: .seconds(3600))
        #expect(view.history.pageCount(rows: 4) == 6 + 3)
        func page(_ number: Int) throws -> [String] {
            view.historyPage = number
            return try renderer().render(view, now: halfPastTwo, utcOffsetS: 0, showNotice: true).screen.rows
        }
        #expect(try page(6) == ["JOBS 6           7/9", "Driving 1h00        ", "Cash        EUR 1.00", "Card        EUR 2.00"])
        #expect(try page(7) == ["JOBS 6           8/9", "Account     EUR 3.00", "voucher     EUR 4.00", "app         EUR 5.00"])
        #expect(try page(8) == ["JOBS 6           9/9", "invoice     EUR 6.00", "                    ", "                    "])
        // A taller screen takes more to a page.
        #expect(view.history.pageCount(rows: 6) == 6 + 2)
        view.historyPage = 7
        let tall = try renderer(size: ScreenSize(columns: 20, rows: 6)).render(view, now: halfPastTwo, utcOffsetS: 0, showNotice: true).screen.rows
        #expect(tall == ["JOBS 6           8/8", "app         EUR 5.00", "invoice     EUR 6.00", "                    ", "                    ", "                    "])
    }

    /// Past the rides that keep a page, the oldest loses its page but still counts in the totals.
    @Test func theTotalsCountTheRidesWithoutAPageToo() {
        var history = DriverView.History(rides: [], driving: nil)
        for index in 0..<3 {
            history.add(DriverView.HistoryRide(dropTime: halfPastTwo, label: "R\(index)", fare: Fare(amount: 1000, currency: "EUR", source: .typed), payment: "cash"), pagesKept: 2)
        }
        #expect(history.rides.map(\.label) == ["R2", "R1"])
        #expect(history.rideCount == 3)
        #expect(history.totals == [DriverView.HistoryTotal(currency: "EUR", payment: "cash", amount: 3000)])
        #expect(history.pageCount(rows: 4) == 3)
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
        for page in 0..<history.pageCount(rows: 4) {
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
