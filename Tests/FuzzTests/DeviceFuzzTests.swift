import DriverKeys
import Foundation
import GPSReader
import PropertyBased
import TaxiProtocol
import Testing
import UnitCore

/// What gpsd, the store, the serial line and the input devices hand the unit: any value decodes or
/// is refused, nothing traps, and what is accepted is within range.
@Suite struct DeviceFuzzTests {
    /// The ranges a report's fields are mostly drawn from: time, lat, lon, speed, track, eph.
    static let plausible: [ClosedRange<Double>] = [1_700_000_000...1_900_000_000, -91...91, -181...181, -1...200, -1...400, -1...100]

    @Test func gpsReportsIntoThePipeline() async {
        // Per field: a fraction of its plausible range, the bits of any double, and which of the two (1 in 10 wild).
        let field = zip(Gen.double(in: 0...1), Gen.int64(in: .min ... .max), Gen.int(in: 0...9))
        let report = zip(Gen.int(in: 0...3), field.array(of: 6))
        await propertyCheck(count: FuzzBudget.cases(20_000, "gps-reports"), input: report.array(of: 1...10), Gen.bool()) { reports, synchronised in
            var pipeline = PositionPipeline()
            for (index, (mode, fields)) in reports.enumerated() {
                let v = zip(fields, Self.plausible).map { field, range in
                    let (fraction, bits, pick) = field
                    return pick == 0 ? Double(bitPattern: UInt64(bitPattern: bits)) : range.lowerBound + fraction * (range.upperBound - range.lowerBound)
                }
                let clock = ClockSample(system: UnitTime(seconds: 1_800_000_000), systemSynchronised: synchronised, monotonic: .checkedSeconds(Double(index)))
                let sample = GPSSample(mode: mode, time: v[0], latitude: v[1], longitude: v[2], speed: v[3], track: v[4], horizontalError: v[5])
                guard let (fix, _) = pipeline.handle(sample, at: clock, state: "panic") else { continue }
                #expect(abs(fix.latitude) <= 90 && abs(fix.longitude) <= 180)
                #expect(fix.time > .epoch && fix.time < UnitTime(seconds: FixValidator.latestTimeS))
                #expect(fix.speed.map(FixValidator.speedRange.contains) ?? true)
                #expect(fix.track.map { $0 >= 0 && $0 < 360 } ?? true)
                #expect(fix.accuracy.map { $0 >= 0 } ?? true)
                // Every accepted fix packs and writes.
                _ = BackfillMessage.writeJSON(unit: "T1", seq: 1, id: "x", points: [PositionPoint(fix)][...])
            }
        }
    }

    @Test func gpsdJSONLinesThroughLibgps() async {
        let tpv = #"{"class":"TPV","device":"/dev/ttyUSB0","mode":3,"time":"2027-01-15T08:00:00.000Z","lat":46.5,"lon":7.5,"speed":3.2,"track":90.0,"eph":5.0}"#
        let mutation = zip(Gen.int(in: 0...10_000), Gen.int(in: 32...126))
        await propertyCheck(count: FuzzBudget.cases(8_000, "gpsd-json-mutated"), input: mutation.array(of: 0...5)) { mutations in
            var bytes = Array(tpv.utf8)
            for (position, byte) in mutations { bytes[position % bytes.count] = UInt8(byte) }
            guard let sample = GPSDConnection.unpack(String(decoding: bytes, as: UTF8.self)) else { return }
            var validator = FixValidator()
            _ = validator.validate(sample, clock: ClockReading(time: UnitTime(seconds: 1_800_000_000), source: .system))
        }
    }

    @Test func backfillRoundTripsInRangeAndNeverTrapsOutside() async {
        let point = zip(
            Gen.int64(in: 1_000_000_000_000...4_000_000_000_000), Gen.double(in: -90...90), Gen.double(in: -180...180),
            Gen.double(in: 0...150), Gen.double(in: 0...360), Gen.double(in: 0...1000), Gen.int(in: 0...15))
        await propertyCheck(count: FuzzBudget.cases(10_000, "backfill-codec"), input: point.array(of: 1...60), Gen.int64(in: .min ... .max).array(of: 6)) { points, bits in
            // Any double, NaN, infinities and subnormals included: from its bit pattern.
            let wild = bits.map { Double(bitPattern: UInt64(bitPattern: $0)) }
            let sane = points.map { t, lat, lon, spd, hdg, acc, unknown in
                PositionPoint(t: t, lat: lat, lon: lon, spd: unknown & 1 == 0 ? spd : nil, hdg: unknown & 2 == 0 ? hdg : nil, acc: unknown & 4 == 0 ? acc : nil)
            }
            let rows = PositionBatch.encode(sane)
            let decoded = PositionBatch.decode(rows)
            #expect(decoded?.count == sane.count)
            for (got, want) in zip(decoded ?? [], sane) {
                #expect(got.t == want.t && abs(got.lat - want.lat) <= 0.5e-7 + 1e-9 && abs(got.lon - want.lon) <= 0.5e-7 + 1e-9)
                #expect((got.spd == nil) == (want.spd == nil) && (got.hdg == nil) == (want.hdg == nil) && (got.acc == nil) == (want.acc == nil))
            }
            // Anything at all, as a broken store could hold it: encodes without trapping, and
            // sanitised it is back in range.
            let broken = PositionPoint(t: bits[0], lat: wild[1], lon: wild[2], spd: wild[3], hdg: wild[4], acc: wild[5])
            _ = PositionBatch.encode(sane + [broken] + sane)
            _ = BackfillMessage.writeJSON(unit: "T1", seq: 1, id: "x", points: (sane + [broken])[...])
            if let fixed = broken.sanitised {
                #expect(PositionBatch.decode(PositionBatch.encode([fixed])) != nil)
            }
        }
    }

    @Test func serialBytesIntoTheKeyDecoder() async {
        let chunk = zip(Gen.int(in: 0...255).array(of: 0...40), Gen.int(in: 0...300_000))
        await propertyCheck(count: FuzzBudget.cases(6_000, "terminal-bytes"), input: chunk.array(of: 1...30)) { chunks in
            var decoder = TerminalKeyDecoder(quietUs: 2_083)
            var now: Int64 = 0
            for (bytes, gap) in chunks {
                now += Int64(gap)
                _ = decoder.receive(bytes.map { UInt8($0) }, at: now)
                if let deadline = decoder.nextDeadline { _ = decoder.tick(at: max(now, deadline)) }
            }
        }
    }

    /// A serial meter's bytes, mostly its own words cut anywhere with noise between, drive a unit
    /// at the pickup: nothing traps, and a ride cleared by the meter carries a fare within bounds.
    @Test func meterBytesIntoTheDecoderAndTheCore() async {
        let words = ["HIRED\n", "VACANT\n", "FARE 2710 EUR\n", "FARE 99999999999 EUR\n", "FARE 0 JPY\r\n", "\n"]
        let piece = zip(Gen.int(in: 0...(words.count - 1)), Gen.int(in: 0...255).array(of: 0...3), Gen.int(in: 0...4))
        await propertyCheck(count: FuzzBudget.cases(4_000, "meter-bytes"), input: piece.array(of: 1...40)) { pieces in
            var decoder = TextMeterDecoder()
            var machine = Scenario.machine(in: .atPickup)
            let t = Scenario.now
            for (index, (word, noise, cut)) in pieces.enumerated() {
                let bytes = Array(words[word].utf8) + noise.map { UInt8($0) }
                let at = t + .seconds(index)
                for part in [bytes.prefix(cut), bytes.dropFirst(cut)] {
                    for reading in decoder.receive(part) {
                        let step: Step = switch reading {
                        case .hired: machine.handle(.meter(hired: true, at: at))
                        case .vacant: machine.handle(.meter(hired: false, at: at))
                        case .fare(let amount, let currency): machine.handle(.meterFare(amount: amount, currency: currency, at: at))
                        }
                        if let fare = step.ride?.fare { #expect(FareLimits.amount.contains(fare.amount)) }
                    }
                }
            }
        }
    }

    @Test func evdevRecordsFromAnyBytes() async {
        await propertyCheck(count: FuzzBudget.cases(8_000, "evdev-records"), input: Gen.int(in: 0...255).array(of: 0...200), Gen.int(in: 1...7)) { bytes, pieces in
            var decoder = InputEventDecoder()
            var debouncer = ButtonDebouncer(debounceMs: 30, holdMs: 2000, holdOnlyKeys: [68])
            let data = bytes.map { UInt8($0) }
            let size = max(1, data.count / pieces)
            var records: [InputEventRecord] = []
            for start in stride(from: 0, to: data.count, by: size) { records += decoder.decode(data[start..<min(data.count, start + size)]) }
            #expect(records.count == data.count / InputEventLayout.native.recordSize)
            for (index, record) in records.enumerated() {
                if let change = record.keyChange { _ = debouncer.key(change.code, change.value, at: Int64(index) * 7) }
            }
            _ = debouncer.tick(at: Int64.max / 2)
        }
    }
}
