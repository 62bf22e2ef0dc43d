import Logging
import MQTTLink
import TaxiProtocol
import UnitCoordination

/// The dispatcher's `driver/logout` (docs/protocol.md, "One driver, one taxi"): subscribed with the
/// dispatcher's other topics, read at the edge, and handed to the core, which answers on `event`.
extension EngineLoop {
    private var driverLogoutTopic: String { configuration.unitTopicBase + DriverLogout.topic.suffix }

    func subscribeDriverLogout() {
        do {
            try mqtt.subscribe(driverLogoutTopic, qos: 1)
        } catch {
            logger.error("cannot subscribe", metadata: ["topic": "\(DriverLogout.topic.rawValue)", "error": "\(error)"])
        }
    }

    /// True when `message` was a `driver/logout`, handled here.
    func receiveDriverLogout(_ message: MQTTMessage) -> Bool {
        guard message.topic == driverLogoutTopic else { return false }
        let now = clockNow()
        let read = DriverLogout.decode(payload: message.payload, now: now)
        switch read {
        case .success(let logout):
            logger.info("received", metadata: ["topic": "\(DriverLogout.topic.rawValue)", "logout": "\(LogExcerpt.of(logout.id))"])
        case .failure(let problem):
            logger.warning("malformed message", metadata: ["topic": "\(DriverLogout.topic.rawValue)", "reason": "\(LogExcerpt.of(problem.reason))"])
        }
        step(.driverLogout(read, at: now))
        return true
    }

    /// True when `topic` is `driver/logout`: a message refused unread there is answered as one that
    /// could not be read.
    func refuseDriverLogout(topic: String, why: String) -> Bool {
        guard topic == driverLogoutTopic else { return false }
        logger.warning("message refused unread", metadata: ["topic": "\(DriverLogout.topic.rawValue)", "why": "\(why)"])
        step(.driverLogout(.failure(DriverLogout.Problem(id: nil, reason: "refused unread: \(why)")), at: clockNow()))
        return true
    }
}
