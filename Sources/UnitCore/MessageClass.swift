/// How much a message matters when the link is poor: lower goes first and is kept longer.
public enum MessageClass: Int, Sendable, Codable, CaseIterable, Comparable {
    case alarm = 0
    case reply = 1
    case event = 2
    case position = 3

    public static func < (lhs: MessageClass, rhs: MessageClass) -> Bool { lhs.rawValue < rhs.rawValue }
}
