import Foundation
import TaxiProtocol
import Testing
import UnitCore

/// `msg` and `queue` from a dispatcher that may send anything, and what the driver does with messages.
@Suite struct DriverMessagesTests {
    let now = Scenario.t0

    func decode(_ topic: InboundTopic, _ json: String) -> Result<InboundMessage, InboundProblem> {
        InboundMessage.decode(topic: topic, payload: Array(json.utf8), now: now)
    }

    func problem(_ topic: InboundTopic, _ json: String) -> InboundProblem? {
        if case .failure(let problem) = decode(topic, json) { return problem }
        return nil
    }

    // MARK: Decoding

    @Test func aMessageWithRepliesAndPriorityDecodes() {
        #expect(decode(.msg, #"{"id":"m1","text":"Call base","replies":["OK","Later"],"priority":"urgent","t":\#(now)}"#)
            == .success(.message(TextMessage(id: "m1", text: "Call base", replies: ["OK", "Later"], priority: .urgent, t: now.milliseconds))))
        // An integer id is its decimal string, like a job id.
        #expect(decode(.msg, #"{"id":17,"text":"Hi"}"#) == .success(.message(TextMessage(id: "17", text: "Hi"))))
    }

    @Test func hostileMessagesAreRefusedWithTheirIdSoTheyCanBeAnsweredInvalid() {
        let cases: [(String, String)] = [
            (#"{"id":"m1"}"#, "text is missing"),
            (#"{"id":"m1","text":""}"#, "text must not be empty"),
            (#"{"id":"m1","text":"\#(String(repeating: "x", count: 501))"}"#, "text is longer than 500 bytes"),
            (#"{"id":"m1","text":"a\u001bb"}"#, "text contains control characters"),
            (#"{"id":"m1","text":"a","replies":["1","2","3","4","5"]}"#, "replies holds more than 4 texts"),
            (#"{"id":"m1","text":"a","replies":["this is far too long to fit"]}"#, "replies.0 is longer than 18 characters"),
            (#"{"id":"m1","text":"a","replies":[""]}"#, "replies.0 must not be empty"),
            (#"{"id":"m1","text":"a","replies":["ok\n"]}"#, "replies.0 contains control characters"),
            (#"{"id":"m1","text":"a","priority":"panic"}"#, "priority: Cannot initialize MessagePriority from invalid String value panic"),
            (#"{"id":"m1","text":"a","t":9223372036854775807}"#, "t is more than a year from the unit clock"),
        ]
        for (json, reason) in cases {
            let refused = problem(.msg, json)
            #expect(refused?.reason == reason, "\(json)")
            #expect(refused?.job == "m1", "\(json)")
        }
        #expect(problem(.msg, #"{"text":"a"}"#)?.reason == "id is missing")
        #expect(problem(.msg, #"{"id":"\#(String(repeating: "i", count: 129))","text":"a"}"#)?.job == nil)
        #expect(problem(.msg, "[1]")?.reason == "payload is not a JSON object")
        let big = Array(#"{"id":"m1","text":""#.utf8) + Array(repeating: UInt8(ascii: "x"), count: 5000) + Array(#""}"#.utf8)
        #expect(InboundMessage.decode(topic: .msg, payload: big, now: now) == .failure(InboundProblem(
            topic: .msg, job: nil, reason: "payload of \(big.count) bytes is over the 4096-byte limit")))
    }

    @Test func queuePositionsAreBounded() {
        #expect(decode(.queue, #"{"zone":"Z3","position":2,"of":7}"#) == .success(.queue(QueuePosition(zone: "Z3", position: 2, of: 7))))
        let cases: [(String, String)] = [
            (#"{"zone":"Z3","position":0,"of":7}"#, "position must be from 1 to of (7)"),
            (#"{"zone":"Z3","position":8,"of":7}"#, "position must be from 1 to of (7)"),
            (#"{"zone":"Z3","position":1,"of":10000}"#, "of must be from 1 to 9999"),
            (#"{"zone":"Z3","position":1,"of":-1}"#, "of must be from 1 to 9999"),
            (#"{"zone":"","position":1,"of":1}"#, "zone must not be empty"),
            (#"{"zone":"\#(String(repeating: "z", count: 65))","position":1,"of":1}"#, "zone is longer than 64 bytes"),
            (#"{"zone":"Z\u0007","position":1,"of":1}"#, "zone contains control characters"),
        ]
        for (json, reason) in cases { #expect(problem(.queue, json)?.reason == reason, "\(json)") }
        #expect(problem(.queue, #"{"zone":"Z3","position":1e300,"of":7}"#) != nil)
        #expect(problem(.queue, #"{"zone":"Z3","position":1.5,"of":7}"#) != nil)
    }

    // MARK: The machine

    func machine(capacity: Int = 50) -> UnitStateMachine {
        UnitStateMachine(messages: DriverMessages(settings: DriverMessageSettings(capacity: capacity)))
    }

    @Test func aMessageIsKeptUntilReadAndReadingSendsAReceiptOnce() {
        var unit = machine()
        let step = unit.handle(.inbound(.message(TextMessage(id: "m1", text: "Call base")), receivedAt: now))
        guard case .save(let kept) = step.inbox.first else { Issue.record("not stored"); return }
        #expect(kept.readAt == nil && step.durability == .promised)
        #expect(unit.driverMessages.unread == 1)
        // Delivered again: kept once, no second alert.
        let again = unit.handle(.inbound(.message(TextMessage(id: "m1", text: "Call base")), receivedAt: now + .milliseconds(1)))
        #expect(again.inbox == [] && again.told == [], "nothing stored, nothing to ring for")
        #expect(unit.driverMessages.inbox.count == 1)

        let read = unit.handle(.driver(.message(.read), at: now + .milliseconds(10)))
        #expect(read.messages == [.messageRead(MessageRead(msg: "m1", t: now + .milliseconds(10)))])
        #expect(read.told == ["Message m1 (1/1): Call base"], "what taxiunitctl press msg answers")
        #expect(read.durability == .promised)
        #expect(unit.driverMessages.unread == 0 && unit.driverMessages.open?.id == "m1")
        // Closing and opening it again sends nothing more.
        #expect(unit.handle(.driver(.message(.read), at: now + .milliseconds(11))).messages == [])
        #expect(unit.driverMessages.open == nil)
        #expect(unit.handle(.driver(.message(.read), at: now + .milliseconds(12))).messages == [])
        #expect(unit.driverMessages.open?.id == "m1")
    }

    @Test func theDriverPagesThroughALongTextThenMovesToTheNextUnread() {
        var unit = machine()
        let long = String(repeating: "word ", count: 20)  // 100 characters: 5 lines, 3 pages of 2
        _ = unit.handle(.inbound(.message(TextMessage(id: "m1", text: long)), receivedAt: now))
        _ = unit.handle(.inbound(.message(TextMessage(id: "m2", text: "short")), receivedAt: now))
        _ = unit.handle(.driver(.message(.read), at: now))
        #expect(unit.driverMessages.reading?.page == 0)
        _ = unit.handle(.driver(.message(.read), at: now))
        _ = unit.handle(.driver(.message(.read), at: now))
        #expect(unit.driverMessages.reading == DriverMessages.Reading(id: "m1", page: 2, choice: nil))
        let next = unit.handle(.driver(.message(.read), at: now + .milliseconds(5)))
        #expect(next.messages == [.messageRead(MessageRead(msg: "m2", t: now + .milliseconds(5)))])
        _ = unit.handle(.driver(.message(.read), at: now + .milliseconds(6)))
        #expect(unit.driverMessages.open == nil)
    }

    @Test func theDriverAnswersWithACannedReply() {
        var unit = machine()
        _ = unit.handle(.inbound(.message(TextMessage(id: "m1", text: "Airport?", replies: ["Yes", "No"])), receivedAt: now))
        #expect(unit.handle(.driver(.message(.send), at: now)).refusals == [.nothingToSend])
        _ = unit.handle(.driver(.message(.read), at: now))
        _ = unit.handle(.driver(.message(.choose(nil)), at: now))
        _ = unit.handle(.driver(.message(.choose(nil)), at: now))
        #expect(unit.driverMessages.reading?.choice == 1)
        #expect(unit.handle(.driver(.message(.choose(3)), at: now)).refusals == [.noSuchReply(count: 2)])
        let sent = unit.handle(.driver(.message(.send), at: now + .milliseconds(20)))
        #expect(sent.messages == [.messageReply(MessageReply(msg: "m1", text: "No", choice: 2, t: now + .milliseconds(20)))])
        #expect(sent.durability == .promised)
        #expect(unit.driverMessages.inbox.first?.answer == "No" && unit.driverMessages.open == nil)
    }

    @Test func whileAnOfferWaitsMessagesWaitToo() {
        var unit = Scenario.machine(in: .offered)
        _ = unit.handle(.inbound(.message(TextMessage(id: "m1", text: "Hi")), receivedAt: now))
        for input in [MessageInput.read, .choose(nil), .send] {
            #expect(unit.handle(.driver(.message(input), at: now)).refusals == [.answerOfferFirst])
        }
        #expect(unit.driverMessages.unread == 1 && unit.driverMessages.open == nil)
    }

    @Test func aMessageWithoutRepliesCannotBeAnswered() {
        var unit = machine()
        _ = unit.handle(.inbound(.message(TextMessage(id: "m1", text: "FYI")), receivedAt: now))
        _ = unit.handle(.driver(.message(.read), at: now))
        #expect(unit.handle(.driver(.message(.choose(nil)), at: now)).refusals == [.noReplies])
        #expect(unit.handle(.driver(.message(.read), at: now)).refusals == [])
    }

    @Test func theDriverSendsACannedMessageUnasked() {
        var unit = machine()
        #expect(unit.handle(.driver(.message(.read), at: now)).refusals == [.noMessages])
        _ = unit.handle(.driver(.message(.choose(nil)), at: now))
        _ = unit.handle(.driver(.message(.choose(nil)), at: now))
        let sent = unit.handle(.driver(.message(.send), at: now))
        #expect(sent.messages == [.messageReply(MessageReply(msg: nil, text: "Running late", choice: 2, t: now))])
        // Read while choosing puts the choice away.
        _ = unit.handle(.driver(.message(.choose(3)), at: now))
        _ = unit.handle(.driver(.message(.read), at: now))
        #expect(unit.driverMessages.composing == nil)
        #expect(unit.handle(.driver(.message(.send), at: now)).refusals == [.nothingToSend])
    }

    @Test func theFleetCanChangeTheCannedMessages() {
        var unit = machine()
        _ = unit.handle(.driver(.message(.choose(3)), at: now))
        unit.useCannedMessages(["Road closed", "Flat tyre"])
        #expect(unit.driverMessages.composing == nil, "the one being chosen is put away")
        _ = unit.handle(.driver(.message(.choose(2)), at: now))
        #expect(unit.handle(.driver(.message(.send), at: now)).messages == [.messageReply(MessageReply(msg: nil, text: "Flat tyre", choice: 2, t: now))])
    }

    @Test func overCapacityTheOldestReadMessageGoesFirstThenTheOldestUnread() {
        var unit = machine(capacity: 2)
        _ = unit.handle(.inbound(.message(TextMessage(id: "m1", text: "a")), receivedAt: now))
        _ = unit.handle(.inbound(.message(TextMessage(id: "m2", text: "b")), receivedAt: now))
        _ = unit.handle(.driver(.message(.read), at: now))  // m1 read
        _ = unit.handle(.driver(.message(.read), at: now))  // m2 read
        _ = unit.handle(.driver(.message(.read), at: now))  // closed
        _ = unit.handle(.inbound(.message(TextMessage(id: "m3", text: "c")), receivedAt: now))
        let step = unit.handle(.inbound(.message(TextMessage(id: "m4", text: "d")), receivedAt: now))
        #expect(step.inbox.contains(.remove(id: "m2")))
        #expect(unit.driverMessages.inbox.map(\.id) == ["m3", "m4"])
        let full = unit.handle(.inbound(.message(TextMessage(id: "m5", text: "e")), receivedAt: now))
        #expect(full.inbox.contains(.remove(id: "m3")))
        #expect(full.notes == ["msg m3 dropped unread: 2 messages kept, none read"])
        #expect(unit.driverMessages.inbox.map(\.id) == ["m4", "m5"])
    }

    @Test func aMalformedMessageIsAnsweredInvalidOnMsgReplyNeverOnJobReply() {
        var unit = machine()
        let problem = InboundProblem(topic: .msg, job: "m9", reason: "text must not be empty")
        let step = unit.handle(.malformed(problem, at: now))
        #expect(step.messages == [.messageReply(MessageReply(msg: "m9", invalid: "text must not be empty", t: now))])
        #expect(step.replies == [])
        #expect(unit.handle(.malformed(InboundProblem(topic: .queue, job: "J1", reason: "x"), at: now)).messages == [], "a bad queue is never answered")
    }

    @Test func theQueuePositionHoldsOnlyWhileAvailableAndFresh() {
        var unit = machine()
        _ = unit.handle(.inbound(.queue(QueuePosition(zone: "Z1", position: 1, of: 2)), receivedAt: now))
        #expect(unit.driverMessages.queuePosition(now: now) == nil, "not available: ignored")
        _ = unit.handle(.driver(.duty, at: now))
        _ = unit.handle(.inbound(.queue(QueuePosition(zone: "Z1", position: 2, of: 3)), receivedAt: now))
        #expect(unit.driverMessages.queuePosition(now: now + .milliseconds(60_000)) == QueuePosition(zone: "Z1", position: 2, of: 3))
        #expect(unit.driverMessages.queuePosition(now: now + .milliseconds(MessageLimits.queueFreshMs + 1)) == nil)
        _ = unit.handle(.driver(.pause(.break), at: now + .milliseconds(1)))
        _ = unit.handle(.driver(.resume, at: now + .milliseconds(2)))
        #expect(unit.driverMessages.queuePosition(now: now + .milliseconds(2)) == nil, "the place was lost on leaving available")
    }

    @Test func wordWrapKeepsWordsWholeAndCutsOnlyWordsLongerThanALine() {
        #expect(MessageText.lines("Please call the office when you can", columns: 20) == ["Please call the", "office when you can"])
        #expect(MessageText.lines(String(repeating: "x", count: 25), columns: 10) == ["xxxxxxxxxx", "xxxxxxxxxx", "xxxxx"])
        #expect(MessageText.pages("a b c d e", columns: 1, rows: 2) == [["a", "b"], ["c", "d"], ["e"]])
        #expect(MessageText.lines("", columns: 20) == [""])
    }

    @Test func storedMessagesAreCheckedLikeNewOnes() {
        #expect(DriverMessages.isRestorable(InboxMessage(message: TextMessage(id: "m1", text: "ok"), receivedAt: now)))
        #expect(!DriverMessages.isRestorable(InboxMessage(message: TextMessage(id: "m1", text: String(repeating: "x", count: 600)), receivedAt: now)))
        #expect(!DriverMessages.isRestorable(InboxMessage(message: TextMessage(id: "", text: "ok"), receivedAt: now)))
    }

    @Test func inputWordsParse() {
        #expect(DriverInput.parse("msg") == .success(.message(.read)))
        #expect(DriverInput.parse("reply") == .success(.message(.choose(nil))))
        #expect(DriverInput.parse("reply 2") == .success(.message(.choose(2))))
        #expect(DriverInput.parse("send") == .success(.message(.send)))
        if case .success = DriverInput.parse("reply 0") { Issue.record("reply 0 accepted") }
        if case .success = DriverInput.parse("send now") { Issue.record("send with an argument accepted") }
    }
}
