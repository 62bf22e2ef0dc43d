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

    /// `now`: unit clock, ms since the epoch; `utcOffsetS`: the local time zone, for meeting times.
    public func render(_ view: DriverView, now: Int64, utcOffsetS: Int, showNotice: Bool) -> Rendered {
        var layout = Layout(columns: size.columns)
        let linkRow = linkText(view)
        switch view.mode {
        case .offDuty, .available, .paused:
            layout.row(title(view.mode))
            layout.row(catalogue.text(.statusZone, ["zone": view.zone ?? "-"]), right: queueText(view), isData: true)
            layout.row(catalogue.text(.statusSeats, ["n": "\(view.seatsLeft)"]))
            unreadRow(view, link: linkRow, into: &layout)
        case .offered(let pickup, let deadline):
            let secondsLeft = max(0, deadline.saturatingSubtract(now).saturatingAdd(999) / 1000)
            layout.row(title(view.mode), right: "\(secondsLeft)s", alert: true)
            layout.row(pickup.address, isData: true)
            let meeting = pickup.meetingTime.map { catalogue.text(.offerMeeting, ["time": clock($0, utcOffsetS)]) }
            layout.row(facts(pickup), right: meeting ?? "")
            layout.row(hints([("accept", .hintAccept), ("reject", .hintReject)]))
        case .enRoute(let pickup):
            layout.row(title(view.mode), right: badge(view))
            layout.row(pickup.address, isData: true)
            layout.row(facts(pickup))
            if let meeting = pickup.meetingTime {
                layout.row(meetingText(meeting, now: now, utcOffsetS: utcOffsetS))
            } else {
                layout.row(hints([("arrived", .hintArrived)]))
            }
        case .atPickup(let pickup):
            layout.row(title(view.mode), right: badge(view))
            layout.row(catalogue.text(.promptOnBoard), alert: true)
            layout.row(pickup.address, isData: true)
            layout.row(hints([("pob", .hintOnBoard), ("noshow", .hintNoShow)]))
        case .onBoard(let passengers):
            layout.row(title(view.mode), right: badge(view))
            layout.row(catalogue.text(.jobPassengers, ["n": "\(passengers)"]))
            layout.row(catalogue.text(.statusSeats, ["n": "\(view.seatsLeft)"]))
            layout.row(hints([("clear", .hintClear)]))
        }
        if showNotice, let notice = view.notice {
            layout.replaceLast(noticeText(notice), alert: notice.alerts)
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

    private func title(_ mode: DriverView.Mode) -> String {
        switch mode {
        case .offDuty: catalogue.text(.stateOffDuty)
        case .available: catalogue.text(.stateAvailable)
        case .paused(let reason): catalogue.text(.statePaused, ["reason": pauseWord(reason)])
        case .offered: catalogue.text(.stateOffered)
        case .enRoute: catalogue.text(.stateEnRoute)
        case .atPickup: catalogue.text(.stateAtPickup)
        case .onBoard: catalogue.text(.stateOnBoard)
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

    private func meetingText(_ meeting: Int64, now: Int64, utcOffsetS: Int) -> String {
        let minutes = meeting.saturatingSubtract(now).saturatingAdd(59_999) / 60_000
        let time = clock(meeting, utcOffsetS)
        guard minutes > 0 else { return catalogue.text(.jobMeetingNow, ["time": time]) }
        let left = minutes < 100 ? "\(minutes)m" : "\((minutes + 30) / 60)h"
        return catalogue.text(.jobMeeting, ["time": time, "left": left])
    }

    /// `HH:MM` in local time.
    func clock(_ epochMs: Int64, _ utcOffsetS: Int) -> String {
        let minuteOfDay = ((epochMs / 1000).saturatingAdd(Int64(utcOffsetS)) / 60 % 1440 + 1440) % 1440
        let hours = minuteOfDay / 60, minutes = minuteOfDay % 60
        return (hours < 10 ? "0" : "") + "\(hours):" + (minutes < 10 ? "0" : "") + "\(minutes)"
    }

    /// `a=Accept r=Reject` for the inputs that have a key.
    func hints(_ inputs: [(action: String, word: MessageKey)]) -> String {
        inputs.compactMap { input in keyLabels[input.action].map { "\($0)=\(catalogue.text(input.word))" } }.joined(separator: " ")
    }

    func noticeText(_ notice: DriverView.Notice) -> String {
        switch notice {
        case .cancelled: catalogue.text(.noticeCancelled)
        case .updated: catalogue.text(.noticeUpdated)
        case .sent: catalogue.text(.noticeSent)
        case .timedOut: catalogue.text(.noticeTimedOut)
        case .refused(let refusal): catalogue.text(refusal)
        case .newMessage: catalogue.text(.noticeNewMessage)
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
    private static func printable(_ text: String) -> String {
        String(text.map { $0.unicodeScalars.contains { $0.properties.generalCategory == .control } ? " " : $0 })
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
