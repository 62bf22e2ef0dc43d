import Foundation
import TaxiProtocol
import Testing

/// The one time type: a time from outside can be anything an `Int64` holds, and no arithmetic on
/// it may trap; on the wire and in the store it stays the bare integer it always was.
@Suite struct UnitTimeTests {
    @Test func arithmeticWithDurationsSaturatesAtTheEnds() {
        #expect(UnitTime.max + .seconds(1) == .max)
        #expect(UnitTime.min - .seconds(1) == .min)
        // The span between any two times is exact, and moving by it lands on the other.
        #expect(UnitTime.max - UnitTime.min == .milliseconds(UInt64.max))
        #expect(UnitTime.min + (UnitTime.max - UnitTime.min) == .max)
        #expect(UnitTime.max + (UnitTime.min - UnitTime.max) == .min)
        #expect(UnitTime(milliseconds: 1_000) + .seconds(Int64.max) == .max)
        #expect(UnitTime(milliseconds: 1_000) - .seconds(Int64.max) == .min)
    }

    @Test func spansAreExactToTheMillisecondAndTruncateBelowIt() {
        let t: UnitTime = 1_800_000_000_000
        #expect(t + .milliseconds(1) - t == .milliseconds(1))
        #expect((t + .microseconds(1_999)).milliseconds == 1_800_000_000_001)
        #expect((t - .microseconds(1_999)).milliseconds == 1_799_999_999_999)
        #expect(Duration.milliseconds(-1_500).wholeSeconds == -1)
        #expect(Duration.checkedSeconds(2.5) == .milliseconds(2_500))
        #expect(Duration.checkedSeconds(.infinity) == .milliseconds(Int64.max))
        #expect(Duration.checkedSeconds(-.infinity) == .milliseconds(Int64.min))
        #expect(Duration.checkedSeconds(.nan) == .zero)
    }

    @Test func secondsFromOutsideAreHeldInRange() {
        #expect(UnitTime(seconds: 1_780_000_000.5).milliseconds == 1_780_000_000_500)
        #expect(UnitTime(seconds: 1e300) == .max)
        #expect(UnitTime(seconds: -1e300) == .min)
    }

    @Test func itIsTheBareIntegerOnTheWireAndInTheStore() throws {
        struct Stamped: Codable, Equatable { var t: UnitTime }
        let stamped = Stamped(t: 1_800_000_000_123)
        let bytes = try JSONEncoder().encode(stamped)
        #expect(String(decoding: bytes, as: UTF8.self) == #"{"t":1800000000123}"#)
        #expect(try JSONDecoder().decode(Stamped.self, from: bytes) == stamped)
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(Stamped.self, from: Data(#"{"t":"soon"}"#.utf8)) }
    }
}
