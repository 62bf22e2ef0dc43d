import DriverKeys
import PropertyBased
import Testing

/// The text meter protocol: `HIRED`, `VACANT`, `FARE <minor units> <currency>` lines, whatever way
/// the serial line cuts them, with anything else counted and dropped.
@Suite struct MeterLineTests {
    func decode(_ text: String) -> (readings: [MeterReading], garbage: Int) {
        var decoder = TextMeterDecoder()
        let readings = decoder.receive(Array(text.utf8))
        return (readings, decoder.garbageLines)
    }

    @Test func theThreeLinesDecode() {
        let decoded = decode("HIRED\nFARE 2710 EUR\r\nVACANT\n  FARE  0   JPY \n")
        #expect(decoded.readings == [.hired, .fare(amount: 2710, currency: "EUR"), .vacant, .fare(amount: 0, currency: "JPY")])
        #expect(decoded.garbage == 0)
    }

    @Test func aLineCountsOnlyOnceItsNewlineArrives() {
        var decoder = TextMeterDecoder()
        #expect(decoder.receive(Array("HIR".utf8)).isEmpty)
        #expect(decoder.receive(Array("ED".utf8)).isEmpty)
        #expect(decoder.receive(Array("\nVAC".utf8)) == [.hired])
    }

    @Test func garbageIsCountedAndDropped() {
        let lines = [
            "hired", "HIRED NOW", "FARE", "FARE 12 EU", "FARE 12 eur", "FARE -12 EUR", "FARE 1.50 EUR", "FARE 1234567890123 EUR",
            "FARE 12 EUR X", "VACANT\u{1}", "\u{FF}HIRED", "HIRED\tX",
        ]
        let decoded = decode(lines.map { $0 + "\n" }.joined() + "\n\r\n" + "HIRED\n")
        #expect(decoded.readings == [.hired], "only the last, valid line reads")
        #expect(decoded.garbage == lines.count, "blank lines are no garbage")
    }

    @Test func anOverlongLineIsDroppedWholeAndTheNextOneReads() {
        let long = String(repeating: "HIRED ", count: 20)
        var decoder = TextMeterDecoder()
        #expect(decoder.receive(Array((long + "\nVACANT\n").utf8)) == [.vacant])
        #expect(decoder.garbageLines == 1)
        // A valid word at the end of an overlong line does not read either.
        #expect(decoder.receive(Array((String(repeating: " ", count: 100) + "HIRED\n").utf8)).isEmpty)
        #expect(decoder.garbageLines == 2)
    }

    /// Any bytes at all: nothing traps, and every reading is one the format allows.
    @Test func anyByteSoupIsSafe() async {
        await propertyCheck(count: 500, input: Gen.int(in: 0...255).array(of: 0...600)) { bytes in
            var decoder = TextMeterDecoder()
            for reading in decoder.receive(bytes.map { UInt8($0) }) {
                if case .fare(let amount, let currency) = reading {
                    #expect(amount >= 0 && currency.utf8.count == 3)
                }
            }
            #expect(decoder.garbageLines <= bytes.count)
        }
    }

    /// A stream of lines, valid and not, cut into pieces anywhere: the same readings and the same
    /// garbage count as in one read.
    @Test func linesSplitAnywhereDecodeTheSame() async {
        let words = ["HIRED", "VACANT", "FARE 2710 EUR", "FARE 5 CHF", "junk", "FARE x EUR", "", String(repeating: "Z", count: 70)]
        let lines = Gen.int(in: 0...(words.count - 1)).array(of: 0...30)
        let cuts = Gen.int(in: 1...16).array(of: 1...200)
        await propertyCheck(count: 500, input: lines, cuts) { picks, cuts in
            let bytes = Array(picks.map { words[$0] + "\n" }.joined().utf8)
            var whole = TextMeterDecoder()
            let expected = whole.receive(bytes)
            var pieces = TextMeterDecoder()
            var readings: [MeterReading] = []
            var start = 0
            var cut = 0
            while start < bytes.count {
                let end = min(bytes.count, start + cuts[cut % cuts.count])
                readings += pieces.receive(bytes[start..<end])
                start = end
                cut += 1
            }
            #expect(readings == expected && pieces.garbageLines == whole.garbageLines)
        }
    }

    @Test func eachProtocolNamesADecoder() {
        for meterProtocol in MeterProtocol.allCases {
            var decoder = meterProtocol.makeDecoder()
            #expect(decoder.receive(Array("HIRED\n".utf8)) == [.hired], "\(meterProtocol)")
        }
    }
}
