/// Messages between the dispatcher and the driver, and the taxi's place in its zone's queue, on the
/// wire (docs/protocol.md, "Messages" and "Queue position").

public enum MessagePriority: String, Sendable, Codable, CaseIterable {
    /// Rings once and waits for the driver.
    case normal
    /// Blinks and rings every 10 s until read.
    case urgent
}

/// `msg`: a text from the dispatcher to the driver, with the canned answers the driver may pick.
public struct TextMessage: Sendable, Equatable, Codable {
    public var id: String
    public var text: String
    public var replies: [String]?
    public var priority: MessagePriority?
    /// Dispatcher clock when sent, ms.
    public var t: Int64?

    public init(id: String, text: String, replies: [String]? = nil, priority: MessagePriority? = nil, t: Int64? = nil) {
        self.id = id
        self.text = text
        self.replies = replies
        self.priority = priority
        self.t = t
    }

    public var isUrgent: Bool { priority == .urgent }
}

/// `queue`: the taxi's place in its zone's queue of available taxis (1 = next to be offered a job).
public struct QueuePosition: Sendable, Equatable, Codable {
    public var zone: String
    public var position: Int
    public var of: Int
    public var t: Int64?

    public init(zone: String, position: Int, of: Int, t: Int64? = nil) {
        self.zone = zone
        self.position = position
        self.of = of
        self.t = t
    }
}

/// What `msg` and `queue` may hold, beyond the general limits (docs/protocol.md, "Limits").
public enum MessageLimits {
    /// Canned replies per message.
    public static let replies = 4
    /// A canned reply fits one terminal row after its marker.
    public static let replyCharacters = 18
    public static let zoneBytes = 64
    public static let queueLength: ClosedRange<Int> = 1...9999
    /// A queue position older than this is not shown: the dispatcher sends it again within it.
    public static let queueFreshMs: Int64 = 15 * 60_000
    /// Messages kept on the unit, read or not; the oldest read one goes first.
    public static let inboxCapacity: ClosedRange<Int> = 1...200
    /// The driver's own canned messages.
    public static let cannedCount: ClosedRange<Int> = 0...9
}

/// `msg/reply`: the driver's answer to a message (`msg` set), a message the driver sent first
/// (`msg` absent), or `invalid` for a `msg` the unit could not use (`reason` set).
public struct MessageReply: Sendable, Equatable, Codable {
    public var msg: String?
    /// The canned text the driver picked.
    public var text: String?
    /// 1-based: which of the message's `replies` (or of the unit's canned messages) it was.
    public var choice: Int?
    /// Set only on `invalid`.
    public var invalid: String?
    /// Unit clock, ms.
    public var t: UnitTime

    public init(msg: String?, text: String? = nil, choice: Int? = nil, invalid: String? = nil, t: UnitTime) {
        self.msg = msg
        self.text = text
        self.choice = choice
        self.invalid = invalid
        self.t = t
    }
}

/// `msg/read`: the driver opened the message.
public struct MessageRead: Sendable, Equatable, Codable {
    public var msg: String
    public var t: UnitTime

    public init(msg: String, t: UnitTime) {
        self.msg = msg
        self.t = t
    }
}

// MARK: Decoding

extension InboundMessage {
    /// The field that names a message on `topic`, read even from a payload that is refused so the
    /// `invalid` answer can name it.
    public static func idField(_ topic: InboundTopic) -> String {
        topic == .msg ? "id" : "job"
    }

    /// A broadcast (`fleet msg`, `zone msg`): a `msg`, decoded and checked as one.
    public static func decodeBroadcast(payload: [UInt8], now: UnitTime) -> Result<TextMessage, InboundProblem> {
        decode(topic: .msg, payload: payload, now: now).flatMap { decoded in
            if case .message(let message) = decoded { return .success(message) }
            return .failure(InboundProblem(topic: .msg, job: nil, reason: "payload is not a message"))
        }
    }

    public static func check(_ message: TextMessage, now: UnitTime) -> String? {
        if message.id.isEmpty { return "id must not be empty" }
        if message.text.isEmpty { return "text must not be empty" }
        if let reason = checkText(message.text, field: "text") { return reason }
        if let replies = message.replies {
            if replies.count > MessageLimits.replies { return "replies holds more than \(MessageLimits.replies) texts" }
            for (index, reply) in replies.enumerated() {
                if reply.isEmpty { return "replies.\(index) must not be empty" }
                if reply.count > MessageLimits.replyCharacters { return "replies.\(index) is longer than \(MessageLimits.replyCharacters) characters" }
                if let reason = checkText(reply, field: "replies.\(index)") { return reason }
            }
        }
        return checkTime(message.t, field: "t", now: now)
    }

    public static func check(_ queue: QueuePosition, now: UnitTime) -> String? {
        if queue.zone.isEmpty { return "zone must not be empty" }
        if queue.zone.utf8.count > MessageLimits.zoneBytes { return "zone is longer than \(MessageLimits.zoneBytes) bytes" }
        if queue.zone.unicodeScalars.contains(where: isControl) { return "zone contains control characters" }
        let range = MessageLimits.queueLength
        guard range.contains(queue.of) else { return "of must be from \(range.lowerBound) to \(range.upperBound)" }
        guard (1...queue.of).contains(queue.position) else { return "position must be from 1 to of (\(queue.of))" }
        return checkTime(queue.t, field: "t", now: now)
    }
}
