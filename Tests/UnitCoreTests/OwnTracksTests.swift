import Foundation
import TaxiProtocol
import Testing
import UnitCore

/// The OwnTracks `location` from a fix: OwnTracks' units (s, m, km/h, whole degrees), keys sorted.
@Suite struct OwnTracksTests {
    @Test func aFixInOwnTracksUnits() throws {
        let fix = Fix(time: 1_737_642_886_999, latitude: 40.757978712, longitude: -73.985542649, speed: 11.3, track: 359.6, accuracy: 3.24)
        let text = String(decoding: try OwnTracksLocation(fix, tid: "42").json(), as: UTF8.self)
        #expect(text == #"{"_type":"location","acc":3,"cog":0,"lat":40.7579787,"lon":-73.9855426,"t":"t","tid":"42","tst":1737642886,"vel":41}"#)
        let high = Fix(time: 1_737_642_886_000, latitude: 1, longitude: 2, accuracy: 5, altitude: 1_604.6)
        #expect(String(decoding: try OwnTracksLocation(high, tid: "A").json(), as: UTF8.self)
            == #"{"_type":"location","acc":5,"alt":1605,"lat":1,"lon":2,"t":"t","tid":"A","tst":1737642886}"#)
        let bare = Fix(time: 1_737_642_886_000, latitude: 1, longitude: 2, speed: nil, track: nil, accuracy: nil)
        #expect(String(decoding: try OwnTracksLocation(bare, tid: "A").json(), as: UTF8.self) == #"{"_type":"location","lat":1,"lon":2,"t":"t","tid":"A","tst":1737642886}"#)
    }

    /// gpsd's altitude above sea level reaches OwnTracks' `alt`; one no receiver can mean is left out
    /// and the fix kept.
    @Test func theAltitudeIsKeptWhenARoadCouldBeThere() {
        var validator = FixValidator()
        let clock = ClockReading(time: UnitTime(seconds: 1_737_642_886), source: .system)
        func fix(_ altitude: Double, at time: Double) -> Fix? {
            try? validator.validate(GPSSample(mode: 3, time: time, latitude: 1, longitude: 2, altitude: altitude), clock: clock).get()
        }
        #expect(fix(12.4, at: 1_737_642_880)?.altitude == 12.4)
        #expect(fix(-430, at: 1_737_642_881)?.altitude == -430)
        let impossible = fix(1e7, at: 1_737_642_882)
        #expect(impossible != nil && impossible?.altitude == nil)
        #expect(fix(.nan, at: 1_737_642_883).map { $0.altitude == nil } == true)
    }
}
