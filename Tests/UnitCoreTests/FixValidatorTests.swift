import TaxiProtocol
import Testing
import UnitCore

/// 2026-05-28T20:26:40Z, read from a synchronised system clock.
let synchronisedNow = ClockReading(time: UnitTime(seconds: 1_780_000_000), source: .system)

@Suite struct FixValidatorTests {
    let t0 = 1_779_999_000.0

    @Test func aThreeDimensionalFixWithTimeIsValid() throws {
        var validator = FixValidator()
        let fix = try validator.validate(
            GPSSample(mode: 3, time: t0 + 0.25, latitude: 46.5, longitude: 7.56, speed: 3, track: 90, horizontalError: 12), clock: synchronisedNow
        ).get()
        #expect(fix == Fix(time: UnitTime(seconds: t0) + .milliseconds(250), latitude: 46.5, longitude: 7.56, speed: 3, track: 90, accuracy: 12))
    }

    @Test func modeOneWithTimeAndNaNCoordinatesIsRejected() {
        // gpsd really sends this while the receiver has no fix yet.
        var validator = FixValidator()
        let result = validator.validate(GPSSample(mode: 1, time: t0, latitude: .nan, longitude: .nan), clock: synchronisedNow)
        #expect(result == .failure(.noFix(mode: 1)))
        #expect(validator.previousTime == nil)
    }

    @Test func modeZeroIsRejectedEvenWithCoordinates() {
        var validator = FixValidator()
        #expect(validator.validate(GPSSample(mode: 0, time: t0, latitude: 1, longitude: 2), clock: synchronisedNow) == .failure(.noFix(mode: 0)))
    }

    @Test func modeTwoWithNaNCoordinatesIsRejected() {
        var validator = FixValidator()
        #expect(validator.validate(GPSSample(mode: 2, time: t0, latitude: .nan, longitude: 7), clock: synchronisedNow) == .failure(.coordinatesNotFinite))
        #expect(validator.validate(GPSSample(mode: 2, time: t0, latitude: 1, longitude: .infinity), clock: synchronisedNow) == .failure(.coordinatesNotFinite))
    }

    @Test(arguments: [(90.5, 0.0), (-90.0001, 0), (0, -180.1), (0, 180.5)])
    func coordinatesOutsideWGS84AreRejected(latitude: Double, longitude: Double) {
        var validator = FixValidator()
        #expect(validator.validate(GPSSample(mode: 3, time: t0, latitude: latitude, longitude: longitude), clock: synchronisedNow) == .failure(.coordinatesOutOfRange))
    }

    @Test(arguments: [(90.0, 180.0), (-90, -180), (0, 0)])
    func theEdgesOfWGS84AreValid(latitude: Double, longitude: Double) {
        var validator = FixValidator()
        #expect((try? validator.validate(GPSSample(mode: 3, time: t0, latitude: latitude, longitude: longitude), clock: synchronisedNow).get()) != nil)
    }

    @Test func missingTimeIsRejected() {
        var validator = FixValidator()
        #expect(validator.validate(GPSSample(mode: 3, time: 0, latitude: 1, longitude: 2), clock: synchronisedNow) == .failure(.noTime))
        #expect(validator.validate(GPSSample(mode: 3, time: .nan, latitude: 1, longitude: 2), clock: synchronisedNow) == .failure(.noTime))
    }

    @Test func aSecondReportWithTheSameTimeIsRejected() throws {
        var validator = FixValidator()
        _ = try validator.validate(GPSSample(mode: 3, time: t0, latitude: 1, longitude: 2), clock: synchronisedNow).get()
        #expect(validator.validate(GPSSample(mode: 3, time: t0, latitude: 1.1, longitude: 2), clock: synchronisedNow) == .failure(.sameTimeAsPrevious))
        #expect((try? validator.validate(GPSSample(mode: 3, time: t0 + 0.001, latitude: 1.1, longitude: 2), clock: synchronisedNow).get()) != nil)
    }

    @Test func unknownSpeedTrackAndErrorBecomeNil() throws {
        var validator = FixValidator()
        let fix = try validator.validate(GPSSample(mode: 2, time: t0, latitude: 1, longitude: 2), clock: synchronisedNow).get()
        #expect(fix.speed == nil && fix.track == nil && fix.accuracy == nil)
    }

    @Test func aFixDatedAWholeRolloverPeriodBackIsRejected() {
        var validator = FixValidator()
        let rolledOver = t0 - FixValidator.rolloverPeriodS
        #expect(validator.validate(GPSSample(mode: 3, time: rolledOver, latitude: 1, longitude: 2), clock: synchronisedNow) == .failure(.weekRollover))
        // A day short of the period is old, but not the rollover signature.
        let old = synchronisedNow.time.seconds - FixValidator.rolloverPeriodS + 86_400
        #expect((try? validator.validate(GPSSample(mode: 3, time: old, latitude: 1, longitude: 2), clock: synchronisedNow).get()) != nil)
    }

    @Test func withoutAnyTrustedClockTheReleaseDateIsTheReference() {
        // A board without a real-time clock: the system says 1970 and no fix has been seen yet.
        let bootedIn1970 = ClockReading(time: UnitTime(seconds: 30), source: .unsynchronised)
        var validator = FixValidator()
        let rolledOver = FixValidator.earliestReferenceS - FixValidator.rolloverPeriodS
        #expect(validator.validate(GPSSample(mode: 3, time: rolledOver, latitude: 1, longitude: 2), clock: bootedIn1970) == .failure(.weekRollover))
        #expect((try? validator.validate(GPSSample(mode: 3, time: t0, latitude: 1, longitude: 2), clock: bootedIn1970).get()) != nil)
    }

    @Test func aFixFarAheadOfTheSynchronisedClockIsRejected() {
        var validator = FixValidator()
        let ahead = synchronisedNow.time.seconds + FixValidator.futureAllowanceS + 1
        #expect(validator.validate(GPSSample(mode: 3, time: ahead, latitude: 1, longitude: 2), clock: synchronisedNow) == .failure(.inFuture))
        let slightlyAhead = synchronisedNow.time.seconds + 30
        #expect((try? validator.validate(GPSSample(mode: 3, time: slightlyAhead, latitude: 1, longitude: 2), clock: synchronisedNow).get()) != nil)
    }

    @Test(arguments: [ClockSource.gps, .unsynchronised])
    func onlyASynchronisedSystemClockCanCallAFixFuture(source: ClockSource) {
        var validator = FixValidator()
        let clock = ClockReading(time: synchronisedNow.time, source: source)
        let ahead = clock.time.seconds + 10 * 86_400
        #expect((try? validator.validate(GPSSample(mode: 3, time: ahead, latitude: 1, longitude: 2), clock: clock).get()) != nil)
    }

    @Test func fixesLessAccurateThanMaxEphAreDropped() {
        var validator = FixValidator(maxHorizontalErrorM: 50)
        #expect(validator.validate(GPSSample(mode: 3, time: t0, latitude: 1, longitude: 2, horizontalError: 50.5), clock: synchronisedNow)
            == .failure(.tooInaccurate(horizontalErrorM: 50.5)))
        #expect((try? validator.validate(GPSSample(mode: 3, time: t0 + 0.001, latitude: 1, longitude: 2, horizontalError: 50), clock: synchronisedNow).get()) != nil)
        // Unknown accuracy is not known to be bad.
        #expect((try? validator.validate(GPSSample(mode: 3, time: t0 + 0.002, latitude: 1, longitude: 2), clock: synchronisedNow).get()) != nil)
    }

    @Test func aRejectedFixDoesNotBecomeThePreviousTime() {
        var validator = FixValidator(maxHorizontalErrorM: 10)
        _ = validator.validate(GPSSample(mode: 3, time: t0, latitude: 1, longitude: 2, horizontalError: 99), clock: synchronisedNow)
        #expect(validator.previousTime == nil)
        #expect((try? validator.validate(GPSSample(mode: 3, time: t0, latitude: 1, longitude: 2, horizontalError: 5), clock: synchronisedNow).get()) != nil)
    }

    @Test(arguments: [4, 99, Int(Int32.max), Int.max])
    func aModeBeyondThreeDimensionalIsCountedOutOfRange(mode: Int) {
        var validator = FixValidator()
        let result = validator.validate(GPSSample(mode: mode, time: t0, latitude: 1, longitude: 2), clock: synchronisedNow)
        #expect(result == .failure(.outOfRange(field: "mode", value: Double(mode))))
        #expect((try? result.get()) == nil && validator.previousTime == nil)
        if case .failure(let rejection) = result { #expect(rejection.isOutOfRange) }
    }

    @Test(arguments: [Double.infinity, -Double.infinity, -1.0])
    func anInfiniteOrNegativeErrorEstimateIsCountedOutOfRange(eph: Double) {
        // An infinite error is no estimate: counted as a broken receiver's, not as merely inaccurate.
        var validator = FixValidator(maxHorizontalErrorM: .greatestFiniteMagnitude)
        let result = validator.validate(GPSSample(mode: 3, time: t0, latitude: 1, longitude: 2, horizontalError: eph), clock: synchronisedNow)
        #expect(result == .failure(.outOfRange(field: "eph", value: eph)))
        if case .failure(let rejection) = result { #expect(rejection.isOutOfRange) }
    }
}
