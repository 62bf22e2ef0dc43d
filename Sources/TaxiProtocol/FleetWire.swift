#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The fleet's side of the protocol that the unit answers (docs/protocol.md, "Fleet configuration"
/// and "Commands"). The documents and commands themselves are signed; reading them is FleetControl's.

/// Which document a fleet setting came from. The unit's own document overrides the fleet's.
public enum ConfigScope: String, Sendable, Codable, CaseIterable {
    case fleet
    case unit
}

/// `config/ack`: what the unit did with a configuration document. Queued in the outbox like every
/// unit → fleet message.
public typealias ConfigAckMessage = Envelope<ConfigAckReport>

/// The body of a `ConfigAckMessage`.
public struct ConfigAckReport: Sendable, Equatable, Codable {
    public enum Result: String, Sendable, Codable {
        case applied
        case rejected
        case rolledBack = "rolled_back"
    }

    public var t: UnitTime
    public var scope: ConfigScope
    /// Omitted when the document's version could not be read.
    public var version: Int?
    public var result: Result
    public var reason: String?
    /// Omitted when there are none.
    public var errors: [String]?

    public init(t: UnitTime, scope: ConfigScope, version: Int?, result: Result, reason: String?, errors: [String]) {
        self.t = t
        self.scope = scope
        self.version = version
        self.result = result
        self.reason = reason
        self.errors = errors.isEmpty ? nil : errors
    }
}

/// `cmd/reply`: the envelope's `id` is this reply's own, `cmd_id` the command's. `Status` is what
/// `status` answers with: the unit's control socket status document.
public typealias CommandReplyMessage<Status: Encodable & Sendable> = Envelope<CommandReply<Status>>

extension Envelope {
    public init<Status>(unit: String, seq: Int64, id: String, t: UnitTime, cmdID: String?, cmd: String?, result: CommandReply<Status>.Result)
    where Body == CommandReply<Status> {
        self.init(CommandReply(t: t, cmdID: cmdID, cmd: cmd, result: result), unit: unit, seq: seq, id: id)
    }

    /// The wire bytes. The status document may name its keys in camelCase (Swift's); on MQTT they
    /// are converted, which leaves the message's own keys, all snake_case already, as they are.
    public func json<Status>() throws -> [UInt8] where Body == CommandReply<Status> {
        Array(try commandReplyEncoder.encode(self))
    }
}

private let commandReplyEncoder: JSONEncoder = {
    let encoder = JSONEncoder()
    encoder.outputFormatting = JSONEncoder.wire.outputFormatting
    encoder.keyEncodingStrategy = .convertToSnakeCase
    return encoder
}()

/// The body of a `CommandReplyMessage`.
public struct CommandReply<Status: Encodable & Sendable>: Encodable, Sendable {
    public enum Result: String, Encodable, Sendable {
        case ok, failed, rejected, expired, unknown
    }

    public var t: UnitTime
    public var cmdID: String?
    public var cmd: String?
    public var result: Result
    public var reason: String?
    public var errors: [String]?
    /// `purge`: how many stored positions were deleted.
    public var deleted: Int?
    /// `report`: the position published on `pos`.
    public var position: PositionPoint?
    /// `status`: the unit's status document, its keys in snake_case like the rest of the protocol.
    public var status: Status?

    enum CodingKeys: String, CodingKey {
        case t, cmd, result, reason, errors, deleted, position, status
        case cmdID = "cmd_id"
    }

    public init(t: UnitTime, cmdID: String?, cmd: String?, result: Result) {
        self.t = t
        self.cmdID = cmdID
        self.cmd = cmd
        self.result = result
    }
}
