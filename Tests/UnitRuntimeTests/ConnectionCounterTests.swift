import Testing
@testable import UnitRuntime

@Suite struct ConnectionCounterTests {
    @Test func aNewStoreReservesBeforeTheFirstAttemptAndCountsFromOne() {
        var counter = ConnectionCounter(stored: nil)
        #expect(counter.reservation() == 100)
        #expect(counter.next() == 1)
        #expect(counter.next() == 2)
        #expect(counter.reservation() == nil)
    }

    @Test func aRestartContinuesAboveWhatTheLastRunReserved() {
        var first = ConnectionCounter(stored: nil)
        _ = first.reservation()
        for _ in 0..<7 { _ = first.next() }
        // Killed after attempt 7: the next run starts above the reservation on disk, 100.
        var second = ConnectionCounter(stored: first.reserved)
        #expect(second.reservation() == 200)
        #expect(second.next() == 101)
    }

    @Test func theReservationIsRenewedWhenHalfOfItIsUsed() {
        var counter = ConnectionCounter(stored: nil)
        _ = counter.reservation()
        for _ in 0..<49 { _ = counter.next() }
        #expect(counter.reservation() == nil)
        _ = counter.next()
        #expect(counter.reservation() == 150)
        #expect(counter.last == 50)
    }

    @Test func aDamagedStoredValueIsClampedAndTheCounterStopsAtTheLargestExactNumber() {
        var negative = ConnectionCounter(stored: -5)
        #expect(negative.next() == 1)
        var huge = ConnectionCounter(stored: .max)
        #expect(huge.reservation() == nil)
        #expect(huge.next() == ConnectionCounter.largest)
        #expect(huge.next() == ConnectionCounter.largest)
    }
}
