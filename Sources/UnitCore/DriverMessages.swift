import TaxiProtocol

/// The driver's inbox and the taxi's place in its zone's queue (the messages themselves are
/// TaxiProtocol's: docs/protocol.md, "Messages" and "Queue position"). Pure: the state machine
/// hands events here and gets back `Step`s; the inbox is stored by the shell (table
/// `driver_messages`) from `Step.inbox`, and given back at the next start.

/// One message kept on the unit until read (and a while after, up to the capacity).
public struct InboxMessage: Sendable, Equatable, Codable {
    public var message: TextMessage
    /// Unit clock.
    public var receivedAt: UnitTime
    public var readAt: UnitTime?
    /// The canned reply the driver sent.
    public var answer: String?

    public init(message: TextMessage, receivedAt: UnitTime, readAt: UnitTime? = nil, answer: String? = nil) {
        self.message = message
        self.receivedAt = receivedAt
        self.readAt = readAt
        self.answer = answer
    }

    public var id: String { message.id }
}

/// A change to the stored inbox, in the step's transaction.
public enum InboxChange: Sendable, Equatable {
    case save(InboxMessage)
    case remove(id: String)
}

/// The driver's message keys (`msg`, `reply [N]`, `send`).
public enum MessageInput: Sendable, Equatable, Codable {
    /// Opens the oldest unread message (the newest one when all are read), turns its page, moves
    /// on to the next unread one, and closes after the last. Closes a canned message being chosen.
    case read
    /// The next canned answer of the open message (or the N-th, 1-based); with no message open,
    /// the next of the driver's own canned messages.
    case choose(Int?)
    /// Sends what was chosen.
    case send
}

public struct DriverMessageSettings: Sendable, Equatable {
    public var capacity: Int
    /// What the driver can send unasked (`[messages] canned`).
    public var canned: [String]
    /// The text room of the message screen: rows of columns (the terminal's, less the title and
    /// the bottom row). Pages are counted here with `MessageText.pages`, as the screen draws them.
    public var pageColumns: Int
    public var pageRows: Int

    public init(capacity: Int = 50, canned: [String] = ["Traffic", "Running late", "Call me"], pageColumns: Int = 20, pageRows: Int = 2) {
        self.capacity = capacity
        self.canned = canned
        self.pageColumns = pageColumns
        self.pageRows = pageRows
    }
}

/// Word-wraps a message for the terminal: the core turns pages with it, the screen draws them.
public enum MessageText {
    /// Lines of at most `columns` characters; a word longer than a line is cut across lines.
    public static func lines(_ text: String, columns: Int) -> [String] {
        let width = max(1, columns)
        var lines: [String] = []
        var line = ""
        for word in text.split(separator: " ", omittingEmptySubsequences: true) {
            var word = Substring(word)
            if !line.isEmpty, line.count + 1 + word.count <= width {
                line += " " + word
                continue
            }
            if !line.isEmpty { lines.append(line) }
            line = ""
            while word.count > width {
                lines.append(String(word.prefix(width)))
                word = word.dropFirst(width)
            }
            line = String(word)
        }
        if !line.isEmpty || lines.isEmpty { lines.append(line) }
        return lines
    }

    /// The lines of each page.
    public static func pages(_ text: String, columns: Int, rows: Int) -> [[String]] {
        let all = lines(text, columns: columns)
        let height = max(1, rows)
        return stride(from: 0, to: all.count, by: height).map { Array(all[$0..<min($0 + height, all.count)]) }
    }
}

/// The inbox, what the driver is reading or choosing, and the zone queue position.
public struct DriverMessages: Sendable, Equatable {
    public struct Standing: Sendable, Equatable {
        public var position: QueuePosition
        /// Unit clock, ms.
        public var receivedAt: UnitTime
    }

    /// Arrival order.
    public private(set) var inbox: [InboxMessage]
    public var settings: DriverMessageSettings

    /// The message on screen; not kept over a restart (the message stays, read or unread).
    public struct Reading: Sendable, Equatable {
        public var id: String
        public var page: Int
        /// 0-based index of the chosen canned reply.
        public var choice: Int?

        public init(id: String, page: Int, choice: Int?) {
            self.id = id
            self.page = page
            self.choice = choice
        }
    }

    public private(set) var reading: Reading?
    /// 0-based index of the driver's canned message being chosen.
    public private(set) var composing: Int?
    public private(set) var queue: Standing?

    public init(restoring inbox: [InboxMessage] = [], settings: DriverMessageSettings = DriverMessageSettings()) {
        self.inbox = inbox
        self.settings = settings
    }

    mutating func useCanned(_ canned: [String]) {
        guard canned != settings.canned else { return }
        settings.canned = canned
        composing = nil
    }

    /// A canned reply or canned message: one terminal row after its marker, printable.
    public static func isCannedText(_ text: String) -> Bool {
        !text.isEmpty && text.count <= MessageLimits.replyCharacters && !text.unicodeScalars.contains(where: InboundMessage.isControl)
    }

    /// What is read back from the store is checked like what came from the broker.
    public static func isRestorable(_ kept: InboxMessage) -> Bool {
        InboundMessage.checkID(kept.id, field: "id") == nil && !kept.id.isEmpty
            && InboundMessage.check(kept.message, now: kept.message.t.map(UnitTime.init(milliseconds:)) ?? kept.receivedAt) == nil
            && InboundMessage.checkText(kept.answer, field: "answer") == nil
    }

    public var unread: Int { inbox.count { $0.readAt == nil } }
    public var urgentUnread: Bool { inbox.contains { $0.readAt == nil && $0.message.isUrgent } }
    public var open: InboxMessage? { reading.flatMap { reading in inbox.first { $0.id == reading.id } } }

    /// The queue position to show at `now`: nil once it is older than `MessageLimits.queueFreshMs`.
    public func queuePosition(now: UnitTime) -> QueuePosition? {
        guard let queue, now - queue.receivedAt <= .milliseconds(MessageLimits.queueFreshMs) else { return nil }
        return queue.position
    }

    // MARK: Dispatcher

    mutating func received(_ message: TextMessage, now: UnitTime) -> Step {
        if inbox.contains(where: { $0.id == message.id }) {
            return .note("msg \(message.id) delivered again; already kept")
        }
        let kept = InboxMessage(message: message, receivedAt: now)
        inbox.append(kept)
        var step = Step(driver: [.told("Message \(message.id): \(message.text)")])
        step.inbox = [.save(kept)]
        return step + trim()
    }

    /// A broadcast is kept and shown like a message of the unit's own, and a copy of one kept (sent
    /// on the fleet's and the zone's topic, or delivered again) is not. A retained one is old news
    /// the broker repeats at every subscription, and a zone's reaches only a taxi in that zone (a
    /// subscription can outlive the zone: an unsubscribe in flight, a zone a fleet document removed).
    mutating func receivedBroadcast(_ message: TextMessage, zone: String?, retained: Bool, taxiZone: String?, now: UnitTime) -> Step {
        let origin = zone.map { "zone \($0) broadcast" } ?? "fleet broadcast"
        if retained { return .note("retained \(origin) \(message.id) ignored") }
        if let zone, zone != taxiZone {
            return .note("\(origin) \(message.id) ignored: the taxi is \(taxiZone.map { "in zone \($0)" } ?? "in no zone")")
        }
        return received(message, now: now)
    }

    /// Over the capacity: the oldest read messages go, then the oldest unread ones (logged).
    private mutating func trim() -> Step {
        var step = Step()
        while inbox.count > max(1, settings.capacity) {
            let index = inbox.firstIndex { $0.readAt != nil } ?? 0
            step.inbox.append(.remove(id: inbox[index].id))
            if inbox[index].readAt == nil { step.notes.append("msg \(inbox[index].id) dropped unread: \(settings.capacity) messages kept, none read") }
            if reading?.id == inbox[index].id { reading = nil }
            inbox.remove(at: index)
        }
        return step
    }

    /// A `msg` the unit cannot use: answered `invalid` when its id was readable. A bad `queue` is
    /// only logged: there is nobody to answer.
    func malformed(_ problem: InboundProblem, now: UnitTime) -> Step {
        let description = "malformed \(problem.topic.rawValue): \(problem.reason)"
        guard problem.topic == .msg, let id = problem.job else { return .note(description) }
        return Step(messages: [.messageReply(MessageReply(msg: id, invalid: problem.reason, t: now))], notes: [description])
    }

    mutating func queued(_ position: QueuePosition, now: UnitTime, available: Bool) -> Step {
        guard available else {
            queue = nil
            return .note("queue position while not available ignored")
        }
        queue = Standing(position: position, receivedAt: now)
        return Step()
    }

    /// The taxi left `available`: its place in the queue is gone.
    mutating func leftAvailable() {
        queue = nil
    }

    // MARK: Driver

    mutating func handle(_ input: MessageInput, now: UnitTime) -> Step {
        switch input {
        case .read: return read(now: now)
        case .choose(let number): return choose(number)
        case .send: return send(now: now)
        }
    }

    private mutating func read(now: UnitTime) -> Step {
        if composing != nil {
            composing = nil
            return Step()
        }
        if let open, var reading {
            let pages = MessageText.pages(open.message.text, columns: settings.pageColumns, rows: settings.pageRows).count
            if reading.page + 1 < pages {
                reading.page += 1
                self.reading = reading
                return Step()
            }
            self.reading = nil
            guard let next = inbox.firstIndex(where: { $0.readAt == nil }) else { return Step() }
            return openMessage(at: next, now: now)
        }
        guard let index = inbox.firstIndex(where: { $0.readAt == nil }) ?? inbox.indices.last else {
            return Step(driver: [.refused(.noMessages)])
        }
        return openMessage(at: index, now: now)
    }

    /// Shows the message; the first time, marks it read and sends the receipt.
    private mutating func openMessage(at index: Int, now: UnitTime) -> Step {
        reading = Reading(id: inbox[index].id, page: 0, choice: nil)
        // Said for `taxiunitctl press msg` and the log; the terminal draws the message itself.
        let told = DriverNotice.told("Message \(inbox[index].id) (\(index + 1)/\(inbox.count)): \(inbox[index].message.text)")
        guard inbox[index].readAt == nil else { return Step(driver: [told]) }
        inbox[index].readAt = now
        var step = Step(messages: [.messageRead(MessageRead(msg: inbox[index].id, t: now))], driver: [told])
        step.inbox = [.save(inbox[index])]
        return step
    }

    private mutating func choose(_ number: Int?) -> Step {
        if let open, var reading {
            let replies = open.message.replies ?? []
            guard !replies.isEmpty else { return Step(driver: [.refused(.noReplies)]) }
            guard let choice = pick(number, current: reading.choice, count: replies.count) else {
                return Step(driver: [.refused(.noSuchReply(count: replies.count))])
            }
            reading.choice = choice
            self.reading = reading
            return Step()
        }
        guard !settings.canned.isEmpty else { return Step(driver: [.refused(.noReplies)]) }
        guard let choice = pick(number, current: composing, count: settings.canned.count) else {
            return Step(driver: [.refused(.noSuchReply(count: settings.canned.count))])
        }
        composing = choice
        return Step()
    }

    /// 0-based: the N-th (1-based), or the one after `current`, wrapping; nil when there is no N-th.
    private func pick(_ number: Int?, current: Int?, count: Int) -> Int? {
        guard let number else { return current.map { ($0 + 1) % count } ?? 0 }
        return (1...count).contains(number) ? number - 1 : nil
    }

    private mutating func send(now: UnitTime) -> Step {
        if let open, let reading, let choice = reading.choice, let replies = open.message.replies, replies.indices.contains(choice) {
            guard let index = inbox.firstIndex(where: { $0.id == open.id }) else { return Step() }
            inbox[index].answer = replies[choice]
            self.reading = nil
            let reply = MessageReply(msg: open.id, text: replies[choice], choice: choice + 1, t: now)
            var step = Step(messages: [.messageReply(reply)], driver: [.told("Reply to \(open.id) sent: \(replies[choice])")])
            step.inbox = [.save(inbox[index])]
            return step
        }
        if reading == nil, let composing, settings.canned.indices.contains(composing) {
            self.composing = nil
            let text = settings.canned[composing]
            return Step(messages: [.messageReply(MessageReply(msg: nil, text: text, choice: composing + 1, t: now))], driver: [.told("Message sent: \(text)")])
        }
        return Step(driver: [.refused(.nothingToSend)])
    }
}
