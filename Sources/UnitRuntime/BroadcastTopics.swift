import Logging
import MQTTLink
import TaxiProtocol
import UnitCore

/// Who a broadcast is for, by the topic it came on.
enum BroadcastAudience: Equatable {
    case fleet
    case zone(String)
}

/// The dispatcher's broadcasts: the fleet's topic, always, and the topic of the zone the core says
/// the taxi is in, moved when the core's step says the zone changed.
extension EngineLoop {
    func broadcastTopic(zone: String?) -> String {
        let entry: ContractTopic = zone == nil ? .fleetMsg : .zoneMsg
        return entry.topic(prefix: configuration.mqtt.topicPrefix, fleet: configuration.unit.fleet, unit: configuration.unit.id, zone: zone ?? "+")
    }

    /// At every connection: a session the broker started afresh holds no subscription, and one it
    /// kept may still hold zones the taxi left while the broker was away.
    func subscribeBroadcasts() {
        let current = core.machine.positions.zones.broadcastZone
        for zone in broadcastZonesToLeave where zone != current {
            do {
                try mqtt.unsubscribe(broadcastTopic(zone: zone))
            } catch {
                logger.warning("cannot unsubscribe; retried on the next connection", metadata: ["zone": "\(zone)", "error": "\(error)"])
                continue
            }
            broadcastZonesToLeave.remove(zone)
        }
        subscribeBroadcast(zone: nil)
        if let current { subscribeBroadcast(zone: current) }
    }

    private func subscribeBroadcast(zone: String?) {
        do {
            try mqtt.subscribe(broadcastTopic(zone: zone), qos: 1)
        } catch {
            logger.warning("cannot subscribe; retried on the next connection", metadata: ["zone": "\(zone ?? "fleet")", "error": "\(error)"])
        }
    }

    /// The core's step moved the taxi to another zone. While the broker is away the new zone is
    /// subscribed at the next connection, and the old one left then.
    func moveBroadcastSubscription(_ change: BroadcastZoneChange) {
        if let left = change.leave {
            do {
                try mqtt.unsubscribe(broadcastTopic(zone: left))
                logger.info("left a zone's broadcasts", metadata: ["zone": "\(left)"])
            } catch {
                broadcastZonesToLeave.insert(left)
            }
        }
        if let joined = change.join {
            broadcastZonesToLeave.remove(joined)
            do {
                try mqtt.subscribe(broadcastTopic(zone: joined), qos: 1)
                logger.info("listening to a zone's broadcasts", metadata: ["zone": "\(joined)"])
            } catch {
                logger.debug("zone broadcasts subscribed at the next connection", metadata: ["zone": "\(joined)", "error": "\(error)"])
            }
        }
    }

    /// Who a broadcast topic is for; nil for a topic that is not a broadcast's.
    func broadcastAudience(ofTopic topic: String) -> BroadcastAudience? {
        if topic == broadcastTopic(zone: nil) { return .fleet }
        let template = broadcastTopic(zone: "+")
        let (head, tail) = (String(template.prefix { $0 != "+" }), String(template.drop { $0 != "+" }.dropFirst()))
        guard topic.hasPrefix(head), topic.hasSuffix(tail), topic.count > head.count + tail.count else { return nil }
        let zone = String(topic.dropFirst(head.count).dropLast(tail.count))
        return ContractTopic.isBroadcastZone(zone) ? .zone(zone) : nil
    }

    /// True when the message was a broadcast (handled: kept and shown, or refused by the core).
    func receiveBroadcast(_ message: MQTTMessage) -> Bool {
        let zone: String?
        switch broadcastAudience(ofTopic: message.topic) {
        case nil: return false
        case .fleet?: zone = nil
        case .zone(let id)?: zone = id
        }
        let entry: ContractTopic = zone == nil ? .fleetMsg : .zoneMsg
        let now = clockNow()
        switch InboundMessage.decodeBroadcast(payload: message.payload, now: now) {
        case .success(let text):
            // The text is the dispatcher's: only at debug.
            logger.info("received", metadata: ["bytes": "\(message.payload.count)", "zone": "\(zone ?? "")", "topic": "\(entry.rawValue)"])
            logger.debug("received payload", metadata: ["topic": "\(entry.rawValue)", "payload": "\(LogExcerpt.of(message.payload))"])
            step(.job(.broadcast(text, zone: zone, retained: message.retained, receivedAt: now)))
        case .failure(let problem):
            logger.warning("malformed message", metadata: ["topic": "\(entry.rawValue)", "reason": "\(LogExcerpt.of(problem.reason))"])
            logger.debug("malformed payload", metadata: ["topic": "\(entry.rawValue)", "payload": "\(LogExcerpt.of(message.payload))"])
            // A retained copy is answered at every subscription: only a live one is.
            if !message.retained { step(.job(.malformed(problem, at: now))) }
        }
        return true
    }
}
