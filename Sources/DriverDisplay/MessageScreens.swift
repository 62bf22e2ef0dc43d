import TaxiProtocol
import UnitCore

extension DriverView {
    /// The dispatcher's messages as the screen shows them.
    public struct Inbox: Sendable, Equatable {
        public var unread: Int
        /// An unread urgent message blinks and rings until read.
        public var urgentUnread: Bool
        /// The message the driver is reading.
        public var open: OpenMessage?
        /// The driver's own canned message being chosen.
        public var composing: String?

        public init(unread: Int = 0, urgentUnread: Bool = false, open: OpenMessage? = nil, composing: String? = nil) {
            self.unread = unread
            self.urgentUnread = urgentUnread
            self.open = open
            self.composing = composing
        }
    }

    public struct OpenMessage: Sendable, Equatable {
        /// 1-based, in the order kept.
        public var index: Int
        public var count: Int
        public var text: String
        /// 0-based page of the text.
        public var page: Int
        /// Unit clock, ms.
        public var receivedAt: UnitTime
        public var urgent: Bool
        public var hasReplies: Bool
        /// The canned reply chosen, not sent yet.
        public var choice: String?

        public init(index: Int, count: Int, text: String, page: Int, receivedAt: UnitTime, urgent: Bool, hasReplies: Bool, choice: String?) {
            self.index = index
            self.count = count
            self.text = text
            self.page = page
            self.receivedAt = receivedAt
            self.urgent = urgent
            self.hasReplies = hasReplies
            self.choice = choice
        }
    }
}

extension DriverView.Inbox {
    /// What the state machine keeps, for the screen.
    public init(_ messages: DriverMessages) {
        var open: DriverView.OpenMessage?
        if let reading = messages.reading, let index = messages.inbox.firstIndex(where: { $0.id == reading.id }) {
            let kept = messages.inbox[index]
            let replies = kept.message.replies ?? []
            open = DriverView.OpenMessage(
                index: index + 1, count: messages.inbox.count, text: kept.message.text, page: reading.page, receivedAt: kept.receivedAt,
                urgent: kept.message.isUrgent, hasReplies: !replies.isEmpty,
                choice: reading.choice.flatMap { replies.indices.contains($0) ? replies[$0] : nil })
        }
        let composing = messages.composing.flatMap { messages.settings.canned.indices.contains($0) ? messages.settings.canned[$0] : nil }
        self.init(unread: messages.unread, urgentUnread: messages.urgentUnread, open: open, composing: composing)
    }
}

/// The message screen, the unread row and badges, the queue position (docs/terminal.md).
extension ScreenRenderer {
    /// `Q 2/7` beside the zone while available.
    /// Who is logged in, beside an idle screen's title: as much of the id as the row has room for.
    func driverText(_ view: DriverView, beside title: String) -> String {
        guard let driver = view.driver else { return "" }
        let room = size.columns - Layout.printable(title).count - 1
        return room >= 3 ? String(Layout.printable(driver).prefix(room)) : ""
    }

    /// The zone and, while available, the taxi's place in its queue. The zone's name is what the
    /// driver reads: where both do not fit, the queue's label goes first, then the zone's; only a
    /// name too long to stand beside the bare place is cut.
    func zoneRow(_ view: DriverView, into layout: inout Layout) {
        let zone = view.zone ?? "-"
        let labelled = catalogue.text(.statusZone, ["zone": zone])
        guard case .available = view.mode, let queue = view.queue else { return layout.row(labelled, isData: true) }
        let place = "\(queue.position)/\(queue.of)"
        let choices = [(labelled, catalogue.text(.queuePosition, ["n": "\(queue.position)", "of": "\(queue.of)"])), (labelled, place), (zone, place)]
        let fitting = choices.first { left, right in Layout.printable(left).count + 1 + right.count <= size.columns } ?? (zone, place)
        layout.row(fitting.0, right: fitting.1, isData: true)
    }

    /// The idle screens' last row: unread messages when there are, else the link.
    func unreadRow(_ view: DriverView, link: String, into layout: inout Layout) {
        guard view.inbox.unread > 0 else { return layout.row(link) }
        layout.row(catalogue.text(.inboxUnread, ["n": "\(view.inbox.unread)"]), right: hints([("msg", .hintRead)]))
    }

    /// Job screens' title corner: offline first, else unread messages.
    func badge(_ view: DriverView) -> String {
        if !view.online { return linkBadge(view) }
        return view.inbox.unread > 0 ? catalogue.text(.inboxBadge, ["n": "\(view.inbox.unread)"]) : ""
    }

    /// `> OK    t=Send`; a reply too long for the hint beside it is shown whole, without it.
    private func choiceRow(_ choice: String) -> (left: String, right: String) {
        let left = "> " + choice
        let hint = hints([("send", .hintSend)])
        return left.count + 1 + hint.count <= size.columns ? (left, hint) : (left, "")
    }

    /// The open message takes the whole screen; a canned message being chosen, or an unread urgent
    /// one, takes the last row. An offer keeps its screen: it has a deadline.
    func messageRows(_ view: DriverView, now: UnitTime, utcOffsetS: Int, showNotice: Bool, into layout: inout Layout) {
        if case .offered = view.mode { return }
        if let open = view.inbox.open {
            var screen = Layout(columns: size.columns)
            let titleKey: MessageKey = open.urgent ? .messageTitleUrgent : .messageTitle
            screen.row(catalogue.text(titleKey, ["i": "\(open.index)", "n": "\(open.count)"]), right: clock(open.receivedAt, utcOffsetS))
            let textRows = max(1, size.rows - 2)
            let pages = MessageText.pages(open.text, columns: size.columns, rows: textRows)
            let page = pages.indices.contains(open.page) ? pages[open.page] : []
            for row in 0..<textRows { screen.row(row < page.count ? page[row] : "", isData: true) }
            if let choice = open.choice {
                let row = choiceRow(choice)
                screen.row(row.left, right: row.right, isData: true)
            } else {
                let next: MessageKey = open.page + 1 < pages.count ? .hintMore : .hintNext
                screen.row(hints(open.hasReplies ? [("reply", .hintReply), ("msg", next)] : [("msg", next)]))
            }
            // A notice (a refusal, a cancelled job) takes the bottom row here too.
            if showNotice, let notice = view.notice { screen.replaceLast(noticeText(notice, utcOffsetS: utcOffsetS), alert: notice.alerts) }
            screen.overflow = layout.overflow + screen.overflow
            layout = screen
        } else if let composing = view.inbox.composing {
            let row = choiceRow(composing)
            layout.replaceLast(row.left, right: row.right, alert: false, isData: true)
        } else if view.inbox.urgentUnread, !(showNotice && view.notice != nil) {
            layout.replaceLast(catalogue.text(.inboxUrgent), right: hints([("msg", .hintRead)]), alert: true, isData: false)
        }
    }
}
