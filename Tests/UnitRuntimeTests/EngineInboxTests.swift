import Testing
@testable import UnitRuntime

@Suite struct EngineInboxTests {
    @Test func inputsPostedWhileTheLoopWorksComeAsOneBatchInOrder() async {
        let inbox = EngineInbox<Int>()
        inbox.post(1)
        inbox.post(2)
        inbox.post(3)
        #expect(await inbox.next() == [1, 2, 3])
    }

    @Test func aDeferredInputWaitsForTheNextWakingOneAndComesBeforeIt() async {
        let inbox = EngineInbox<String>()
        inbox.deferred = .acknowledgement
        let loop = Task { await inbox.next() }
        // Let the loop park before anything is posted, as it does between batches.
        while !inbox.hasParkedConsumer { await Task.yield() }
        inbox.post("puback", mayWait: .acknowledgement)
        inbox.post("status request")
        #expect(await loop.value == ["puback", "status request"])
    }

    @Test func aDeferredInputWakesTheLoopOnceDeferringIsOff() async {
        let inbox = EngineInbox<String>()
        let loop = Task { await inbox.next() }
        while !inbox.hasParkedConsumer { await Task.yield() }
        inbox.post("puback", mayWait: .acknowledgement)
        #expect(await loop.value == ["puback"])
    }

    /// The loop parked, waiting for input, as it does between batches.
    func parkedLoop(_ inbox: EngineInbox<String>) async -> Task<[String]?, Never> {
        let loop = Task { await inbox.next() }
        while !inbox.hasParkedConsumer { await Task.yield() }
        return loop
    }

    @Test func onlyTheKindsDeferredNowWait() async {
        let inbox = EngineInbox<String>()
        inbox.deferred = .acknowledgement
        let loop = await parkedLoop(inbox)
        inbox.post("fix", mayWait: .fix)
        #expect(await loop.value == ["fix"], "fixes are not deferred now")
        inbox.deferred = [.acknowledgement, .fix]
        let next = await parkedLoop(inbox)
        inbox.post("fix", mayWait: .fix)
        inbox.post("puback", mayWait: .acknowledgement)
        inbox.post("window closed")
        #expect(await next.value == ["fix", "puback", "window closed"])
    }

    @Test func nothingIsTakenOnceTheLoopIsCancelled() async {
        let inbox = EngineInbox<Int>()
        let loop = Task { await inbox.next() }
        while !inbox.hasParkedConsumer { await Task.yield() }
        loop.cancel()
        #expect(await loop.value == nil)
        inbox.post(1)
        #expect(await inbox.next() == nil)
    }

    @Test func aFullInboxDropsOnlyWhatMayBeDropped() async {
        let inbox = EngineInbox<Int>()
        for value in 0..<(EngineInbox<Int>.capacity + 5) { inbox.post(value, droppable: true) }
        inbox.post(-1)
        #expect(inbox.droppedInputs == 5)
        let batch = await inbox.next() ?? []
        #expect(batch.count == EngineInbox<Int>.capacity + 1)
        #expect(batch.last == -1, "what may not be dropped is queued even when full")
    }
}
