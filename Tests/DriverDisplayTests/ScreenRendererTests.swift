import DriverDisplay
import Foundation
import TaxiProtocol
import TestHarness
import Testing
import UnitCore

let catalogueDirectory = Corpus.packageRoot + "/share/taxiunitd/lang"

/// Every language file shipped, found on disk: a new file is tested without touching this code.
let shippedLanguages: [String] = {
    let files = (try? FileManager.default.contentsOfDirectory(atPath: catalogueDirectory)) ?? []
    return files.filter { $0.hasSuffix(".toml") }.map { String($0.dropLast(5)) }.sorted()
}()

let defaultKeyLabels = [
    "accept": "a", "reject": "r", "arrived": "h", "pob": "1-8", "noshow": "n", "clear": "c", "msg": "m", "reply": "y", "send": "t",
]

func renderer(_ language: String = "en", size: ScreenSize = ScreenSize(columns: 20, rows: 4)) throws -> ScreenRenderer {
    ScreenRenderer(catalogue: try MessageCatalogue.load(language: language, directory: catalogueDirectory), size: size, keyLabels: defaultKeyLabels)
}

/// 14:30 UTC on a day in 2026, ms.
let halfPastTwo: UnitTime = 1_795_271_400_000

@Suite struct ScreenRendererTests {
    let pickup = DriverView.Pickup(address: "Via Roma 12, Milano", distanceM: 1234, passengers: 2, meetingTime: nil)

    @Test func theAvailableScreen() throws {
        let view = DriverView(mode: .available, zone: "Z3", seatsLeft: 4, online: true)
        let rendered = try renderer().render(view, now: 0, utcOffsetS: 0, showNotice: true)
        #expect(rendered.screen.rows == [
            "AVAILABLE           ",
            "Zone Z3             ",
            "Free seats 4        ",
            "Online              ",
        ])
        #expect(rendered.overflow == [])
        #expect(!rendered.screen.lines.contains { $0.alert })
    }

    @Test func offlineShowsTheMessagesWaiting() throws {
        let view = DriverView(mode: .offDuty, zone: nil, seatsLeft: 4, online: false, waiting: 17)
        let rows = try renderer().render(view, now: 0, utcOffsetS: 0, showNotice: true).screen.rows
        #expect(rows == ["OFF DUTY            ", "Zone -              ", "Free seats 4        ", "Offline 17 waiting  "])
    }

    @Test func anOfferShowsPickupDistancePassengersAndTheCountdownBlinking() throws {
        let view = DriverView(mode: .offered(pickup, deadline: 45_000), online: true)
        let screen = try renderer().render(view, now: 0, utcOffsetS: 0, showNotice: true).screen
        #expect(screen.rows == [
            "NEW JOB          45s",
            "Via Roma 12, Milano ",
            "1.2 km  2 pax       ",
            "a=Accept r=Reject   ",
        ])
        #expect(screen.lines[0].alert)
        // The countdown rounds up: 44.001 s left still shows 45.
        let later = try renderer().render(view, now: 999, utcOffsetS: 0, showNotice: true).screen
        #expect(later.rows[0].hasSuffix("45s"))
        #expect(try renderer().render(view, now: 1000, utcOffsetS: 0, showNotice: true).screen.rows[0].hasSuffix("44s"))
        #expect(try renderer().render(view, now: 90_000, utcOffsetS: 0, showNotice: true).screen.rows[0].hasSuffix(" 0s"))
    }

    @Test func aReservationShowsTheMeetingTimeInLocalTimeAndCountsDownToIt() throws {
        var reservation = pickup
        reservation.meetingTime = halfPastTwo
        let offer = DriverView(mode: .offered(reservation, deadline: halfPastTwo), online: true)
        let rows = try renderer().render(offer, now: halfPastTwo - .seconds(25 * 60), utcOffsetS: 3600, showNotice: true).screen.rows
        #expect(rows[2] == "1.2 km  2 pax @15:30")
        let enRoute = DriverView(mode: .enRoute(reservation), online: true)
        let r = try renderer()
        #expect(r.render(enRoute, now: halfPastTwo - .seconds(25 * 60), utcOffsetS: 0, showNotice: true).screen.rows[3] == "Meet 14:30 in 25m   ")
        #expect(r.render(enRoute, now: halfPastTwo - .seconds(25 * 60) + .milliseconds(1), utcOffsetS: 0, showNotice: true).screen.rows[3] == "Meet 14:30 in 25m   ")
        #expect(r.render(enRoute, now: halfPastTwo - .seconds(3 * 3600), utcOffsetS: 0, showNotice: true).screen.rows[3] == "Meet 14:30 in 3h    ")
        #expect(r.render(enRoute, now: halfPastTwo, utcOffsetS: 0, showNotice: true).screen.rows[3] == "Meet 14:30 NOW      ")
    }

    @Test func jobScreens() throws {
        let r = try renderer()
        #expect(r.render(DriverView(mode: .enRoute(pickup), online: true), now: 0, utcOffsetS: 0, showNotice: true).screen.rows == [
            "TO PICKUP           ", "Via Roma 12, Milano ", "1.2 km  2 pax       ", "h=Arrived           ",
        ])
        let atPickup = r.render(DriverView(mode: .atPickup(pickup), online: false, waiting: 3), now: 0, utcOffsetS: 0, showNotice: true).screen
        #expect(atPickup.rows == ["AT PICKUP      OFF 3", "Passengers on board?", "Via Roma 12, Milano ", "1-8=Aboard n=No-show"])
        #expect(atPickup.lines[1].alert)
        #expect(r.render(DriverView(mode: .onBoard(passengers: 2), seatsLeft: 2, online: true), now: 0, utcOffsetS: 0, showNotice: true).screen.rows == [
            "ON BOARD            ", "2 passengers        ", "Free seats 2        ", "c=Clear             ",
        ])
    }

    @Test func distances() throws {
        let r = try renderer()
        #expect(r.formatDistance(0) == "0 m")
        #expect(r.formatDistance(999.4) == "999 m")
        #expect(r.formatDistance(999.6) == "1.0 km")
        #expect(r.formatDistance(9_949) == "9.9 km")
        #expect(r.formatDistance(9_951) == "10 km")
        #expect(r.formatDistance(123_456) == "123 km")
        #expect(try renderer("it").formatDistance(1234) == "1,2 km")
    }

    /// The driver's words in the catalogue: who is logged in on the idle screens, the alert style
    /// just chosen, and an offer whose answer keys no notice hides.
    @Test func theIdleScreenNamesTheDriverAndTheOfferKeepsItsKeys() throws {
        var idle = DriverView(mode: .available, zone: "Z3", seatsLeft: 4, online: true)
        idle.driver = "D-0417"
        #expect(try renderer().render(idle, now: 0, utcOffsetS: 0, showNotice: true).screen.rows[0] == "AVAILABLE     D-0417")
        idle.mode = .offDuty
        idle.driver = String(repeating: "D", count: 32)
        #expect(try renderer().render(idle, now: 0, utcOffsetS: 0, showNotice: true).screen.rows[0] == "OFF DUTY " + String(repeating: "D", count: 11))
        idle.notice = .alertStyle(.blink)
        idle.noticeSerial = 1
        #expect(try renderer().render(idle, now: 0, utcOffsetS: 0, showNotice: true).screen.rows[3] == "Alerts: blink only  ")
        var offer = DriverView(mode: .offered(pickup, deadline: 60_000), online: true, notice: .refused(.noOffer), noticeDetail: "earlier job", noticeSerial: 1)
        let shown = try renderer().render(offer, now: 0, utcOffsetS: 0, showNotice: true).screen
        #expect(shown.rows[2] == "No offer to answer  ")
        #expect(shown.rows[3] == "a=Accept r=Reject   ")
        offer.notice = .cancelled
        #expect(try renderer().render(offer, now: 0, utcOffsetS: 0, showNotice: true).screen.rows[3] == "a=Accept r=Reject   ")
    }

    @Test func noticesTakeTheBottomRowAndAlertsBlink() throws {
        var view = DriverView(mode: .available, seatsLeft: 4, online: true, notice: .cancelled, noticeSerial: 1)
        let shown = try renderer().render(view, now: 0, utcOffsetS: 0, showNotice: true).screen
        #expect(shown.rows[3] == "JOB CANCELLED       ")
        #expect(shown.lines[3].alert)
        #expect(try renderer().render(view, now: 0, utcOffsetS: 0, showNotice: false).screen.rows[3] == "Online              ")
        view.notice = .refused(.noOffer)
        let refused = try renderer().render(view, now: 0, utcOffsetS: 0, showNotice: true).screen
        #expect(refused.rows[3] == "No offer to answer  ")
        #expect(!refused.lines[3].alert)
        view.notice = .refused(.notEnoughSeats(seats: 4))
        #expect(try renderer("it").render(view, now: 0, utcOffsetS: 0, showNotice: true).screen.rows[3] == "Solo 4 posti        ")
        view.notice = .refused(.noShowTooEarly(secondsLeft: 42))
        #expect(try renderer("zu").render(view, now: 0, utcOffsetS: 0, showNotice: true).screen.rows[3] == "Linda 42 s          ")
    }

    @Test func anAcknowledgedSOSIsOneDotNothingMore() throws {
        let quiet = DriverView(mode: .available, seatsLeft: 4, online: true)
        var acknowledged = quiet
        acknowledged.sosAcknowledged = true
        let before = try renderer().render(quiet, now: 0, utcOffsetS: 0, showNotice: true).screen.rows
        let after = try renderer().render(acknowledged, now: 0, utcOffsetS: 0, showNotice: true).screen.rows
        #expect(after[0..<3] == before[0..<3])
        #expect(after[3] == "Online             .")
    }

    @Test func dataThatDoesNotFitIsCutAndControlCharactersNeverReachTheLine() throws {
        let long = DriverView.Pickup(address: "Strada\u{1b}[2J Provinciale\n 123 per Monte Bianco", distanceM: nil, passengers: 1, meetingTime: nil)
        let rendered = try renderer().render(DriverView(mode: .enRoute(long), online: true), now: 0, utcOffsetS: 0, showNotice: true)
        #expect(rendered.screen.rows[1] == "Strada [2J Provincia")
        #expect(rendered.overflow == [], "addresses are data: cutting them is expected")
        for line in rendered.screen.lines { #expect(line.text.count == 20) }
    }

    @Test func theMessageScreenPagesTheTextAndShowsTheChosenReply() throws {
        var view = DriverView(mode: .enRoute(pickup), online: true)
        let text = "Please call the office when you can, thank you"
        view.inbox = DriverView.Inbox(
            unread: 1, open: DriverView.OpenMessage(index: 2, count: 3, text: text, page: 0, receivedAt: halfPastTwo, urgent: false, hasReplies: true, choice: nil))
        #expect(try renderer().render(view, now: halfPastTwo, utcOffsetS: 0, showNotice: true).screen.rows == [
            "MSG 2/3        14:30",
            "Please call the     ",
            "office when you can,",
            "y=Reply m=More      ",
        ])
        view.inbox.open?.page = 1
        view.inbox.open?.choice = "On my way"
        let rendered = try renderer().render(view, now: halfPastTwo, utcOffsetS: 0, showNotice: true)
        #expect(rendered.screen.rows == [
            "MSG 2/3        14:30",
            "thank you           ",
            "                    ",
            "> On my way   t=Send",
        ])
        #expect(rendered.overflow == [])
        view.notice = .refused(.noSuchReply(count: 2))
        view.noticeSerial = 1
        #expect(try renderer().render(view, now: halfPastTwo, utcOffsetS: 0, showNotice: true).screen.rows[3] == "Reply 1 to 2        ")
    }

    @Test func theIdleScreenShowsTheQueueAndUnreadMessagesAJobScreenTheirCount() throws {
        var view = DriverView(mode: .available, zone: "Z3", seatsLeft: 4, online: true)
        view.queue = QueuePosition(zone: "Z3", position: 2, of: 7)
        view.inbox = DriverView.Inbox(unread: 3)
        #expect(try renderer().render(view, now: 0, utcOffsetS: 0, showNotice: true).screen.rows == [
            "AVAILABLE           ",
            "Zone Z3        Q 2/7",
            "Free seats 4        ",
            "3 unread      m=Read",
        ])
        view.mode = .paused(reason: "break")
        #expect(try renderer().render(view, now: 0, utcOffsetS: 0, showNotice: true).screen.rows[1] == "Zone Z3             ")
        view.mode = .available
        // The zone's name stays whole: the queue's label gives way first, then the zone's.
        view.zone = "Midtown"
        view.queue = QueuePosition(zone: "Midtown", position: 12, of: 40)
        #expect(try renderer("zu").render(view, now: 0, utcOffsetS: 0, showNotice: true).screen.rows[1] == "Indawo Midtown 12/40")
        view.zone = "Upper East Side"
        #expect(try renderer("zu").render(view, now: 0, utcOffsetS: 0, showNotice: true).screen.rows[1] == "Upper East Sid 12/40")
        view.zone = "Upper East"
        #expect(try renderer("en").render(view, now: 0, utcOffsetS: 0, showNotice: true).screen.rows[1] == "Upper East     12/40")
        view.zone = "Z3"
        #expect(try renderer("en").render(view, now: 0, utcOffsetS: 0, showNotice: true).screen.rows[1] == "Zone Z3      Q 12/40")
        view.mode = .enRoute(pickup)
        view.inbox.urgentUnread = true
        let job = try renderer().render(view, now: 0, utcOffsetS: 0, showNotice: true).screen
        #expect(job.rows[0] == "TO PICKUP      MSG 3")
        #expect(job.rows[3] == "URGENT MSG    m=Read" && job.lines[3].alert)
    }

    @Test func largerScreensArePaddedWithBlankRows() throws {
        let rendered = try renderer(size: ScreenSize(columns: 40, rows: 6)).render(DriverView(mode: .available), now: 0, utcOffsetS: 0, showNotice: true)
        #expect(rendered.screen.lines.count == 6)
        #expect(rendered.screen.rows[5] == String(repeating: " ", count: 40))
    }
}

/// Every reason an input can be refused, with the longest values: 99 seats, a day's no-show wait.
let everyRefusal: [DriverRefusal] = [
    .finishJobFirst, .noOffer, .notOnTheWay, .notEnoughSeats(seats: 99), .notAtPickup, .noShowTooEarly(secondsLeft: 86_400),
    .noPosition, .tooFarForNoShow, .noPassenger, .alreadyPaused, .pauseOnlyWhenAvailable, .notPaused, .noJob,
    .loginRequired, .alreadyLoggedIn, .offDutyFirst, .wrongLogin, .loginLocked(secondsLeft: 86_400), .notLoggedIn, .unknownLanguage,
    .noMessages, .noReplies, .noSuchReply(count: 9), .nothingToSend, .answerOfferFirst, .dropAlreadyAsked, .dropNotOnBoard, .noJobToDrop,
    .paymentRequired, .unknownPayment, .fareOutOfRange, .shiftAlreadyStarted, .noShift,
]

/// Every view the terminal can show, with the longest values each field takes.
func worstCaseViews() -> [DriverView] {
    let pickup = DriverView.Pickup(
        address: "A", distanceM: 9_949, passengers: 8, meetingTime: halfPastTwo + .seconds(9 * 3600 + 29 * 60), passengerName: "N",
        pickupCode: "C", stops: 9)
    let stop = DriverView.Stop(address: "A", distanceM: 9_949)
    var modes: [DriverView.Mode] = [.offDuty, .available, .offered(pickup, deadline: halfPastTwo + .seconds(60)), .enRoute(pickup),
                                   .atPickup(pickup), .onBoard(passengers: 8), .onBoard(passengers: 8, dropoff: stop)]
    var noMeeting = pickup
    noMeeting.meetingTime = nil
    modes += [.enRoute(noMeeting), .offered(noMeeting, deadline: halfPastTwo + .seconds(60))]
    modes += ["break", "refuel", "personal", "other"].map { DriverView.Mode.paused(reason: $0) }
    var meetingSoon = pickup
    meetingSoon.meetingTime = halfPastTwo + .seconds(99 * 60)
    modes += [.enRoute(meetingSoon)]
    var noPassenger = noMeeting
    noPassenger.passengerName = nil
    noPassenger.pickupCode = nil
    modes += [.enRoute(noPassenger), .atPickup(noPassenger)]
    modes += [.login(driver: "", pinLength: 0, onPIN: false), .login(driver: String(repeating: "W", count: 32), pinLength: 12, onPIN: true)]
    // The largest fare in a currency with cents and in one with three decimals, from every source,
    // the fare being typed, and four methods with the shipped names and a long configured one.
    let payments = ["cash", "card", "account", String(repeating: "w", count: 16)]
    let largest = FareLimits.amount.upperBound
    modes += [.fare(DriverView.FareScreen(fare: nil, currency: "EUR", typing: true, payments: payments, skippable: true))]
    modes += [.fare(DriverView.FareScreen(fare: Fare(amount: largest, currency: "KWD", source: .typed), currency: "KWD", typing: true,
                                          payments: payments, skippable: true))]
    modes += [.fare(DriverView.FareScreen(fare: nil, currency: "EUR", typing: false, payments: payments, skippable: false))]
    for source in FareSource.allCases {
        for currency in ["EUR", "KWD"] {
            modes += [.fare(DriverView.FareScreen(
                fare: Fare(amount: largest, currency: currency, source: source), currency: currency, typing: false, payments: payments, skippable: true))]
        }
    }
    let notices: [DriverView.Notice?] = [
        nil, .cancelled, .updated, .sent, .timedOut, .reminder(meetingTime: halfPastTwo + .seconds(23 * 3600)), .freeSeats(99), .newMessage,
        .inputDiscarded, .alertStyle(.bell), .alertStyle(.blink), .cancelRefused,
        // A fleet's unit ids of up to six characters fit beside the text.
        .loggedInElsewhere(unit: "T12345"), .meterDisagrees(hired: true), .meterDisagrees(hired: false),
    ]
        + everyRefusal.map { .refused($0) } + CancelReason.allCases.map { .cancelConfirmed($0) }
        + ShiftLimit.allCases.flatMap { limit in
            [DriverView.Notice.shiftWarning(ShiftWarning(limit: limit, reached: false, minutesLeft: 1440)), .shiftWarning(ShiftWarning(limit: limit, reached: true))]
        }
    // The most messages kept (200), the longest canned reply (18), an open one on each of its pages.
    let longest = String(repeating: "W", count: 18)
    let open = { (page: Int, urgent: Bool, choice: String?) in
        DriverView.OpenMessage(
            index: 200, count: 200, text: String(repeating: "word ", count: 100), page: page, receivedAt: halfPastTwo, urgent: urgent,
            hasReplies: true, choice: choice)
    }
    let inboxes: [DriverView.Inbox] = [
        DriverView.Inbox(), DriverView.Inbox(unread: 200), DriverView.Inbox(unread: 200, urgentUnread: true),
        DriverView.Inbox(unread: 200, composing: longest),
        DriverView.Inbox(unread: 199, open: open(0, true, nil)), DriverView.Inbox(unread: 199, open: open(0, false, longest)),
        DriverView.Inbox(unread: 199, open: open(99, false, nil)),
    ]
    var views: [DriverView] = []
    for mode in modes {
        for online in [true, false] {
            for notice in notices {
                var view = DriverView(mode: mode, zone: "Z1", seatsLeft: 8, online: online, waiting: 9999, notice: notice, noticeSerial: 1, sosAcknowledged: true)
                view.driver = String(repeating: "W", count: 32)
                views.append(view)
                // A cancel request waiting for its answer, on every screen it can show on.
                view.cancelAsked = true
                views.append(view)
            }
            for inbox in inboxes {
                var view = DriverView(mode: mode, zone: "Z1", seatsLeft: 8, online: online, waiting: 9999, sosAcknowledged: true)
                view.inbox = inbox
                view.queue = QueuePosition(zone: "Z1", position: 9999, of: 9999)
                views.append(view)
            }
        }
    }
    // Every detail page with two-digit page numbers (`10/10`) beside the heading; an added pickup numbered 10.
    let details: [DriverView.DetailPage] = [
        .passenger(name: "N", phone: "P", pickupCode: "C"), .pickup(number: 10, stop), .dropoff(stop), .note("N"),
        .note("N"), .note("N"), .note("N"), .note("N"), .note("N"), .dropoff(stop),
    ]
    for page in details.indices {
        views.append(DriverView(mode: .enRoute(pickup), online: true, notice: .updated, noticeDetail: "D", noticeSerial: 1, details: details, page: page))
    }
    // The history at its bound (`20/22`), with every shipped payment word and a method of the fleet's own, a shift's worth of fares
    // over two totals pages, and the longest driving time.
    let historyPayments: [String?] = ["cash", "card", "account", nil, "voucher"]
    let rides = (0..<20).map { index in
        DriverView.HistoryRide(
            dropTime: halfPastTwo, label: String(repeating: "J", count: 64), fare: index == 3 ? nil : Fare(amount: 99_999, currency: "EUR", source: .typed),
            payment: historyPayments[index % historyPayments.count])
    }
    for page in [0, 3, 19, 20, 21] {
        var view = DriverView(mode: .available, online: true)
        view.history = DriverView.History(rides: rides, driving: .milliseconds(Int64.max))
        view.historyPage = page
        views.append(view)
    }
    return views
}

@Suite struct CatalogueTests {
    @Test func theRequiredLanguagesShip() {
        for language in ["en", "it", "zu", "xh", "st"] { #expect(shippedLanguages.contains(language)) }
    }

    @Test(arguments: shippedLanguages)
    func everyCatalogueIsCompleteAndKnowsNoStrayKeys(language: String) throws {
        let catalogue = try MessageCatalogue.load(language: language, directory: catalogueDirectory)
        #expect(catalogue.missingKeys == [])
        #expect(catalogue.unknownKeys == [])
    }

    @Test(arguments: shippedLanguages)
    func everyScreenFits20x4WithoutCuttingAWord(language: String) throws {
        let r = try renderer(language)
        for view in worstCaseViews() {
            let rendered = r.render(view, now: halfPastTwo, utcOffsetS: 0, showNotice: true)
            #expect(rendered.overflow == [], "\(language): \(view.mode), \(String(describing: view.notice))")
            #expect(rendered.screen.lines.count == 4)
            for line in rendered.screen.lines { #expect(line.text.count == 20) }
        }
    }

    @Test func theLoginScreenShowsTheIdAndOneStarPerDigit() throws {
        let r = try renderer("en")
        let typingID = r.render(DriverView(mode: .login(driver: "D-04", pinLength: 0, onPIN: false)), now: 0, utcOffsetS: 0, showNotice: false)
        #expect(typingID.screen.rows == ["LOGIN               ", "Driver D-04_        ", "PIN                 ", "ENTER=OK LEFT=Erase "])
        let typingPIN = r.render(DriverView(mode: .login(driver: "D-0417", pinLength: 4, onPIN: true)), now: 0, utcOffsetS: 0, showNotice: false)
        #expect(typingPIN.screen.rows[1...2] == ["Driver D-0417       ", "PIN ****_           "])
        #expect(!typingPIN.screen.rows.joined().contains("2468"))
    }

    /// Each reason has a text of its own, and the worst cases above cover every one of them.
    @Test func everyRefusalHasItsOwnText() throws {
        let keys = everyRefusal.map { MessageKey.refusal($0).key }
        #expect(Set(keys).count == everyRefusal.count)
        #expect(Set(keys) == Set(MessageKey.allCases.filter { $0.rawValue.hasPrefix("refusal.") }))
        let english = try MessageCatalogue.load(language: "en", directory: catalogueDirectory)
        #expect(english.text(.notEnoughSeats(seats: 4)) == "Only 4 seats")
        #expect(english.text(.noShowTooEarly(secondsLeft: 12)) == "No-show in 12 s")
    }

    @Test func aMissingTextFallsBackToEnglishThenToItsKey() throws {
        let english = try MessageCatalogue.load(language: "en", directory: catalogueDirectory)
        let partial = try MessageCatalogue.parse("[state]\navailable = \"LIBRE\"\n", language: "xx", fallback: english)
        #expect(partial.text(.stateAvailable) == "LIBRE")
        #expect(partial.text(.stateOffDuty) == "OFF DUTY")
        #expect(partial.missingKeys.contains(.stateOffDuty))
        let bare = try MessageCatalogue.parse("", language: "xx")
        #expect(bare.text(.stateOffDuty) == "state.off_duty")
    }

    @Test func aBadCatalogueSaysWhatIsWrong() throws {
        #expect(throws: (any Error).self) { try MessageCatalogue.parse("[state\n", language: "xx") }
        do {
            _ = try MessageCatalogue.parse("[state]\navailable = 3\n", language: "xx")
            Issue.record("a number is not a text")
        } catch {
            #expect(error.problems == ["state.available must be a string"])
        }
        #expect(try MessageCatalogue.parse("[state]\navailabel = \"x\"\n", language: "xx").unknownKeys == ["state.availabel"])
        do {
            _ = try MessageCatalogue.load(language: "xx", directory: catalogueDirectory)
            Issue.record("no such file")
        } catch {
            #expect(error.problems.first?.contains("xx.toml") == true)
        }
    }

    @Test func aNewLanguageIsJustAFile() throws {
        let scratch = try ScratchDirectory()
        try FileManager.default.copyItem(atPath: catalogueDirectory + "/en.toml", toPath: scratch.file("en.toml"))
        try "[state]\navailable = \"LIBRE\"\n".write(toFile: scratch.file("fr.toml"), atomically: true, encoding: .utf8)
        let french = try MessageCatalogue.load(language: "fr", directory: scratch.path)
        #expect(french.text(.stateAvailable) == "LIBRE")
        #expect(french.text(.stateOffDuty) == "OFF DUTY")
    }
}

@Suite struct KeyLabelTests {
    @Test func hintsShowTheConfiguredKeys() {
        var keys = ["a": "accept", "PF1": "accept", "r": "reject", "ENTER": "pob", "c": "clear"]
        for count in 1...8 { keys["\(count)"] = "pob \(count)" }
        let labels = ScreenRenderer.keyLabels(for: keys)
        #expect(labels == ["accept": "a", "reject": "r", "pob": "1-8", "clear": "c"])
        #expect(ScreenRenderer.keyLabels(for: ["ENTER": "pob", "x": "pause refuel"]) == ["pob": "ENTER", "pause": "x"])
        #expect(ScreenRenderer.keyLabels(for: ["1": "pob 1", "3": "pob 3"])["pob"] == "1", "not a range")
    }
}

@Suite struct WholeJobScreenTests {
    let pickup = DriverView.Pickup(
        address: "Via Roma 12, Milano", distanceM: 1234, passengers: 2, meetingTime: nil, passengerName: "Anna Rossi", pickupCode: "4711",
        stops: 1)

    @Test func enRouteAndAtPickupShowWhoToLookForAndFurtherPickups() throws {
        let r = try renderer()
        #expect(r.render(DriverView(mode: .enRoute(pickup), online: true), now: 0, utcOffsetS: 0, showNotice: true).screen.rows == [
            "TO PICKUP           ", "Via Roma 12, Mila +1", "1.2 km  2 pax       ", "Anna Rossi     #4711",
        ])
        #expect(r.render(DriverView(mode: .atPickup(pickup), online: true), now: 0, utcOffsetS: 0, showNotice: true).screen.rows == [
            "AT PICKUP           ", "Passengers on board?", "Anna Rossi     #4711", "1-8=Aboard n=No-show",
        ])
        let dropoff = DriverView.Stop(address: "Aeroporto Linate", distanceM: 7_450)
        #expect(r.render(DriverView(mode: .onBoard(passengers: 2, dropoff: dropoff), online: true), now: 0, utcOffsetS: 0, showNotice: true).screen.rows == [
            "ON BOARD            ", "2 passengers        ", "Aeroporto Lin 7.5 km", "c=Clear             ",
        ])
    }

    @Test func detailPagesShowPassengerPickupsDropoffAndNoteInOrder() throws {
        var job = Job(id: "J1", pickup: Place(lat: 45.46, lon: 9.19), note: "Two suitcases and a folding wheelchair, ring twice at the gate")
        job.passenger = Passenger(name: "Anna Rossi", phone: "+39 02 1234 5678", pickupCode: "4711")
        job.addedPickups = [Place(lat: 45.47, lon: 9.2, address: "Corso Buenos Aires 1"), Place(lat: 45.48, lon: 9.21)]
        job.dropoff = Place(lat: 45.45, lon: 9.27, address: "Aeroporto di Milano Linate, Terminal 1")
        let pages = DriverView.detailPages(of: job, distance: { _ in 2_500 })
        #expect(pages.count == 5)
        let r = try renderer()
        func rows(_ page: Int) -> [String] {
            r.render(DriverView(mode: .enRoute(pickup), online: true, details: pages, page: page), now: 0, utcOffsetS: 0, showNotice: true).screen.rows
        }
        #expect(rows(0) == ["PASSENGER        1/5", "Anna Rossi          ", "+39 02 1234 5678    ", "Code 4711           "])
        #expect(rows(1) == ["PICKUP 2         2/5", "Corso Buenos Aires 1", "                    ", "2.5 km              "])
        #expect(rows(2) == ["PICKUP 3         3/5", "45.48, 9.21         ", "                    ", "2.5 km              "])
        #expect(rows(3) == ["DROP-OFF         4/5", "Aeroporto di Milano ", "Linate, Terminal 1  ", "2.5 km              "])
        #expect(rows(4) == ["NOTE             5/5", "Two suitcases and a ", "folding wheelchair, ", "ring twice at the   "])
        // A page number past the end shows the job's screen.
        #expect(rows(5)[0] == "TO PICKUP           ")
    }

    @Test func theDispatchersWordsAreShownWithTheNotice() throws {
        let r = try renderer()
        let view = DriverView(mode: .available, seatsLeft: 4, online: true, notice: .cancelled, noticeDetail: "passenger withdrew", noticeSerial: 1)
        let screen = r.render(view, now: 0, utcOffsetS: 0, showNotice: true).screen
        #expect(screen.rows[2...] == ["passenger withdrew  ", "JOB CANCELLED       "])
        #expect(r.render(view, now: 0, utcOffsetS: 0, showNotice: false).screen.rows[2] == "Free seats 4        ")
        let reminder = DriverView(mode: .enRoute(pickup), online: true, notice: .reminder(meetingTime: halfPastTwo), noticeSerial: 2)
        let reminded = r.render(reminder, now: halfPastTwo - .seconds(600), utcOffsetS: 3600, showNotice: true).screen
        #expect(reminded.rows[3] == "REMINDER 15:30      ")
        #expect(reminded.lines[3].alert)
    }

    /// The driver's cancel request: waiting on the job's screen, then the answer with its reason.
    @Test func aCancelRequestShowsWhileItWaitsAndItsAnswer() throws {
        let r = try renderer()
        var waiting = DriverView(mode: .atPickup(pickup), online: true)
        waiting.cancelAsked = true
        #expect(r.render(waiting, now: 0, utcOffsetS: 0, showNotice: true).screen.rows[3] == "Drop asked: wait    ")
        let confirmed = DriverView(mode: .available, seatsLeft: 4, online: true, notice: .cancelConfirmed(.passengerUnreachable), noticeSerial: 1)
        let screen = r.render(confirmed, now: 0, utcOffsetS: 0, showNotice: true)
        #expect(screen.screen.rows[2...] == ["Passenger not found ", "JOB CANCELLED       "])
        #expect(screen.screen.lines[3].alert)
        let refused = DriverView(mode: .enRoute(pickup), online: true, notice: .cancelRefused, noticeDetail: "Call dispatch", noticeSerial: 2)
        #expect(r.render(refused, now: 0, utcOffsetS: 0, showNotice: true).screen.rows[2...] == ["Call dispatch       ", "DROP REFUSED: GO ON "])
    }
}
