import TaxiProtocol
import UnitCore

/// The terminal's size in character cells.
public struct ScreenSize: Sendable, Equatable {
    public var columns: Int
    public var rows: Int

    /// The smallest screen every layout fits: four rows of sixteen.
    public static let minimum = ScreenSize(columns: 16, rows: 4)

    public init(columns: Int, rows: Int) {
        self.columns = columns
        self.rows = rows
    }
}

/// One row of the screen, exactly `columns` characters long.
public struct ScreenLine: Sendable, Equatable {
    public var text: [Character]
    /// Drawn blinking in reverse video: an offer, an alert.
    public var alert: Bool

    public init(_ text: [Character], alert: Bool = false) {
        self.text = text
        self.alert = alert
    }
}

public struct Screen: Sendable, Equatable {
    public var lines: [ScreenLine]

    public init(lines: [ScreenLine]) {
        self.lines = lines
    }

    public var rows: [String] { lines.map { String($0.text) } }
}

/// Draws a `DriverView` into a screen of the configured size in the catalogue's language. Pure.
///
/// Every row is cut to the width, so nothing ever overflows; texts from the catalogue that had to be
/// cut are listed in `overflow` (a catalogue that needs shorter words), while an address that does
/// not fit is just cut.
public struct ScreenRenderer: Sendable {
    public var catalogue: MessageCatalogue
    public let size: ScreenSize
    /// The key for each driver input as the driver sees it (`accept` → `a`, `pob` → `1-8`).
    public let keyLabels: [String: String]

    public init(catalogue: MessageCatalogue, size: ScreenSize, keyLabels: [String: String]) {
        self.catalogue = catalogue
        self.size = size
        self.keyLabels = keyLabels
    }

    public struct Rendered: Sendable, Equatable {
        public var screen: Screen
        public var overflow: [String]
    }

    /// `now`: unit clock; `utcOffsetS`: the local time zone, for meeting times.
    public func render(_ view: DriverView, now: UnitTime, utcOffsetS: Int, showNotice: Bool) -> Rendered {
        var layout = Layout(columns: size.columns)
        let linkRow = linkText(view)
        if let page = view.historyPage, page >= 0, page < view.history.pageCount(rows: size.rows) {
            historyScreen(view.history, number: page, utcOffsetS: utcOffsetS, into: &layout)
        } else if let page = view.preBookingPage, page >= 0, page < max(1, view.preBookings.count) {
            preBookingScreen(view.preBookings, number: page, now: now, utcOffsetS: utcOffsetS, into: &layout)
        } else if let page = view.page, view.details.indices.contains(page) {
            detailPage(view.details[page], number: page + 1, of: view.details.count, into: &layout)
        } else {
            jobScreen(view, now: now, utcOffsetS: utcOffsetS, linkRow: linkRow, into: &layout)
            switch view.mode {
            case .enRoute, .atPickup:
                // Until the dispatcher answers, the job stands and the driver sees that it was asked.
                if view.cancelAsked { layout.replaceLast(catalogue.text(.jobDropAsked), alert: false) }
            case .offDuty, .available, .paused, .offered, .onBoard, .login, .fare:
                break
            }
        }
        if showNotice, let notice = view.notice {
            if case .offered = view.mode, view.page == nil, view.historyPage == nil, view.preBookingPage == nil {
                // The offer's answer keys stay on screen: the notice takes the row above them, and
                // its detail (about an earlier job) is left out.
                layout.replace(row: layout.lines.count - 2, with: noticeText(notice, utcOffsetS: utcOffsetS), alert: notice.alerts, isData: false)
            } else {
                if case .cancelConfirmed(let reason) = notice {
                    // The driver's own reason: the cancellation is the answer to the request.
                    layout.replace(row: layout.lines.count - 2, with: catalogue.text(MessageKey.cancelReason(reason)), isData: false)
                } else if let detail = view.noticeDetail {
                    layout.replace(row: layout.lines.count - 2, with: detail)
                }
                layout.replaceLast(noticeText(notice, utcOffsetS: utcOffsetS), alert: notice.alerts)
            }
        }
        messageRows(view, now: now, utcOffsetS: utcOffsetS, showNotice: showNotice, into: &layout)
        var lines = layout.lines
        while lines.count < size.rows { lines.append(ScreenLine(Array(repeating: " ", count: size.columns))) }
        lines = Array(lines.prefix(size.rows))
        if view.sosAcknowledged {
            // One dot in the corner: the driver knows, an onlooker does not.
            lines[lines.count - 1].text[size.columns - 1] = "."
        }
        return Rendered(screen: Screen(lines: lines), overflow: layout.overflow)
    }

    /// The screen of the driver's state.
    private func jobScreen(_ view: DriverView, now: UnitTime, utcOffsetS: Int, linkRow: String, into layout: inout Layout) {
        switch view.mode {
        case .offDuty, .available, .paused:
            let heading = title(view.mode)
            layout.row(heading, right: driverText(view, beside: heading))
            zoneRow(view, into: &layout)
            layout.row(catalogue.text(.statusSeats, ["n": "\(view.seatsLeft)"]))
            unreadRow(view, link: linkRow, into: &layout)
        case .offered(let pickup, let deadline):
            let secondsLeft = max(0, (deadline - now).wholeMilliseconds.saturatingAdd(999) / 1000)
            layout.row(title(view.mode), right: "\(secondsLeft)s", alert: true)
            layout.row(pickup.address, right: pickup.stops > 0 ? "+\(pickup.stops)" : "", isData: true)
            let meeting = pickup.meetingTime.map { catalogue.text(.offerMeeting, ["time": clock($0, utcOffsetS)]) }
            layout.row(facts(pickup), right: meeting ?? "")
            layout.row(hints([("accept", .hintAccept), ("reject", .hintReject)]))
        case .enRoute(let pickup):
            layout.row(title(view.mode), right: badge(view))
            // `+2`: a shared ride's further pickups, listed in order on the detail pages.
            layout.row(pickup.address, right: pickup.stops > 0 ? "+\(pickup.stops)" : "", isData: true)
            layout.row(facts(pickup))
            if let meeting = pickup.meetingTime {
                layout.row(meetingText(meeting, now: now, utcOffsetS: utcOffsetS))
            } else if let passenger = passengerRow(pickup) {
                // Who to look for matters more near the pickup than the arrived key.
                layout.row(passenger.name, right: passenger.code, isData: true)
            } else {
                layout.row(hints([("arrived", .hintArrived)]))
            }
        case .atPickup(let pickup):
            layout.row(title(view.mode), right: badge(view))
            layout.row(catalogue.text(.promptOnBoard), alert: true)
            if let passenger = passengerRow(pickup) {
                layout.row(passenger.name, right: passenger.code, isData: true)
            } else {
                layout.row(pickup.address, isData: true)
            }
            layout.row(hints([("pob", .hintOnBoard), ("noshow", .hintNoShow)]))
        case .onBoard(let passengers, let dropoff):
            layout.row(title(view.mode), right: badge(view))
            layout.row(catalogue.text(.jobPassengers, ["n": "\(passengers)"]))
            if let dropoff {
                layout.row(dropoff.address, right: dropoff.distanceM.map(formatDistance) ?? "", isData: true)
            } else {
                layout.row(catalogue.text(.statusSeats, ["n": "\(view.seatsLeft)"]))
            }
            layout.row(hints([("clear", .hintClear)]))
        case .login(let driver, let pinLength, let onPIN):
            layout.row(title(view.mode))
            // The id as typed (cut, like any data); the cursor mark shows which field takes keys.
            layout.row(catalogue.text(.loginDriver, ["id": driver + (onPIN ? "" : "_")]), isData: true)
            layout.row(catalogue.text(.loginPIN, ["pin": String(repeating: "*", count: min(max(pinLength, 0), 12)) + (onPIN ? "_" : "")]))
            layout.row(catalogue.text(.loginHint))
        case .fare(let screen):
            fareScreen(screen, into: &layout)
        }
    }

    /// A payment method's cell on the payment screen: its digit key and name, at most 9 columns, so
    /// that two fit a row.
    static let paymentNameRoom = 7

    /// The fare being typed, or the fare and one digit key per payment method.
    private func fareScreen(_ screen: DriverView.FareScreen, into layout: inout Layout) {
        let separator = catalogue.text(.decimalSeparator)
        if screen.typing {
            layout.row(catalogue.text(.fareTitle))
            let typed = screen.fare.map { Fare.decimal($0.amount, currency: $0.currency, separator: separator) } ?? ""
            layout.row("\(screen.currency) \(typed)_", isData: true)
            layout.row("")
            layout.row(catalogue.text(.fareHint))
            return
        }
        layout.row(catalogue.text(.paymentTitle), right: screen.skippable ? hints([("clear", .hintSkip)]) : "")
        if let fare = screen.fare {
            let source = switch fare.source {
            case .quoted: catalogue.text(.fareQuoted)
            case .typed: catalogue.text(.fareTyped)
            case .meter: catalogue.text(.fareMeter)
            }
            layout.row(fare.formatted(decimalSeparator: separator), right: source)
        } else {
            layout.row(catalogue.text(.fareNone))
        }
        let cells = screen.payments.prefix(FareLimits.payments.upperBound).enumerated().map { index, name in
            "\(index + 1)=" + paymentName(name, into: &layout)
        }
        for pair in stride(from: 0, to: cells.count, by: 2) {
            layout.row(cells[pair], right: pair + 1 < cells.count ? cells[pair + 1] : "")
        }
    }

    /// The catalogue's word for a shipped method, else the configured name; cut to its room (a
    /// catalogue word that had to be cut is an overflow).
    private func paymentName(_ name: String, into layout: inout Layout) -> String {
        let word: String
        switch name {
        case "cash": word = catalogue.text(.paymentCash)
        case "card": word = catalogue.text(.paymentCard)
        case "account": word = catalogue.text(.paymentAccount)
        default: return String(name.prefix(Self.paymentNameRoom))
        }
        if word.count > Self.paymentNameRoom { layout.overflow.append(word) }
        return String(word.prefix(Self.paymentNameRoom))
    }

    /// A page of the job's details: a heading with the page number, then up to three rows.
    private func detailPage(_ page: DriverView.DetailPage, number: Int, of count: Int, into layout: inout Layout) {
        let counter = "\(number)/\(count)"
        func place(_ heading: String, _ stop: DriverView.Stop) {
            layout.row(heading, right: counter)
            let rows = Layout.wrap(stop.address, columns: size.columns, rows: 2)
            for row in rows { layout.row(row, isData: true) }
            if rows.count < 2 { layout.row("") }
            layout.row(stop.distanceM.map(formatDistance) ?? "")
        }
        switch page {
        case .passenger(let name, let phone, let code):
            layout.row(catalogue.text(.detailsPassenger), right: counter)
            layout.row(name ?? "", isData: true)
            layout.row(phone ?? "", isData: true)
            layout.row(code.map { catalogue.text(.detailsCode, ["code": $0]) } ?? "", isData: true)
        case .dropoff(let stop):
            place(catalogue.text(.detailsDropoff), stop)
        case .pickup(let number, let stop):
            place(catalogue.text(.detailsPickup, ["n": "\(number)"]), stop)
        case .note(let note):
            layout.row(catalogue.text(.detailsNote), right: counter)
            for row in Layout.wrap(note, columns: size.columns, rows: 3) { layout.row(row, isData: true) }
        }
    }

    /// A page of the shift's history: a ride per page, newest first, then the totals (the rides
    /// counted and the driving time, then the fares per payment and currency, continued on as many
    /// pages as they need under the same heading).
    private func historyScreen(_ history: DriverView.History, number: Int, utcOffsetS: Int, into layout: inout Layout) {
        let totalsPages = history.totalsPages(rows: size.rows)
        let counter = "\(number + 1)/\(history.rides.count + totalsPages.count)"
        let separator = catalogue.text(.decimalSeparator)
        if history.rides.indices.contains(number) {
            let ride = history.rides[number]
            layout.row(catalogue.text(.historyRide), right: counter)
            layout.row(ride.label, isData: true)
            layout.row(ride.fare?.formatted(decimalSeparator: separator) ?? catalogue.text(.historyNoFare), right: clock(ride.dropTime, utcOffsetS))
            layout.row(ride.payment.map { paymentName($0, into: &layout) } ?? "")
            return
        }
        let totalsPage = number - history.rides.count
        layout.row(catalogue.text(.historyJobs, ["n": "\(history.rideCount)"]), right: counter)
        if totalsPage == 0 { layout.row(catalogue.text(.historyDriving, ["time": history.driving.map(Self.hoursAndMinutes) ?? "-"])) }
        for total in totalsPages.indices.contains(totalsPage) ? totalsPages[totalsPage] : [] {
            let amount = "\(total.currency) \(Fare.decimal(total.amount, currency: total.currency, separator: separator))"
            layout.row(total.payment.map { paymentName($0, into: &layout) } ?? "-", right: amount)
        }
    }

    /// A pre-booking per page, by meeting time: when it meets (local time, and how long until
    /// then), the pickup, the job's id and its passengers; on an empty list, that there are none.
    private func preBookingScreen(_ bookings: [DriverView.PreBooking], number: Int, now: UnitTime, utcOffsetS: Int, into layout: inout Layout) {
        guard bookings.indices.contains(number) else {
            layout.row(catalogue.text(.preBookingTitle))
            layout.row(catalogue.text(.preBookingNone))
            return
        }
        let booking = bookings[number]
        layout.row(catalogue.text(.preBookingTitle), right: "\(number + 1)/\(bookings.count)")
        layout.row(meetingText(booking.meetingTime, now: now, utcOffsetS: utcOffsetS, days: true))
        layout.row(booking.pickup, isData: true)
        layout.row(booking.job, right: catalogue.text(.pickupPassengers, ["n": "\(booking.passengers)"]), isData: true)
    }

    /// `2h05`; a span past 999 hours reads as 999h59.
    static func hoursAndMinutes(_ span: Duration) -> String {
        let minutes = min(max(0, span.wholeMilliseconds / 60_000), 999 * 60 + 59)
        let rest = minutes % 60
        return "\(minutes / 60)h" + (rest < 10 ? "0" : "") + "\(rest)"
    }

    /// The passenger's name and pickup code, when the booking gave either.
    private func passengerRow(_ pickup: DriverView.Pickup) -> (name: String, code: String)? {
        guard pickup.passengerName != nil || pickup.pickupCode != nil else { return nil }
        return (pickup.passengerName ?? "", pickup.pickupCode.map { "#" + $0 } ?? "")
    }

    private func title(_ mode: DriverView.Mode) -> String {
        switch mode {
        case .offDuty: catalogue.text(.stateOffDuty)
        case .available: catalogue.text(.stateAvailable)
        case .paused(let reason): catalogue.text(.statePaused, ["reason": pauseWord(reason)])
        case .offered: catalogue.text(.stateOffered)
        case .enRoute: catalogue.text(.stateEnRoute)
        case .atPickup: catalogue.text(.stateAtPickup)
        case .onBoard: catalogue.text(.stateOnBoard)
        case .login: catalogue.text(.loginTitle)
        case .fare(let screen): catalogue.text(screen.typing ? .fareTitle : .paymentTitle)
        }
    }

    /// Exhaustive over `PauseReason`: a new reason does not compile until it has its word.
    private func pauseWord(_ reason: String) -> String {
        switch PauseReason(rawValue: reason) {
        case .break: catalogue.text(.pauseBreak)
        case .refuel: catalogue.text(.pauseRefuel)
        case .personal: catalogue.text(.pausePersonal)
        case .other, nil: catalogue.text(.pauseOther)
        }
    }

    private func linkText(_ view: DriverView) -> String {
        view.online ? catalogue.text(.statusOnline) : catalogue.text(.statusOffline, ["n": "\(view.waiting)"])
    }

    /// On job screens the link gets no row of its own: only being offline is worth the space.
    func linkBadge(_ view: DriverView) -> String {
        view.online ? "" : catalogue.text(.statusOfflineShort, ["n": "\(view.waiting)"])
    }

    private func facts(_ pickup: DriverView.Pickup) -> String {
        let passengers = catalogue.text(.pickupPassengers, ["n": "\(pickup.passengers)"])
        guard let distance = pickup.distanceM else { return passengers }
        return formatDistance(distance) + "  " + passengers
    }

    public func formatDistance(_ metres: Double) -> String {
        // Distances come from validated coordinates; anything else is shown as unknown, not trapped on.
        guard metres.isFinite, metres >= 0, metres < 100_000_000 else { return "?" }
        if metres < 999.5 { return "\(Int(metres.rounded())) m" }
        let tenths = Int((metres / 100).rounded())
        if tenths >= 100 { return "\(Int((metres / 1000).rounded())) km" }
        return "\(tenths / 10)\(catalogue.text(.decimalSeparator))\(tenths % 10) km"
    }

    /// `days`: from 48 hours on the time left reads in days (`3d`, at most `999d`), for meetings
    /// that may be far ahead.
    private func meetingText(_ meeting: UnitTime, now: UnitTime, utcOffsetS: Int, days: Bool = false) -> String {
        let minutes = (meeting - now).wholeMilliseconds.saturatingAdd(59_999) / 60_000
        let time = clock(meeting, utcOffsetS)
        guard minutes > 0 else { return catalogue.text(.jobMeetingNow, ["time": time]) }
        let hours = (minutes + 30) / 60
        let left = minutes < 100 ? "\(minutes)m" : days && hours >= 48 ? "\(min((minutes + 720) / 1440, 999))d" : "\(hours)h"
        return catalogue.text(.jobMeeting, ["time": time, "left": left])
    }

    /// `HH:MM` in local time.
    func clock(_ time: UnitTime, _ utcOffsetS: Int) -> String {
        let minuteOfDay = ((time.milliseconds / 1000).saturatingAdd(Int64(utcOffsetS)) / 60 % 1440 + 1440) % 1440
        let hours = minuteOfDay / 60, minutes = minuteOfDay % 60
        return (hours < 10 ? "0" : "") + "\(hours):" + (minutes < 10 ? "0" : "") + "\(minutes)"
    }

    /// `a=Accept r=Reject` for the inputs that have a key.
    func hints(_ inputs: [(action: String, word: MessageKey)]) -> String {
        inputs.compactMap { input in keyLabels[input.action].map { "\($0)=\(catalogue.text(input.word))" } }.joined(separator: " ")
    }

    func noticeText(_ notice: DriverView.Notice, utcOffsetS: Int) -> String {
        switch notice {
        case .reminder(let meeting): catalogue.text(.noticeReminder, ["time": clock(meeting, utcOffsetS)])
        case .freeSeats(let count): catalogue.text(.statusSeats, ["n": "\(count)"])
        case .cancelled: catalogue.text(.noticeCancelled)
        case .updated: catalogue.text(.noticeUpdated)
        case .sent: catalogue.text(.noticeSent)
        case .notStored: catalogue.text(.noticeNotStored)
        case .timedOut: catalogue.text(.noticeTimedOut)
        case .inputDiscarded: catalogue.text(.noticeInputDiscarded)
        case .alertStyle(.bell): catalogue.text(.noticeAlertBell)
        case .alertStyle(.blink): catalogue.text(.noticeAlertBlink)
        case .refused(let refusal): catalogue.text(refusal)
        case .newMessage: catalogue.text(.noticeNewMessage)
        case .ignitionOff: catalogue.text(.noticeIgnitionOff)
        case .cancelConfirmed: catalogue.text(.noticeCancelled)
        case .cancelRefused: catalogue.text(.noticeCancelRefused)
        case .loggedInElsewhere(let unit): catalogue.text(.noticeLoggedInElsewhere, ["unit": unit])
        case .offerBeside(preBooking: true): catalogue.text(.noticePreBookingOffer)
        case .offerBeside(preBooking: false): catalogue.text(.noticeNextJobOffer)
        case .reservationDue: catalogue.text(.noticeReservationDue)
        case .meterDisagrees(hired: true): catalogue.text(.noticeMeterHired)
        case .meterDisagrees(hired: false): catalogue.text(.noticeMeterVacant)
        case .shiftWarning(let warning):
            catalogue.text(MessageKey.shiftWarning(warning).key, MessageKey.shiftWarning(warning).values)
        }
    }
}

/// Rows being filled, cut to the width.
struct Layout {
    let columns: Int
    var lines: [ScreenLine] = []
    var overflow: [String] = []

    mutating func row(_ left: String, right: String = "", alert: Bool = false, isData: Bool = false) {
        lines.append(ScreenLine(fit(left, right, isData: isData), alert: alert))
    }

    mutating func replaceLast(_ text: String, right: String = "", alert: Bool, isData: Bool = false) {
        lines[lines.count - 1] = ScreenLine(fit(text, right, isData: isData), alert: alert)
    }

    /// Puts `text` (by default data: the dispatcher's words) on `row`, when the screen has that row.
    mutating func replace(row: Int, with text: String, alert: Bool = false, isData: Bool = true) {
        guard lines.indices.contains(row) else { return }
        lines[row] = ScreenLine(fit(text, "", isData: isData), alert: alert)
    }

    /// `text` over at most `rows` rows of `columns`, broken between words where a word fits; the
    /// rest is cut, like any data that does not fit.
    static func wrap(_ text: String, columns: Int, rows: Int) -> [String] {
        var result: [String] = []
        var rest = Substring(printable(text)).drop(while: { $0 == " " })
        while !rest.isEmpty, result.count < rows {
            if rest.count <= columns {
                result.append(String(rest))
                break
            }
            let head = rest.prefix(columns + 1)
            let cut = head.lastIndex(of: " ").flatMap { $0 > rest.startIndex ? $0 : nil } ?? rest.index(rest.startIndex, offsetBy: columns)
            result.append(String(rest[..<cut]).trimmingSuffixSpaces())
            rest = rest[cut...].drop(while: { $0 == " " })
        }
        return result
    }

    /// `left` from the first column, `right` against the last, at least one space between; what
    /// does not fit is cut from the left text first.
    private mutating func fit(_ left: String, _ right: String, isData: Bool) -> [Character] {
        let rightPart = Array(Self.printable(right).prefix(columns))
        let room = rightPart.isEmpty ? columns : max(0, columns - rightPart.count - 1)
        var leftPart = Array(Self.printable(left))
        if leftPart.count > room {
            if !isData { overflow.append(left + (right.isEmpty ? "" : " | " + right)) }
            leftPart = Array(leftPart.prefix(room))
        }
        if right.count > columns { overflow.append(right) }
        let gap = columns - leftPart.count - rightPart.count
        return leftPart + Array(repeating: " ", count: max(0, gap)) + rightPart
    }

    /// Control characters in data (an address with a newline or an escape) would move the cursor.
    static func printable(_ text: String) -> String {
        String(text.map { $0.unicodeScalars.contains { $0.properties.generalCategory == .control } ? " " : $0 })
    }
}

extension String {
    fileprivate func trimmingSuffixSpaces() -> String {
        var text = self
        while text.last == " " { text.removeLast() }
        return text
    }
}

extension ScreenRenderer {
    /// The key to show for each input in hints, from a key map (`a` → `accept`, `2` → `pob 2`):
    /// the shortest key name, and for passenger counts on consecutive digits their range (`1-8`).
    public static func keyLabels(for keys: [String: String]) -> [String: String] {
        var byAction: [String: [(key: String, input: String)]] = [:]
        for (key, input) in keys {
            guard let action = input.split(separator: " ").first.map(String.init) else { continue }
            byAction[action, default: []].append((key, input))
        }
        var labels: [String: String] = [:]
        for (action, mapped) in byAction {
            let counted = mapped.compactMap { entry -> Int? in
                guard let digit = Int(entry.key), entry.input == "\(action) \(digit)" else { return nil }
                return digit
            }.sorted()
            if counted.count > 1, counted.last! - counted.first! == counted.count - 1 {
                labels[action] = "\(counted.first!)-\(counted.last!)"
            } else {
                labels[action] = mapped.map(\.key).sorted { ($0.count, $0) < ($1.count, $1) }.first
            }
        }
        return labels
    }
}
