import DriverDisplay
import TaxiProtocol
import Testing
import UnitCore

/// The pre-bookings page: one accepted pre-booking per page, by meeting time, or a page saying there
/// are none.
@Suite struct PreBookingScreenTests {
    let bookings = [
        DriverView.PreBooking(job: "R-4711", meetingTime: halfPastTwo + .seconds(3 * 3600), pickup: "Via Roma 12, Milano Centrale", passengers: 2),
        DriverView.PreBooking(job: "R-4720", meetingTime: halfPastTwo + .seconds(4 * 86400 + 1800), pickup: "46.51, 7.5", passengers: 1),
    ]

    func rows(_ bookings: [DriverView.PreBooking], page: Int, _ language: String = "en", utcOffsetS: Int = 0) throws -> [String] {
        var view = DriverView(mode: .available, online: true)
        view.preBookings = bookings
        view.preBookingPage = page
        return try renderer(language).render(view, now: halfPastTwo, utcOffsetS: utcOffsetS, showNotice: true).screen.rows
    }

    @Test func aPageShowsTheMeetingInLocalTimeThePickupCutTheJobAndItsPassengers() throws {
        #expect(try rows(bookings, page: 0, utcOffsetS: 3600) == ["PRE-BOOKING      1/2", "Meet 18:30 in 3h    ", "Via Roma 12, Milano ", "R-4711         2 pax"])
        #expect(try rows(bookings, page: 1) == ["PRE-BOOKING      2/2", "Meet 15:00 in 4d    ", "46.51, 7.5          ", "R-4720         1 pax"])
        #expect(try rows(bookings, page: 0, "it")[0...1] == ["PRENOTAZIONE     1/2", "Ore 17:30 tra 3h    "])
    }

    @Test func anEmptyListSaysThereAreNone() throws {
        #expect(try rows([], page: 0) == ["PRE-BOOKING         ", "No pre-bookings     ", "                    ", "                    "])
        #expect(try rows([], page: 0, "it")[1] == "Nessuna prenotazione")
    }

    @Test func aPageNoLongerHeldShowsTheStatesScreen() throws {
        // The pre-booking paged to was cancelled meanwhile.
        #expect(try rows(Array(bookings.prefix(1)), page: 1)[0] == "AVAILABLE           ")
        var view = DriverView(mode: .available, online: true)
        view.preBookings = bookings
        #expect(try renderer().render(view, now: halfPastTwo, utcOffsetS: 0, showNotice: true).screen.rows[0] == "AVAILABLE           ")
    }

    @Test func theOfferKeysRowStaysVisibleOnlyOnTheOffersOwnScreen() throws {
        // While an offer waits, the page is what the driver asked for: a notice takes its last row as on any page.
        var view = DriverView(mode: .offered(DriverView.Pickup(address: "A", distanceM: nil, passengers: 1, meetingTime: nil), deadline: halfPastTwo + .seconds(30)),
            online: true, notice: .sent, noticeSerial: 1)
        view.preBookings = bookings
        view.preBookingPage = 0
        let shown = try renderer().render(view, now: halfPastTwo, utcOffsetS: 0, showNotice: true).screen.rows
        #expect(shown[0] == "PRE-BOOKING      1/2" && shown[3] == "Sent                ")
    }

    @Test func theViewIsMadeFromWhatTheCoreHolds() {
        var job = Job(JobOffer(job: "R1", pickup: Place(lat: 46.5, lon: 7.5), passengers: 3, meetingTime: halfPastTwo.milliseconds))
        job.note = "gate B"
        #expect(DriverView.PreBooking(Reservation(job: job, meetingTime: halfPastTwo))
            == DriverView.PreBooking(job: "R1", meetingTime: halfPastTwo, pickup: "46.5, 7.5", passengers: 3))
    }

    @Test(arguments: shippedLanguages)
    func everyPreBookingPageFits20x4(language: String) throws {
        let r = try renderer(language)
        // The bound of `[job] max_upcoming` (`64/64`), the longest wait and the most passengers.
        let longest = (0..<64).map { index in
            DriverView.PreBooking(
                job: String(repeating: "R", count: 64), meetingTime: halfPastTwo + .seconds(Int64(index) * 86_400_000), pickup: String(repeating: "P", count: 64),
                passengers: 99)
        }
        for (list, page) in [(longest, 63), (longest, 0), (longest, 9), ([], 0)] {
            var view = DriverView(mode: .onBoard(passengers: 8), online: false, waiting: 9999)
            view.preBookings = list
            view.preBookingPage = page
            let rendered = r.render(view, now: halfPastTwo, utcOffsetS: 0, showNotice: true)
            #expect(rendered.overflow == [], "\(language): page \(page) of \(list.count)")
            #expect(rendered.screen.lines.count == 4)
            for line in rendered.screen.lines { #expect(line.text.count == 20) }
        }
    }
}
