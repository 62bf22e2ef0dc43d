import Foundation
import LocalCache
import Logging
import MQTTLink
import TaxiProtocol

/// Keeps one inbound message that kills the unit from crash-looping it. Each message is recorded in
/// the store while it is handled (`inbound_in_hand`, removed once handled), so a start that finds
/// the record follows a death while handling it. The second such death sets the message aside
/// (`aside` kind `inbound_message`) and remembers it (`inbound_poison`): the broker's next copy (a
/// retained document comes with every connection) is answered `invalid` unhandled. The record is
/// written without a sync: it only has to outlive the process, not the power.
final class PoisonGuard {
    static let inHandKey = "inbound_in_hand"
    static let poisonKey = "inbound_poison"
    /// Starts after a death while handling one message that make it poison.
    static let deathsToSetAside = 2
    /// Poison messages remembered, newest kept: each at most the largest inbound payload.
    static let remembered = 4

    struct Message: Codable, Equatable {
        var topic: String
        var payload: Data
        /// Starts that followed a death while handling it.
        var deaths: Int

        func isSame(as message: MQTTMessage) -> Bool { topic == message.topic && payload.elementsEqual(message.payload) }
    }

    private let store: LocalCache
    private let logger: Logger
    /// The message the last run died handling once, until it is handled or dies again.
    private var suspect: Message?
    private var poison: [Message]
    /// The message being handled is the suspect.
    private var handlingSuspect = false
    /// What this start set aside, for the engine to answer once running.
    private(set) var setAsideAtStart: Message?

    /// Reads what the last run left in hand: a death while handling it.
    init(store: LocalCache, at time: UnitTime, logger: Logger) {
        self.store = store
        self.logger = logger
        poison = ((try? store.loadValue([Message].self, forKey: Self.poisonKey)) ?? nil) ?? []
        guard var died = (try? store.loadValue(Message.self, forKey: Self.inHandKey)) ?? nil else { return }
        died.deaths = died.deaths.saturatingAdd(1)
        guard died.deaths >= Self.deathsToSetAside else {
            suspect = died
            logger.error("the last run died handling an inbound message", metadata: ["topic": "\(died.topic)", "bytes": "\(died.payload.count)"])
            do {
                try store.write(.normal) { try $0.saveValue(died, forKey: Self.inHandKey) }
            } catch {
                logger.error("cannot count the death", metadata: ["error": "\(error)"])
            }
            return
        }
        setAside(died, reason: "the unit died \(died.deaths) times while handling it", at: time)
    }

    /// Sets aside the message in hand, however often the unit died on it (the crash-loop breaker's
    /// step before the snapshot). False when there was none.
    func setAsideInHand(reason: String, at time: UnitTime) -> Bool {
        guard let inHand = (try? store.loadValue(Message.self, forKey: Self.inHandKey)) ?? nil else { return false }
        setAside(inHand, reason: reason, at: time)
        return true
    }

    private func setAside(_ message: Message, reason: String, at time: UnitTime) {
        logger.critical("POISON MESSAGE set aside unhandled", metadata: ["topic": "\(message.topic)", "bytes": "\(message.payload.count)", "reason": "\(reason)"])
        poison = Array((poison + [message]).suffix(Self.remembered))
        suspect = nil
        setAsideAtStart = message
        do {
            try store.write(.full) { try $0.saveValue(poison, forKey: Self.poisonKey) }
            try store.setAsideValue(forKey: Self.inHandKey, kind: .inboundMessage, reason: reason, at: time)
        } catch {
            logger.error("cannot set the poison message aside", metadata: ["error": "\(error)"])
        }
    }

    func isPoison(_ message: MQTTMessage) -> Bool {
        poison.contains { $0.isSame(as: message) }
    }

    /// Recorded before the engine handles `message`.
    func handling(_ message: MQTTMessage) {
        handlingSuspect = suspect?.isSame(as: message) ?? false
        let deaths = handlingSuspect ? suspect?.deaths ?? 0 : 0
        do {
            try store.write(.normal) {
                try $0.saveValue(Message(topic: message.topic, payload: Data(message.payload), deaths: deaths), forKey: Self.inHandKey)
            }
        } catch {
            logger.debug("cannot record the message in hand", metadata: ["error": "\(error)"])
        }
    }

    /// The message was handled: if it was the suspect, it is no more.
    func handled() {
        if handlingSuspect { suspect = nil }
        handlingSuspect = false
        do {
            try store.write(.normal) { try $0.removeValue(forKey: Self.inHandKey) }
        } catch {
            logger.debug("cannot clear the message in hand", metadata: ["error": "\(error)"])
        }
    }
}
