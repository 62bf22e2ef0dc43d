import Testing
import UnitCore

@Suite struct FixValidatorTests {
    @Test func aThreeDimensionalFixWithTimeIsValid() throws {
        var validator = FixValidator()
        let fix = try validator.validate(GPSSample(mode: 3, time: 1_700_000_000.25, latitude: 46.5, longitude: 7.56, speed: 3, track: 90, horizontalError: 12)).get()
        #expect(fix == Fix(time: 1_700_000_000_250, latitude: 46.5, longitude: 7.56, speed: 3, track: 90, accuracy: 12))
    }

    @Test func modeOneWithTimeAndNaNCoordinatesIsRejected() {
        // gpsd really sends this while the receiver has no fix yet.
        var validator = FixValidator()
        let result = validator.validate(GPSSample(mode: 1, time: 1_700_000_000, latitude: .nan, longitude: .nan))
        #expect(result == .failure(.noFix(mode: 1)))
        #expect(validator.previousTime == nil)
    }

    @Test func modeTwoWithNaNCoordinatesIsRejected() {
        var validator = FixValidator()
        #expect(validator.validate(GPSSample(mode: 2, time: 1, latitude: .nan, longitude: 7)) == .failure(.coordinatesNotFinite))
        #expect(validator.validate(GPSSample(mode: 2, time: 1, latitude: 1, longitude: .infinity)) == .failure(.coordinatesNotFinite))
    }

    @Test func coordinatesOutsideWGS84AreRejected() {
        var validator = FixValidator()
        #expect(validator.validate(GPSSample(mode: 3, time: 1, latitude: 90.5, longitude: 0)) == .failure(.coordinatesOutOfRange))
        #expect(validator.validate(GPSSample(mode: 3, time: 1, latitude: 0, longitude: -180.1)) == .failure(.coordinatesOutOfRange))
    }

    @Test func missingTimeIsRejected() {
        var validator = FixValidator()
        #expect(validator.validate(GPSSample(mode: 3, time: 0, latitude: 1, longitude: 2)) == .failure(.noTime))
        #expect(validator.validate(GPSSample(mode: 3, time: .nan, latitude: 1, longitude: 2)) == .failure(.noTime))
    }

    @Test func aSecondReportWithTheSameTimeIsRejected() throws {
        var validator = FixValidator()
        _ = try validator.validate(GPSSample(mode: 3, time: 100, latitude: 1, longitude: 2)).get()
        #expect(validator.validate(GPSSample(mode: 3, time: 100, latitude: 1.1, longitude: 2)) == .failure(.sameTimeAsPrevious))
        #expect((try? validator.validate(GPSSample(mode: 3, time: 101, latitude: 1.1, longitude: 2)).get()) != nil)
    }

    @Test func unknownSpeedTrackAndErrorBecomeNil() throws {
        var validator = FixValidator()
        let fix = try validator.validate(GPSSample(mode: 2, time: 5, latitude: 1, longitude: 2)).get()
        #expect(fix.speed == nil && fix.track == nil && fix.accuracy == nil)
    }
}
