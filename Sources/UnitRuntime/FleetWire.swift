import ControlSocket
import FleetControl
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import TaxiProtocol
import UnitCore

/// `config/ack` (docs/protocol.md). Queued in the outbox like every unit → fleet message.
typealias ConfigAckMessage = Envelope<ConfigAckReport>

extension ConfigAckMessage {
    init(_ ack: ConfigAck, unit: String, seq: Int64, id: String, t: Int64) {
        self.init(
            ConfigAckReport(t: t, scope: ack.scope, version: ack.version, result: ack.result, reason: ack.reason, errors: ack.errors.isEmpty ? nil : ack.errors),
            unit: unit, seq: seq, id: id)
    }
}

/// The body of a `ConfigAckMessage`.
struct ConfigAckReport: Encodable, Sendable {
    var t: Int64
    var scope: ConfigScope
    var version: Int?
    var result: ConfigAck.Result
    var reason: String?
    var errors: [String]?
}

/// `cmd/reply` (docs/protocol.md): the envelope's `id` is this reply's own, `cmd_id` the command's.
typealias CommandReplyMessage = Envelope<CommandReply>

extension CommandReplyMessage {
    typealias Result = CommandReply.Result

    init(unit: String, seq: Int64, id: String, t: Int64, cmdID: String?, cmd: String?, result: Result) {
        self.init(CommandReply(t: t, cmdID: cmdID, cmd: cmd, result: result), unit: unit, seq: seq, id: id)
    }

    /// The wire bytes. The control socket's `ControlStatus` names its keys in camelCase (Swift's,
    /// what `taxiunitctl` and its scripts read); on MQTT they are converted, which leaves the
    /// message's own keys, all snake_case already, as they are.
    func json() throws -> [UInt8] {
        Array(try CommandReply.encoder.encode(self))
    }
}

/// The body of a `CommandReplyMessage`.
struct CommandReply: Encodable, Sendable {
    enum Result: String, Encodable {
        case ok, failed, rejected, expired, unknown
    }

    var t: Int64
    var cmdID: String?
    var cmd: String?
    var result: Result
    var reason: String?
    var errors: [String]?
    /// `purge`: how many stored positions were deleted.
    var deleted: Int?
    /// `report`: the position published on `pos`.
    var position: PositionPoint?
    /// `status`: the document `taxiunitctl status --json` prints, its keys in snake_case like the
    /// rest of the protocol.
    var status: ControlStatus?

    enum CodingKeys: String, CodingKey {
        case t, cmd, result, reason, errors, deleted, position, status
        case cmdID = "cmd_id"
    }

    fileprivate static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = JSONEncoder.wire.outputFormatting
        encoder.keyEncodingStrategy = .convertToSnakeCase
        return encoder
    }()
}
