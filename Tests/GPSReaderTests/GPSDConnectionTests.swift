import Foundation
@testable import GPSReader
import TaxiProtocol
import TestHarness
import Testing
import UnitCore

/// A synchronised system clock on 2026-05-28: the reference for the date checks.
let synchronisedNow = ClockReading(time: UnitTime(seconds: 1_780_000_000), source: .system)

/// TPV lines as gpsd 3.22 writes them, decoded by libgps's own parser and judged by the unit's rule.
@Suite struct GPSUnpackTests {
    func validate(_ line: String, clock: ClockReading = synchronisedNow) throws -> Result<Fix, FixValidator.Rejection> {
        var validator = FixValidator()
        return validator.validate(try #require(GPSDConnection.unpack(line)), clock: clock)
    }

    @Test func aTPVWithAFixIsDecodedByLibgps() throws {
        let sample = try #require(GPSDConnection.unpack(
            #"{"class":"TPV","device":"/dev/pts/1","mode":3,"time":"2026-05-28T14:34:53.280Z","lat":46.498332203,"lon":7.567403907,"track":10.3788,"speed":0.091,"eph":45.600}"#))
        #expect(sample.mode == 3)
        #expect(abs(sample.time - 1_779_978_893.28) < 0.001)
        #expect(sample.latitude == 46.498332203 && sample.longitude == 7.567403907)
        #expect(sample.speed == 0.091 && sample.track == 10.3788 && sample.horizontalError == 45.6)
        var validator = FixValidator()
        let fix = try validator.validate(sample, clock: synchronisedNow).get()
        #expect(fix == Fix(time: 1_779_978_893_280, latitude: 46.498332203, longitude: 7.567403907, speed: 0.091, track: 10.3788, accuracy: 45.6))
    }

    @Test func modeOneWithATimeHasNaNCoordinatesAndIsNoFix() throws {
        let line = #"{"class":"TPV","device":"/dev/ttyUSB0","mode":1,"time":"2026-05-28T12:00:00.000Z"}"#
        let sample = try #require(GPSDConnection.unpack(line))
        #expect(sample.mode == 1)
        #expect(sample.time > 0)
        #expect(sample.latitude.isNaN && sample.longitude.isNaN)
        #expect(try validate(line) == .failure(.noFix(mode: 1)))
    }

    @Test func modeOneIsNoFixEvenWithStaleCoordinates() throws {
        // Some receivers repeat the last position after losing the fix; gpsd passes it through.
        #expect(try validate(#"{"class":"TPV","mode":1,"time":"2026-05-28T12:00:00.000Z","lat":46.5,"lon":7.5}"#) == .failure(.noFix(mode: 1)))
    }

    @Test func aTPVWithoutModeIsNoFix() throws {
        #expect(try validate(#"{"class":"TPV","time":"2026-05-28T12:00:00.000Z","lat":46.5,"lon":7.5}"#) == .failure(.noFix(mode: 0)))
    }

    @Test func aTPVWithoutSpeedLeavesItNaN() throws {
        let sample = try #require(GPSDConnection.unpack(#"{"class":"TPV","mode":2,"time":"2026-01-01T00:00:00.000Z","lat":1.5,"lon":2.5}"#))
        #expect(sample.speed.isNaN && sample.track.isNaN && sample.horizontalError.isNaN)
        var validator = FixValidator()
        let fix = try validator.validate(sample, clock: synchronisedNow).get()
        #expect(fix.speed == nil && fix.track == nil && fix.accuracy == nil)
    }

    @Test func aTPVWithoutTimeIsRejected() throws {
        #expect(try validate(#"{"class":"TPV","mode":3,"lat":46.5,"lon":7.5}"#) == .failure(.noTime))
    }

    @Test func aWeekRolloverDateIsRejected() throws {
        // A receiver with the rollover bug reports 2026-05-28 as 1024 weeks earlier: 2006-10-12.
        #expect(try validate(#"{"class":"TPV","mode":3,"time":"2006-10-12T14:00:00.000Z","lat":46.5,"lon":7.5}"#) == .failure(.weekRollover))
        // Without a synchronised clock the software's release date is the reference.
        let bootedIn1970 = ClockReading(time: UnitTime(seconds: 12), source: .unsynchronised)
        #expect(try validate(#"{"class":"TPV","mode":3,"time":"2003-06-01T00:00:00.000Z","lat":46.5,"lon":7.5}"#, clock: bootedIn1970) == .failure(.weekRollover))
    }

    @Test func aFutureDateIsRejected() throws {
        #expect(try validate(#"{"class":"TPV","mode":3,"time":"2046-01-01T00:00:00.000Z","lat":46.5,"lon":7.5}"#) == .failure(.inFuture))
    }

    @Test func coordinatesOutsideWGS84AreRejected() throws {
        #expect(try validate(#"{"class":"TPV","mode":3,"time":"2026-05-28T12:00:00.000Z","lat":91.0,"lon":7.5}"#) == .failure(.coordinatesOutOfRange))
    }

    @Test func anInaccurateFixIsRejected() throws {
        #expect(try validate(#"{"class":"TPV","mode":3,"time":"2026-05-28T12:00:00.000Z","lat":46.5,"lon":7.5,"eph":120.5}"#)
            == .failure(.tooInaccurate(horizontalErrorM: 120.5)))
    }

    @Test func aTruncatedTPVIsNoFix() throws {
        // libgps keeps what it parsed before the cut: a mode without coordinates.
        #expect(try validate(#"{"class":"TPV","mode":3,"time":"2026-05-28T12:00:00.000Z","lat":"#) == .failure(.coordinatesNotFinite))
    }

    @Test func otherClassesAndGarbageAreNotSamples() {
        #expect(GPSDConnection.unpack(#"{"class":"SKY","time":"2020-01-01T00:00:00.000Z","satellites":[]}"#) == nil)
        #expect(GPSDConnection.unpack("not json at all") == nil)
        #expect(GPSDConnection.unpack("") == nil)
    }
}

@Suite struct GPSDConnectionTests {
    @Test func readsTPVReportsFromARealGpsd() async throws {
        let scratch = try ScratchDirectory()
        let gps = try FakeGPS(log: Corpus.log("bu303-moving.log"), in: scratch, cycleS: 0.02)
        let connection = GPSDConnection(host: "127.0.0.1", port: gps.port)
        connection.start()
        defer { connection.stop() }
        var connected = false
        var fixes: [Fix] = []
        var validator = FixValidator()
        let deadline = ContinuousClock.now + .seconds(20)
        for await event in connection.events {
            switch event {
            case .connected: connected = true
            case .sample(let sample):
                // gpsd 3.22 dates this 2005 log in 2025: a GPS-derived clock is the fair reference.
                if case .success(let fix) = validator.validate(sample, clock: ClockReading(time: UnitTime(seconds: sample.time), source: .gps)) { fixes.append(fix) }
            case .disconnected: break
            }
            if fixes.count >= 5 || ContinuousClock.now > deadline { break }
        }
        #expect(connected)
        #expect(fixes.count >= 5)
        // bu303-moving.log was recorded near Visp, Switzerland.
        for fix in fixes {
            #expect(abs(fix.latitude - 46.498) < 0.01 && abs(fix.longitude - 7.567) < 0.01)
        }
    }

    @Test func reportsGpsdUnreachableAndKeepsTrying() async throws {
        let port = try Loopback.freePort()
        let connection = GPSDConnection(host: "127.0.0.1", port: port, minRetryDelayS: 0.2)
        connection.start()
        defer { connection.stop() }
        var iterator = connection.events.makeAsyncIterator()
        let first = await iterator.next()
        guard case .disconnected(let reason)? = first else {
            Issue.record("expected a disconnected event, got \(String(describing: first))")
            return
        }
        #expect(reason.contains("cannot reach gpsd"))
    }
}

/// The reader's cut of gpsd's stream into lines, fed through a pipe as a socket would be.
@Suite struct GPSDLineBufferTests {
    func lines(fromWrites writes: [String]) throws -> [String] {
        var ends: [Int32] = [0, 0]
        try #require(pipe(&ends) == 0)
        defer { close(ends[0]) }
        var buffer = GPSDConnection.LineBuffer()
        var lines: [String] = []
        for chunk in writes {
            _ = chunk.withCString { write(ends[1], $0, strlen($0)) }
            #expect(try buffer.read(from: ends[0]) == chunk.utf8.count)
            buffer.forEachLine { lines.append(String(cString: $0)) }
        }
        close(ends[1])
        #expect(try buffer.read(from: ends[0]) == 0, "the end of the stream")
        return lines
    }

    @Test func aLineCutAcrossReadsComesWholeOnceItsNewlineCame() throws {
        #expect(try lines(fromWrites: [#"{"class":"TP"#, #"V","mode":3}"# + "\n" + #"{"class":"SKY"}"# + "\n{\"cl", "ass\":\"GST\"}\n"])
            == [#"{"class":"TPV","mode":3}"#, #"{"class":"SKY"}"#, #"{"class":"GST"}"#])
    }

    @Test func aLineLongerThanTheBufferIsDroppedAndReadingGoesOn() throws {
        let long = String(repeating: "x", count: GPSDConnection.LineBuffer.capacity)
        let received = try lines(fromWrites: [long, "tail of the long line\n", #"{"class":"TPV"}"# + "\n"])
        #expect(received.last == #"{"class":"TPV"}"#)
        #expect(!received.contains { $0.count >= GPSDConnection.LineBuffer.capacity })
    }
}
