import Foundation
import GPSReader
import TestHarness
import Testing
import UnitCore

@Suite struct GPSUnpackTests {
    @Test func aTPVWithAFixIsDecodedByLibgps() throws {
        let sample = try #require(GPSDConnection.unpack(
            #"{"class":"TPV","device":"/dev/pts/1","mode":3,"time":"2005-06-09T14:34:53.280Z","lat":46.498332203,"lon":7.567403907,"track":10.3788,"speed":0.091,"eph":45.600}"#))
        #expect(sample.mode == 3)
        #expect(abs(sample.time - 1_118_327_693.28) < 0.001)
        #expect(sample.latitude == 46.498332203 && sample.longitude == 7.567403907)
        #expect(sample.speed == 0.091 && sample.track == 10.3788 && sample.horizontalError == 45.6)
    }

    @Test func modeOneWithATimeHasNaNCoordinatesAndIsNoFix() throws {
        let sample = try #require(GPSDConnection.unpack(#"{"class":"TPV","device":"/dev/ttyUSB0","mode":1,"time":"2019-04-06T12:00:00.000Z"}"#))
        #expect(sample.mode == 1)
        #expect(sample.time > 0)
        #expect(sample.latitude.isNaN && sample.longitude.isNaN)
        var validator = FixValidator()
        #expect(validator.validate(sample) == .failure(.noFix(mode: 1)))
    }

    @Test func aTPVWithoutSpeedLeavesItNaN() throws {
        let sample = try #require(GPSDConnection.unpack(#"{"class":"TPV","mode":2,"time":"2020-01-01T00:00:00.000Z","lat":1.5,"lon":2.5}"#))
        #expect(sample.speed.isNaN && sample.track.isNaN)
        var validator = FixValidator()
        let fix = try validator.validate(sample).get()
        #expect(fix.speed == nil && fix.track == nil)
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
            case .sample(let sample): if case .success(let fix) = validator.validate(sample) { fixes.append(fix) }
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
        let connection = GPSDConnection(host: "127.0.0.1", port: port, retryDelayS: 0.2)
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
