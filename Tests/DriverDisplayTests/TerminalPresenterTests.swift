import DriverDisplay
import TestHarness
import Testing

@Suite struct TerminalPresenterTests {
    func presenter(charset: TerminalCharset = .ascii) throws -> TerminalPresenter {
        TerminalPresenter(renderer: try renderer(), charset: charset)
    }

    let pickup = DriverView.Pickup(address: "Via Roma 12", distanceM: 800, passengers: 1, meetingTime: nil)

    @Test func theFirstPaintClearsAndDrawsEverything() throws {
        var terminal = VirtualTerminal(columns: 20, rows: 4)
        var presenter = try presenter()
        let view = DriverView(mode: .available, zone: "Z3", seatsLeft: 4, online: true)
        let bytes = presenter.present(view, now: 0, utcOffsetS: 0)
        #expect(bytes.starts(with: Array("\u{1b}[0m\u{1b}[2J".utf8)))
        terminal.apply(bytes)
        #expect(terminal.rows == ["AVAILABLE           ", "Zone Z3             ", "Free seats 4        ", "Online              "])
        #expect(presenter.present(view, now: 100, utcOffsetS: 0) == [], "nothing changed, nothing sent")
    }

    @Test func anUrgentMessageBlinksAndRingsEveryTenSecondsUntilRead() throws {
        var terminal = VirtualTerminal(columns: 20, rows: 4)
        var presenter = try presenter()
        var view = DriverView(mode: .available, zone: "Z3", seatsLeft: 4, online: true)
        view.inbox = DriverView.Inbox(unread: 1, urgentUnread: true)
        terminal.apply(presenter.present(view, now: 0, utcOffsetS: 0))
        #expect(terminal.bells == 1)
        #expect(terminal.rows[3] == "URGENT MSG    m=Read" && terminal.blinking[3].allSatisfy { $0 })
        terminal.apply(presenter.present(view, now: 9_999, utcOffsetS: 0))
        #expect(terminal.bells == 1)
        terminal.apply(presenter.present(view, now: 10_000, utcOffsetS: 0))
        #expect(terminal.bells == 2)
        // Read: the message screen, no more ringing.
        view.inbox = DriverView.Inbox(open: DriverView.OpenMessage(
            index: 1, count: 1, text: "Call the office", page: 0, receivedAt: 0, urgent: true, hasReplies: false, choice: nil))
        terminal.apply(presenter.present(view, now: 20_000, utcOffsetS: 0))
        terminal.apply(presenter.present(view, now: 40_000, utcOffsetS: 0))
        #expect(terminal.bells == 2)
        #expect(terminal.rows == ["URGENT 1/1     00:00", "Call the office     ", "                    ", "m=Next              "])
        #expect(!terminal.blinking.joined().contains(true))
    }

    @Test func onlyChangedCharactersAreSent() throws {
        var presenter = try presenter()
        var view = DriverView(mode: .available, zone: "Z3", seatsLeft: 4, online: true)
        _ = presenter.present(view, now: 0, utcOffsetS: 0)
        view.seatsLeft = 3
        #expect(presenter.present(view, now: 0, utcOffsetS: 0) == Array("\u{1b}[3;12H3".utf8))
        view.zone = "Z4"
        view.seatsLeft = 2
        #expect(presenter.present(view, now: 0, utcOffsetS: 0) == Array("\u{1b}[2;7H4\u{1b}[3;12H2".utf8))
    }

    @Test func theOfferCountdownRedrawsOnlyItsDigitsAndTheBellRingsUntilAnswered() throws {
        var terminal = VirtualTerminal(columns: 20, rows: 4)
        var presenter = try presenter()
        let offer = DriverView(mode: .offered(pickup, deadline: 60_000), online: true)
        terminal.apply(presenter.present(offer, now: 0, utcOffsetS: 0))
        #expect(terminal.bells == 1)
        #expect(terminal.rows[0] == "NEW JOB          60s")
        #expect(terminal.blinking[0].allSatisfy { $0 })
        let tick = presenter.present(offer, now: 1000, utcOffsetS: 0)
        #expect(tick == Array("\u{1b}[1;18H\u{1b}[5;7m59\u{1b}[0m".utf8))
        terminal.apply(tick)
        #expect(terminal.rows[0] == "NEW JOB          59s")
        #expect(presenter.present(offer, now: 2000, utcOffsetS: 0) == Array("\u{1b}[1;19H\u{1b}[5;7m8\u{1b}[0m".utf8))
        terminal.apply(presenter.present(offer, now: 9_999, utcOffsetS: 0))
        #expect(terminal.bells == 1)
        terminal.apply(presenter.present(offer, now: 10_000, utcOffsetS: 0))
        #expect(terminal.bells == 2, "an unanswered offer rings again")
        terminal.apply(presenter.present(DriverView(mode: .enRoute(pickup), online: true), now: 11_000, utcOffsetS: 0))
        terminal.apply(presenter.present(DriverView(mode: .enRoute(pickup), online: true), now: 30_000, utcOffsetS: 0))
        #expect(terminal.bells == 2, "answered: quiet")
        #expect(terminal.rows[0] == "TO PICKUP           ")
        #expect(!terminal.blinking[0].contains(true))
    }

    /// The driver's `alert blink`: the same alerts blink, and the bell never rings.
    @Test func silentAlertsBlinkWithoutTheBell() throws {
        var terminal = VirtualTerminal(columns: 20, rows: 4)
        var presenter = try presenter()
        presenter.ringsBell = false
        let offer = DriverView(mode: .offered(pickup, deadline: 60_000), online: true)
        terminal.apply(presenter.present(offer, now: 0, utcOffsetS: 0))
        terminal.apply(presenter.present(offer, now: 10_000, utcOffsetS: 0))
        #expect(terminal.blinking[0].allSatisfy { $0 })
        terminal.apply(presenter.present(DriverView(mode: .atPickup(pickup), online: true), now: 11_000, utcOffsetS: 0))
        #expect(terminal.blinking.contains { $0.contains(true) })
        #expect(terminal.bells == 0)
    }

    @Test func cancellationUpdateAndArrivalAlertOnce() throws {
        var terminal = VirtualTerminal(columns: 20, rows: 4)
        var presenter = try presenter()
        terminal.apply(presenter.present(DriverView(mode: .enRoute(pickup), online: true), now: 0, utcOffsetS: 0))
        #expect(terminal.bells == 0)
        let updated = DriverView(mode: .enRoute(pickup), online: true, notice: .updated, noticeSerial: 1)
        terminal.apply(presenter.present(updated, now: 100, utcOffsetS: 0))
        #expect(terminal.bells == 1)
        #expect(terminal.rows[3] == "JOB UPDATED         ")
        terminal.apply(presenter.present(updated, now: 5000, utcOffsetS: 0))
        #expect(terminal.bells == 1)
        terminal.apply(presenter.present(updated, now: 8100, utcOffsetS: 0))
        #expect(terminal.rows[3] == "h=Arrived           ", "the notice goes after its time")
        let arrived = DriverView(mode: .atPickup(pickup), online: true, noticeSerial: 1)
        terminal.apply(presenter.present(arrived, now: 9000, utcOffsetS: 0))
        #expect(terminal.bells == 2, "the arrival prompt alerts")
        terminal.apply(presenter.present(arrived, now: 30_000, utcOffsetS: 0))
        #expect(terminal.bells == 2)
        let cancelled = DriverView(mode: .available, online: true, notice: .cancelled, noticeSerial: 2)
        terminal.apply(presenter.present(cancelled, now: 31_000, utcOffsetS: 0))
        #expect(terminal.bells == 3)
        #expect(terminal.rows[3] == "JOB CANCELLED       ")
    }

    @Test func invalidateRepaintsEverything() throws {
        var presenter = try presenter()
        let view = DriverView(mode: .available, online: true)
        _ = presenter.present(view, now: 0, utcOffsetS: 0)
        presenter.invalidate()
        var terminal = VirtualTerminal(columns: 20, rows: 4)
        terminal.cells[2] = Array("garbage garbage garb")
        terminal.apply(presenter.present(view, now: 0, utcOffsetS: 0))
        #expect(terminal.rows[2] == "Free seats 0        ")
    }

    @Test func asciiTerminalsGetAccentsFoldedAndUTF8TerminalsGetThemAsIs() throws {
        let italian = try renderer("it")
        let view = DriverView(mode: .enRoute(DriverView.Pickup(address: "Piazza Città 1", distanceM: nil, passengers: 1, meetingTime: nil)), online: true)
        var ascii = TerminalPresenter(renderer: italian, charset: .ascii)
        let asciiBytes = ascii.present(view, now: 0, utcOffsetS: 0)
        #expect(asciiBytes.allSatisfy { $0 < 0x80 })
        #expect(String(decoding: asciiBytes, as: UTF8.self).contains("Piazza Citta 1"))
        var utf8 = TerminalPresenter(renderer: italian, charset: .utf8)
        #expect(String(decoding: utf8.present(view, now: 0, utcOffsetS: 0), as: UTF8.self).contains("Piazza Città 1"))
        #expect(TerminalPresenter.asciiByte("→") == UInt8(ascii: "?"))
    }

    @Test func changedSpansMergeWhenCloserThanACursorMove() {
        let old = Array("abcdefghijklmnopqrst"), new = Array("Xbcdefghijklmnopqrs1")
        #expect(TerminalPresenter.changedSpans(old, new) == [0..<1, 19..<20])
        #expect(TerminalPresenter.changedSpans(Array("abcdef"), Array("XbXdeX")) == [0..<6])
        #expect(TerminalPresenter.changedSpans(old, old) == [])
    }
}
