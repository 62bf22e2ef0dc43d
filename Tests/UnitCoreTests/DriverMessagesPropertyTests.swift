import PropertyBased
import TaxiProtocol
import Testing
import UnitCore

/// Random sequences of messages, driver keys, restarts and state changes: the stored inbox never
/// differs from the machine's, an unread message goes only when every kept one is unread, each
/// message gets one read receipt, and every answer names a reply the message offered.
@Suite struct DriverMessagesPropertyTests {
    struct World {
        static let capacity = 4
        var machine = UnitStateMachine(messages: DriverMessages(settings: DriverMessageSettings(capacity: capacity)))
        /// The table, as the shell keeps it from `Step.inbox`.
        var stored: [String: InboxMessage] = [:]
        var storedOrder: [String] = []
        var now = Scenario.t0
        var receipts: [String: Int] = [:]
        var failures: [String] = []

        mutating func step(_ code: Int) {
            now += .seconds(1)
            let id = "m\(code % 7)"
            let event: UnitEvent
            switch code % 9 {
            case 0, 1:
                let replies = code % 3 == 0 ? nil : Array(["OK", "No", "Later", "Call"].prefix(code % 4 + 1))
                event = .inbound(.message(TextMessage(id: id, text: String(repeating: "word ", count: code % 30 + 1), replies: replies)), receivedAt: now)
            case 2, 3: event = .driver(.message(.read), at: now)
            case 4: event = .driver(.message(.choose(code % 5 == 0 ? nil : code % 6)), at: now)
            case 5: event = .driver(.message(.send), at: now)
            case 6: event = .driver(.duty, at: now)
            case 7: event = .inbound(.queue(QueuePosition(zone: "Z", position: 1, of: code % 9 + 1)), receivedAt: now)
            default:
                restart()
                return
            }
            let unreadBefore = machine.driverMessages.inbox.filter { $0.readAt == nil }.map(\.id)
            let allUnreadBefore = machine.driverMessages.inbox.allSatisfy { $0.readAt == nil }
            let offered = Dictionary(machine.driverMessages.inbox.map { ($0.id, $0.message.replies ?? []) }) { $1 }
            let step = machine.handle(event)
            for change in step.inbox {
                switch change {
                case .save(let message):
                    if stored[message.id] == nil { storedOrder.append(message.id) }
                    stored[message.id] = message
                case .remove(let id):
                    stored[id] = nil
                    storedOrder.removeAll { $0 == id }
                    // Gone from the unit: the same id later is a new message (docs/protocol.md, msg).
                    receipts[id] = nil
                    if unreadBefore.contains(id) && !allUnreadBefore { failures.append("unread \(id) dropped while a read one was kept") }
                }
            }
            for message in step.messages {
                switch message {
                case .messageRead(let read): receipts[read.msg, default: 0] += 1
                case .messageReply(let reply):
                    if let msg = reply.msg, let text = reply.text, !(offered[msg] ?? []).contains(text) {
                        failures.append("answer \(text) to \(msg) was not offered")
                    }
                default: break
                }
            }
            check()
        }

        /// The daemon starts again from the table.
        mutating func restart() {
            machine = UnitStateMachine(
                messages: DriverMessages(restoring: storedOrder.compactMap { stored[$0] }, settings: DriverMessageSettings(capacity: Self.capacity)))
            check()
        }

        mutating func check() {
            let inbox = machine.driverMessages.inbox
            if inbox != storedOrder.compactMap({ stored[$0] }) { failures.append("store \(storedOrder) differs from the inbox \(inbox.map(\.id))") }
            if inbox.count > Self.capacity { failures.append("\(inbox.count) kept") }
            for (id, count) in receipts where count > 1 {
                failures.append("\(count) receipts for \(id)")
            }
        }
    }

    @Test func theStoredInboxFollowsTheMachineThroughAnySequence() async {
        await propertyCheck(count: 300, input: Gen.int(in: 0...9_999).array(of: 1...60)) { codes in
            var world = World()
            for code in codes { world.step(code) }
            #expect(world.failures.isEmpty, "\(world.failures.prefix(3))")
        }
    }
}
