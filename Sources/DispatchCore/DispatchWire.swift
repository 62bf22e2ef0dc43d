import UnitCore

/// The dispatcher's side of docs/protocol.md, in the units' own wire types (UnitCore), so the
/// reference dispatcher and the units cannot drift apart.

/// One unit message as the dispatcher sees it. Messages with an `id` (everything but `status`)
/// may arrive more than once; the dispatcher counts each `id` once.
public enum UnitReport: Sendable, Equatable {
    case status(StatusMessage)
    /// The last will, `{"online":false}`.
    case offline
    case event(id: String, Transition)
    case reply(id: String, JobReply)
    case sos(id: String, SOSAlarm)
    case position(PositionMessage)
    /// `msg/reply`: an answer, a driver's own message, or `invalid`.
    case messageReply(id: String, MessageReply)
    /// `msg/read`: the driver opened a message.
    case messageRead(id: String, MessageRead)
}

/// Everything the dispatcher sends, one case per topic.
public enum DispatchMessage: Sendable, Equatable {
    case offer(JobOffer)
    case cancel(JobCancel)
    case update(JobUpdate)
    case sosAck(SOSAck)
    case message(TextMessage)
    case queue(QueuePosition)

    public var topic: InboundTopic {
        switch self {
        case .offer: .jobOffer
        case .cancel: .jobCancel
        case .update: .jobUpdate
        case .sosAck: .sosAck
        case .message: .msg
        case .queue: .queue
        }
    }
}
