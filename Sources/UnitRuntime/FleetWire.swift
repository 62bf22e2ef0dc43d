import ControlSocket
import FleetControl
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import UnitCore

/// `config/ack` (docs/protocol.md). Queued in the outbox like every unit → fleet message; `id` is
/// its own, the dedup key every unit message carries under that name.
struct ConfigAckMessage: Encodable {
    var unit: String
    var seq: Int64
    var id: String
    var t: Int64
    var scope: ConfigScope
    var version: Int?
    var result: ConfigAck.Result
    var reason: String?
    var errors: [String]?

    init(_ ack: ConfigAck, unit: String, seq: Int64, id: String, t: Int64) {
        self.unit = unit
        self.seq = seq
        self.id = id
        self.t = t
        scope = ack.scope
        version = ack.version
        result = ack.result
        reason = ack.reason
        errors = ack.errors.isEmpty ? nil : ack.errors
    }
}

/// `cmd/reply` (docs/protocol.md): `id` is this reply's own (the dedup key, as on every unit
/// message), `cmd_id` the command's.
struct CommandReplyMessage: Encodable {
    enum Result: String, Encodable {
        case ok, failed, rejected, expired, unknown
    }

    var unit: String
    var seq: Int64
    var id: String
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
        case unit, seq, id, t, cmd, result, reason, errors, deleted, position, status
        case cmdID = "cmd_id"
    }

    /// The wire bytes. The control socket's `ControlStatus` names its keys in camelCase (Swift's,
    /// what `taxiunitctl` and its scripts read); on MQTT they are converted, which leaves the
    /// message's own keys, all snake_case already, as they are.
    func json() throws -> [UInt8] {
        Array(try Self.encoder.encode(self))
    }

    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = JSONEncoder.wire.outputFormatting
        encoder.keyEncodingStrategy = .convertToSnakeCase
        return encoder
    }()
}
