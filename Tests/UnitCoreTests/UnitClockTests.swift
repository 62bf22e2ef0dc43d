import Testing
import UnitCore

@Suite struct UnitClockTests {
    @Test func aSynchronisedSystemClockIsUsedAsIs() {
        var clock = UnitClock()
        clock.fixAccepted(fixTimeS: 1_700_000_000, at: ClockSample(systemS: 5, systemSynchronised: false, monotonicS: 10))
        let reading = clock.reading(at: ClockSample(systemS: 1_780_000_000.5, systemSynchronised: true, monotonicS: 20))
        #expect(reading == ClockReading(time: 1_780_000_000.5, source: .system))
    }

    @Test func unsynchronisedItIsTheLastFixPlusMonotonicTimeSince() {
        var clock = UnitClock()
        clock.fixAccepted(fixTimeS: 1_780_000_000, at: ClockSample(systemS: 12, systemSynchronised: false, monotonicS: 100))
        // The system clock says 1970 and even steps backwards: only the monotonic clock counts.
        let reading = clock.reading(at: ClockSample(systemS: 3, systemSynchronised: false, monotonicS: 107.25))
        #expect(reading == ClockReading(time: 1_780_000_007.25, source: .gps))
        #expect(reading.milliseconds == 1_780_000_007_250)
    }

    @Test func theLatestFixReanchorsTheClock() {
        var clock = UnitClock()
        clock.fixAccepted(fixTimeS: 1_780_000_000, at: ClockSample(systemS: 0, systemSynchronised: false, monotonicS: 100))
        clock.fixAccepted(fixTimeS: 1_780_000_050, at: ClockSample(systemS: 0, systemSynchronised: false, monotonicS: 149))
        #expect(clock.reading(at: ClockSample(systemS: 0, systemSynchronised: false, monotonicS: 150)).time == 1_780_000_051)
    }

    @Test func withNeitherItFallsBackToTheUnsynchronisedSystemClock() {
        let clock = UnitClock()
        #expect(clock.reading(at: ClockSample(systemS: 42, systemSynchronised: false, monotonicS: 1)) == ClockReading(time: 42, source: .unsynchronised))
    }

    @Test func losingSynchronisationFallsBackToGPSTime() {
        var clock = UnitClock()
        clock.fixAccepted(fixTimeS: 1_780_000_000, at: ClockSample(systemS: 1_780_000_000, systemSynchronised: true, monotonicS: 0))
        #expect(clock.reading(at: ClockSample(systemS: 1_780_000_001, systemSynchronised: true, monotonicS: 1)).source == .system)
        #expect(clock.reading(at: ClockSample(systemS: 9, systemSynchronised: false, monotonicS: 2)) == ClockReading(time: 1_780_000_002, source: .gps))
    }
}
