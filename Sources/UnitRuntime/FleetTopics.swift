import ControlSocket
import FleetControl
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import MQTTLink
import StrictJSON
import TaxiProtocol
import UnitConfig
import UnitCore

/// The fleet's topics for this unit: subscribing, telling their messages to the core, and what
/// `taxiunitctl` shows of the documents in force.
extension EngineLoop {
    var fleetTopic: String { "\(configuration.mqtt.topicPrefix)/\(configuration.unit.fleet)/\(UnitTopic.config.rawValue)" }
    /// The fleet's three topics for this unit, and what each carries: the one place they are named.
    enum FleetTopic {
        case config(ConfigScope)
        case command
    }

    var fleetTopics: [(topic: String, carries: FleetTopic)] {
        let base = configuration.unitTopicBase
        return [(fleetTopic, .config(.fleet)), (base + UnitTopic.config.rawValue, .config(.unit)), (base + UnitTopic.cmd.rawValue, .command)]
    }

    func subscribeToFleet() {
        for (topic, _) in fleetTopics {
            do {
                try mqtt.subscribe(topic, qos: 1)
            } catch {
                logger.warning("cannot subscribe; retried on the next connection", metadata: ["topic": "\(topic)", "error": "\(error)"])
            }
        }
    }

    /// True when the message was the fleet's (handled, answered where there is someone to answer).
    func handleFleetMessage(_ message: MQTTMessage) -> Bool {
        guard let carried = fleetTopics.first(where: { $0.topic == message.topic })?.carries else { return false }
        switch carried {
        case .config(let scope):
            step(.fleetConfig(.received(scope, topic: message.topic, payload: message.payload, retained: message.retained, at: clockNow())))
        case .command:
            step(.fleetCommand(payload: message.payload, topic: message.topic, at: clockNow()))
        }
        return true
    }

    /// True when the topic was the fleet's: a message refused unread (over the size limit, or
    /// poison), answered with `rejection`.
    func refuseFleetMessage(topic: String, _ rejection: FleetRejection) -> Bool {
        guard let carried = fleetTopics.first(where: { $0.topic == topic })?.carries else { return false }
        switch carried {
        case .config(let scope):
            step(.fleetConfig(.refusedUnread(scope, rejection)))
        case .command:
            step(.fleetCommandRefusedUnread(rejection, at: clockNow()))
        }
        return true
    }

    var fleetConfigStatus: ControlStatus.Config {
        ControlStatus.Config(
            versions: Dictionary(uniqueKeysWithValues: core.fleetConfig.versions.map { ($0.key.rawValue, $0.value) }),
            onTrial: core.fleetConfig.onProbation?.rawValue,
            broker: brokerInUse,
            remoteSettings: String(decoding: JSONDocument(core.fleetConfig.remoteSettings).canonicalBytes, as: UTF8.self)
        )
    }

    /// The broker node connected to (after a failover, not the first of `hosts`); while not
    /// connected, the nodes it tries, in order.
    var brokerInUse: String {
        mqtt.nodeInUse ?? configuration.mqtt.nodes.map(\.description).joined(separator: ", ")
    }

    /// The fleet's documents in force for `taxiunitctl config`, in the order they are laid over the local files.
    var fleetConfigLayers: [ControlConfigLayer] {
        ConfigScope.allCases.compactMap { scope in
            guard let version = core.fleetConfig.versions[scope], let settings = core.fleetConfig.settings(of: scope) else { return nil }
            return ControlConfigLayer(
                scope: scope.rawValue, version: version, settings: String(decoding: JSONDocument(settings).canonicalBytes, as: UTF8.self))
        }
    }
}
