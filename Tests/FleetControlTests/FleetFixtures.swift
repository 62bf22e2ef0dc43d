import Crypto
import FleetControl
import Foundation
import StrictJSON
import TaxiProtocol
import UnitConfig
import UnitCore

/// A fleet key, a unit trusting it, and signed documents for that unit's topics.
struct FleetFixture {
    let key = Curve25519.Signing.PrivateKey()
    let fleetTopic = "taxi/north/config"
    let unitTopic = "taxi/north/T7/config"
    let commandTopic = "taxi/north/T7/cmd"

    func localTOML(requireSigned: Bool = true, extra: String = "") -> String {
        """
        [unit]
        id = "T7"
        fleet = "north"
        [mqtt]
        host = "broker-a"
        tls = true
        cafile = "system"
        [reporting]
        interval_s = 5
        [fleet]
        config_pubkeys = ["\(key.publicKey.rawRepresentation.base64EncodedString())"]
        require_signed = \(requireSigned)
        rollback_after_s = 30
        \(extra)
        """
    }

    func local(requireSigned: Bool = true) throws -> ConfigValue {
        try ConfigValue.parseTOML(localTOML(requireSigned: requireSigned))
    }

    func machine(requireSigned: Bool = true, records: [ConfigScope: ConfigScopeRecord] = [:]) throws -> FleetConfigMachine {
        try FleetConfigMachine(local: local(requireSigned: requireSigned), restoring: records)
    }

    func signed(_ json: String, topic: String) throws -> [UInt8] {
        try FleetSignature.sign(JSONDocument.parse(Array(json.utf8)), topic: topic, with: key).canonicalBytes
    }

    func config(_ version: Int, _ settings: String, scope: ConfigScope = .fleet, retained: Bool = false, at now: UnitTime = 0) throws -> FleetConfigEvent {
        let topic = scope == .fleet ? fleetTopic : unitTopic
        return .received(scope, topic: topic, payload: try signed(#"{"version":\#(version),"settings":\#(settings)}"#, topic: topic), retained: retained, at: now)
    }
}

extension [FleetConfigAction] {
    var acks: [ConfigAck] {
        compactMap {
            switch $0 {
            case .commit(_, _, let ack?): ack
            case .acknowledge(let ack): ack
            default: nil
            }
        }
    }
}
