import Logging
import MQTTLink
import TaxiProtocol
import UnitCore

/// The dispatcher's messages to this unit: subscribing to them, and turning each into one event
/// for the state machine (or an `invalid` answer).
extension EngineLoop {
    /// QoS 1 on a persistent session: offers sent while we were away are queued by the broker.
    func subscribeInbound() {
        for topic in InboundTopic.allCases {
            do {
                try mqtt.subscribe(configuration.unitTopicBase + topic.rawValue, qos: 1)
            } catch {
                logger.error("cannot subscribe", metadata: ["topic": "\(topic.rawValue)", "error": "\(error)"])
            }
        }
    }

    /// A message refused unread (over the size limit, or poison): handled as malformed, which
    /// answers `invalid` where the topic has an answer.
    func refuseInbound(topic: String, why: String, _ problem: (InboundTopic) -> InboundProblem) {
        let base = configuration.unitTopicBase
        guard topic.hasPrefix(base), let inbound = InboundTopic(rawValue: String(topic.dropFirst(base.count))) else {
            logger.warning("ignoring a message refused unread", metadata: ["topic": "\(topic)", "why": "\(why)"])
            return
        }
        logger.warning("message refused unread", metadata: ["topic": "\(inbound.rawValue)", "why": "\(why)"])
        step(.job(.malformed(problem(inbound), at: clockNow())))
    }

    func receive(_ message: MQTTMessage) {
        let base = configuration.unitTopicBase
        guard message.topic.hasPrefix(base), let topic = InboundTopic(rawValue: String(message.topic.dropFirst(base.count))) else {
            logger.debug("ignoring message", metadata: ["topic": "\(message.topic)"])
            return
        }
        let now = clockNow()
        switch InboundMessage.decode(topic: topic, payload: message.payload, now: now) {
        case .success(let inbound):
            // Payloads hold addresses, names and message texts: their contents only at debug.
            logger.info("received", metadata: ["topic": "\(topic.rawValue)", "bytes": "\(message.payload.count)"])
            logger.debug("received payload", metadata: ["topic": "\(topic.rawValue)", "payload": "\(LogExcerpt.of(message.payload))"])
            step(.job(.inbound(inbound, receivedAt: now)))
        case .failure(let problem):
            logger.warning("malformed message", metadata: ["topic": "\(topic.rawValue)", "reason": "\(LogExcerpt.of(problem.reason))"])
            logger.debug("malformed payload", metadata: ["topic": "\(topic.rawValue)", "payload": "\(LogExcerpt.of(message.payload))"])
            step(.job(.malformed(problem, at: now)))
        }
    }
}
