import Testing
import TaxiProtocol
import UnitCore

@Suite struct UnitClockTests {
    @Test func aSynchronisedSystemClockIsUsedAsIs() {
        var clock = UnitClock()
        clock.fixAccepted(fixTime: UnitTime(seconds: 1_700_000_000), at: ClockSample(system: UnitTime(seconds: 5), systemSynchronised: false, monotonic: .checkedSeconds(10)))
        let reading = clock.reading(at: ClockSample(system: UnitTime(seconds: 1_780_000_000.5), systemSynchronised: true, monotonic: .checkedSeconds(20)))
        #expect(reading == ClockReading(time: UnitTime(seconds: 1_780_000_000.5), source: .system))
    }

    @Test func unsynchronisedItIsTheLastFixPlusMonotonicTimeSince() {
        var clock = UnitClock()
        clock.fixAccepted(fixTime: UnitTime(seconds: 1_780_000_000), at: ClockSample(system: UnitTime(seconds: 12), systemSynchronised: false, monotonic: .checkedSeconds(100)))
        // The system clock says 1970 and even steps backwards: only the monotonic clock counts.
        let reading = clock.reading(at: ClockSample(system: UnitTime(seconds: 3), systemSynchronised: false, monotonic: .checkedSeconds(107.25)))
        #expect(reading == ClockReading(time: UnitTime(seconds: 1_780_000_007.25), source: .gps))
        #expect(reading.time.milliseconds == 1_780_000_007_250)
    }

    @Test func theLatestFixReanchorsTheClock() {
        var clock = UnitClock()
        clock.fixAccepted(fixTime: UnitTime(seconds: 1_780_000_000), at: ClockSample(system: UnitTime(seconds: 0), systemSynchronised: false, monotonic: .checkedSeconds(100)))
        clock.fixAccepted(fixTime: UnitTime(seconds: 1_780_000_050), at: ClockSample(system: UnitTime(seconds: 0), systemSynchronised: false, monotonic: .checkedSeconds(149)))
        #expect(clock.reading(at: ClockSample(system: UnitTime(seconds: 0), systemSynchronised: false, monotonic: .checkedSeconds(150))).time == UnitTime(seconds: 1_780_000_051))
    }

    @Test func withNeitherItFallsBackToTheUnsynchronisedSystemClock() {
        let clock = UnitClock()
        #expect(clock.reading(at: ClockSample(system: UnitTime(seconds: 42), systemSynchronised: false, monotonic: .checkedSeconds(1))) == ClockReading(time: UnitTime(seconds: 42), source: .unsynchronised))
    }

    @Test func losingSynchronisationFallsBackToGPSTime() {
        var clock = UnitClock()
        clock.fixAccepted(fixTime: UnitTime(seconds: 1_780_000_000), at: ClockSample(system: UnitTime(seconds: 1_780_000_000), systemSynchronised: true, monotonic: .checkedSeconds(0)))
        #expect(clock.reading(at: ClockSample(system: UnitTime(seconds: 1_780_000_001), systemSynchronised: true, monotonic: .checkedSeconds(1))).source == .system)
        #expect(clock.reading(at: ClockSample(system: UnitTime(seconds: 9), systemSynchronised: false, monotonic: .checkedSeconds(2))) == ClockReading(time: UnitTime(seconds: 1_780_000_002), source: .gps))
    }
}
