import Foundation
@testable import LocalCache
import TaxiProtocol
import TestHarness
import Testing
import UnitCore

/// The driver's inbox on a real SQLite file: what the state machine keeps comes back after a restart.
@Suite struct DriverMessagesStoreTests {
    let scratch: ScratchDirectory
    let path: String

    init() throws {
        scratch = try ScratchDirectory("driver-messages")
        path = scratch.file("unit.sqlite")
    }

    func kept(_ id: String, readAt: UnitTime? = nil) -> InboxMessage {
        InboxMessage(message: TextMessage(id: id, text: "text of \(id)", replies: ["OK"], priority: .urgent), receivedAt: 1000, readAt: readAt)
    }

    @Test func messagesComeBackInArrivalOrderWithWhatWasReadAndAnswered() throws {
        do {
            let store = try LocalCache(path: path)
            try store.write { transaction in
                for id in ["m1", "m2", "m3"] { try transaction.apply(.save(kept(id))) }
            }
            var answered = kept("m1", readAt: 2000)
            answered.answer = "OK"
            try store.write { transaction in
                try transaction.apply(.save(answered))
                try transaction.apply(.remove(id: "m2"))
            }
        }
        let reopened = try LocalCache(path: path)
        let messages = try reopened.driverMessages(limit: 50, at: 3000)
        #expect(messages.map(\.id) == ["m1", "m3"], "an update keeps the first arrival's place")
        #expect(messages.first?.readAt == 2000 && messages.first?.answer == "OK")
        #expect(messages.last == kept("m3"))
    }

    @Test func theWholeInboxCanBeWrittenAgainInItsOrder() throws {
        let store = try LocalCache(path: path)
        try store.write { transaction in for id in ["m1", "m2"] { try transaction.apply(.save(kept(id))) } }
        try store.replaceDriverMessages([kept("m3"), kept("m1", readAt: 5)])
        let messages = try store.driverMessages(limit: 50, at: 6)
        #expect(messages.map(\.id) == ["m3", "m1"] && messages.last?.readAt == 5)
    }

    @Test func aRowThatDoesNotReadBackIsSetAsideAndTheCapacityKeepsTheNewest() throws {
        let store = try LocalCache(path: path)
        try store.write { transaction in
            for id in ["m1", "m2", "m3", "m4"] { try transaction.apply(.save(kept(id))) }
            try transaction.db.execute(sql: "UPDATE driver_messages SET body = '{\"not\":1}' WHERE id = 'm3'")
            let tooLong = String(repeating: "x", count: 600)
            try transaction.db.execute(
                sql: "UPDATE driver_messages SET body = json_set(body, '$.message.text', ?) WHERE id = 'm4'", arguments: [tooLong])
        }
        try store.write { transaction in try transaction.apply(.save(kept("m5"))) }
        #expect(try store.driverMessages(limit: 2, at: 5000).map(\.id) == ["m2", "m5"])
        #expect(try store.asideCounts()[.driverMessage] == 2)
        // Over the capacity, the oldest good one was dropped for good.
        #expect(try store.driverMessages(limit: 50, at: 5000).map(\.id) == ["m2", "m5"])
    }
}
