import ControlSocket
import FleetControl
import TaxiProtocol

/// The command replies the engine queues carry the control socket's status document.
typealias CommandReplyMessage = TaxiProtocol.CommandReplyMessage<ControlStatus>

extension CommandReplyMessage {
    typealias Result = CommandReply<ControlStatus>.Result
}

extension ConfigAckMessage {
    init(_ ack: ConfigAck, unit: String, seq: Int64, id: String, t: UnitTime) {
        self.init(
            ConfigAckReport(t: t, scope: ack.scope, version: ack.version, result: ack.result, reason: ack.reason, errors: ack.errors),
            unit: unit, seq: seq, id: id)
    }
}
