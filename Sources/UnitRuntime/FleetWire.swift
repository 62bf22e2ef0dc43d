import ControlSocket
import FleetControl
import UnitCore

/// `config/ack` (docs/protocol.md). Queued in the outbox like every unit → fleet message.
struct ConfigAckMessage: Encodable {
    var unit: String
    var seq: Int64
    var messageID: String
    var t: Int64
    var scope: ConfigScope
    var version: Int?
    var result: ConfigAck.Result
    var reason: String?
    var errors: [String]?

    init(_ ack: ConfigAck, unit: String, seq: Int64, messageID: String, t: Int64) {
        self.unit = unit
        self.seq = seq
        self.messageID = messageID
        self.t = t
        scope = ack.scope
        version = ack.version
        result = ack.result
        reason = ack.reason
        errors = ack.errors.isEmpty ? nil : ack.errors
    }

    enum CodingKeys: String, CodingKey {
        case unit, seq, messageID = "message_id", t, scope, version, result, reason, errors
    }
}

/// `cmd/reply` (docs/protocol.md): `id` is the command's, `message_id` this reply's own.
struct CommandReplyMessage: Encodable {
    enum Result: String, Encodable {
        case ok, failed, rejected, expired, unknown
    }

    var unit: String
    var seq: Int64
    var messageID: String
    var t: Int64
    var id: String?
    var cmd: String?
    var result: Result
    var reason: String?
    var errors: [String]?
    /// `purge`: how many stored positions were deleted.
    var deleted: Int?
    /// `report`: the position published on `pos`.
    var position: PositionPoint?
    /// `status`: the same document `taxiunitctl status --json` prints.
    var status: ControlStatus?

    enum CodingKeys: String, CodingKey {
        case unit, seq, messageID = "message_id", t, id, cmd, result, reason, errors, deleted, position, status
    }
}
