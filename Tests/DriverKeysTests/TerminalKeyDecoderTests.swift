import DriverKeys
import PropertyBased
import Testing

@Suite struct TerminalKeyDecoderTests {
    /// Types `text` one byte at a time, `gapMs` apart, and lets the guard pass after the last one.
    func typed(_ bytes: [UInt8], gapMs: Int64 = 200, guardMs: Int64 = 3) -> [TerminalKey] {
        var decoder = TerminalKeyDecoder(noiseGuardMs: guardMs)
        var keys: [TerminalKey] = []
        var now: Int64 = 1000
        for byte in bytes {
            keys += decoder.receive([byte], at: now)
            now += gapMs
        }
        return keys + decoder.tick(at: now)
    }

    @Test func printableKeysArriveAfterTheQuietTime() {
        var decoder = TerminalKeyDecoder(noiseGuardMs: 3)
        #expect(decoder.receive(Array("a".utf8), at: 100) == [])
        #expect(decoder.nextDeadline == 103)
        #expect(decoder.tick(at: 102) == [])
        #expect(decoder.tick(at: 103) == [.character("a")])
        #expect(decoder.nextDeadline == nil)
        #expect(typed(Array("ar12345678".utf8)) == "ar12345678".map { .character($0) })
    }

    @Test func withoutAGuardKeysArriveAtOnce() {
        var decoder = TerminalKeyDecoder(noiseGuardMs: 0)
        #expect(decoder.receive(Array("a".utf8), at: 100) == [.character("a")])
    }

    @Test func burstsAreNoise() {
        var decoder = TerminalKeyDecoder(noiseGuardMs: 3)
        #expect(decoder.receive(Array("ar".utf8), at: 100) == [])
        #expect(decoder.tick(at: 200) == [], "two keys in one read are a burst")
        #expect(decoder.receive(Array("a".utf8), at: 300) == [])
        #expect(decoder.receive(Array("r".utf8), at: 301) == [])
        #expect(decoder.tick(at: 400) == [], "a key followed within the guard is dropped, and so is the one after it")
        #expect(decoder.receive(Array("a".utf8), at: 500) == [])
        #expect(decoder.tick(at: 503) == [.character("a")], "quiet before and after")
    }

    @Test func escapeSequencesForCursorAndFunctionKeys() {
        let sequences: [(String, TerminalKey)] = [
            ("\u{1b}[A", .up), ("\u{1b}[B", .down), ("\u{1b}[C", .right), ("\u{1b}[D", .left),
            ("\u{1b}OA", .up), ("\u{1b}OP", .function(1)), ("\u{1b}OS", .function(4)),
            ("\u{1b}[11~", .function(1)), ("\u{1b}[14~", .function(4)), ("\u{1b}OM", .enter),
            ("\r", .enter), ("\n", .enter), ("\u{0c}", .redraw),
        ]
        for (text, key) in sequences {
            var decoder = TerminalKeyDecoder(noiseGuardMs: 3)
            #expect(decoder.receive(Array(text.utf8), at: 10) + decoder.tick(at: 20) == [key], "\(text.debugDescription)")
        }
    }

    @Test func brokenAndUnknownSequencesAreDropped() {
        let junk = [
            "\u{1b}[99~", "\u{1b}[1;5A", "\u{1b}x", "\u{1b}O", "\u{1b}[", "\u{1b}[12", "\u{1b}[\u{07}",
            "\u{1b}" + String(repeating: "1", count: 40) + "~", "\u{1b}\u{1b}", "\u{7f}", "\u{00}", "\t",
        ]
        for text in junk {
            var decoder = TerminalKeyDecoder(noiseGuardMs: 3)
            let keys = decoder.receive(Array(text.utf8), at: 10) + decoder.tick(at: 1000)
            #expect(keys == [], "\(text.debugDescription)")
            // The line is usable again afterwards.
            #expect(decoder.receive(Array("a".utf8), at: 2000) + decoder.tick(at: 2010) == [.character("a")], "\(text.debugDescription)")
        }
    }

    @Test func aLoneEscapeTimesOutAndTheNextKeyCounts() {
        var decoder = TerminalKeyDecoder(noiseGuardMs: 3, escapeTimeoutMs: 100)
        #expect(decoder.receive([0x1b], at: 0) == [])
        #expect(decoder.nextDeadline == 100)
        #expect(decoder.tick(at: 100) == [])
        #expect(decoder.receive(Array("a".utf8), at: 500) + decoder.tick(at: 503) == [.character("a")])
    }

    @Test func bytesOutsideASCIIAreIgnored() {
        #expect(typed([0x80, 0xff, 0xc3, 0xa8, 0x9b]) == [])
    }

    @Test func configNames() {
        #expect(TerminalKey(configName: "a") == .character("a"))
        #expect(TerminalKey(configName: "8") == .character("8"))
        #expect(TerminalKey(configName: "ENTER") == .enter)
        #expect(TerminalKey(configName: "PF3") == .function(3))
        #expect(TerminalKey(configName: "UP") == .up)
        #expect(TerminalKey(configName: "ab") == nil)
        #expect(TerminalKey(configName: " ") == nil)
        #expect(TerminalKey(configName: "è") == nil)
        #expect(TerminalKey(configName: "PF5") == nil)
        #expect(TerminalKey(configName: "") == nil)
    }

    /// Garbage at line speed (one read, or bytes 1 ms apart as at 9600 baud) never yields a key.
    @Test func randomBurstsYieldNothing() async {
        await propertyCheck(count: 500, input: Gen.int(in: 0...255).array(of: 2...300), Gen.bool()) { bytes, oneRead in
            var decoder = TerminalKeyDecoder(noiseGuardMs: 3)
            var keys: [TerminalKey] = []
            if oneRead {
                keys += decoder.receive(bytes.map { UInt8($0) }, at: 0)
            } else {
                for (index, byte) in bytes.enumerated() { keys += decoder.receive([UInt8(byte)], at: Int64(index)) }
            }
            keys += decoder.tick(at: 1_000_000)
            #expect(keys == [])
        }
    }
}
