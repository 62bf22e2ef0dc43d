import Foundation
import Testing
import UnitCore

/// The OwnTracks `location` from a fix: OwnTracks' units (s, m, km/h, whole degrees), keys sorted.
@Suite struct OwnTracksTests {
    @Test func aFixInOwnTracksUnits() throws {
        let fix = Fix(time: 1_737_642_886_999, latitude: 40.757978712, longitude: -73.985542649, speed: 11.3, track: 359.6, accuracy: 3.24)
        let text = String(decoding: try OwnTracksLocation(fix, tid: "42").json(), as: UTF8.self)
        #expect(text == #"{"_type":"location","acc":3,"cog":0,"lat":40.7579787,"lon":-73.9855426,"t":"t","tid":"42","tst":1737642886,"vel":41}"#)
        let bare = Fix(time: 1_737_642_886_000, latitude: 1, longitude: 2, speed: nil, track: nil, accuracy: nil)
        #expect(String(decoding: try OwnTracksLocation(bare, tid: "A").json(), as: UTF8.self) == #"{"_type":"location","lat":1,"lon":2,"t":"t","tid":"A","tst":1737642886}"#)
    }
}
