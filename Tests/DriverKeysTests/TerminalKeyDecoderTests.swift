import DriverKeys
import PropertyBased
import Testing

/// Plays the adapter's serve loop over a decoder: between reads the loop's poll times out at every
/// deadline that comes first, and ticks (a byte that is readable at a deadline is read first).
struct Line {
    var decoder: TerminalKeyDecoder
    var keys: [TerminalKey] = []

    init(quietUs: Int64 = TerminalKeyDecoderTests.quiet) {
        decoder = TerminalKeyDecoder(quietUs: quietUs)
    }

    mutating func read(_ bytes: [UInt8], at time: Int64) {
        while let deadline = decoder.nextDeadline, deadline < time { keys += decoder.tick(at: deadline) }
        keys += decoder.receive(bytes, at: time)
    }

    mutating func read(_ text: String, at time: Int64) { read(Array(text.utf8), at: time) }

    /// The line stays quiet until `time`.
    mutating func quiet(until time: Int64) {
        while let deadline = decoder.nextDeadline, deadline <= time { keys += decoder.tick(at: deadline) }
    }
}

@Suite struct TerminalKeyDecoderTests {
    /// One character on an 8N1 line at 9600 baud, and the default guard of two (µs).
    static let character = TerminalKeyDecoder.quietTimeUs(characters: 1, baud: 9600)
    static let quiet = TerminalKeyDecoder.quietTimeUs(characters: 2, baud: 9600)
    var character: Int64 { Self.character }
    var quiet: Int64 { Self.quiet }

    /// Types `bytes` one at a time, `gapUs` apart, and lets the guard pass after the last one.
    func typed(_ bytes: [UInt8], gapUs: Int64 = 200_000) -> [TerminalKey] {
        var line = Line()
        var now: Int64 = 1_000_000
        for byte in bytes {
            line.read([byte], at: now)
            now += gapUs
        }
        line.quiet(until: now)
        return line.keys
    }

    @Test func theQuietTimeIsTwoCharacterTimesAtTheLineSpeed() {
        #expect(character == 1042)
        #expect(quiet == 2084, "2.1 ms at 9600 baud")
        #expect(TerminalKeyDecoder.quietTimeUs(characters: 2, baud: 115_200) == 174)
        #expect(TerminalKeyDecoder.quietTimeUs(characters: 3, baud: 1200) == 25_000)
        #expect(TerminalKeyDecoder.quietTimeUs(characters: 0, baud: 9600) == 0)
    }

    @Test func aLoneKeyCountsTwoCharacterTimesAfterItArrived() {
        var decoder = TerminalKeyDecoder(quietUs: quiet)
        #expect(decoder.receive(Array("a".utf8), at: 100_000) == [])
        #expect(decoder.nextDeadline == 100_000 + quiet)
        #expect(decoder.tick(at: 100_000 + quiet - 1) == [])
        #expect(decoder.tick(at: 100_000 + quiet) == [.character("a")])
        #expect(decoder.nextDeadline == nil)
        #expect(typed(Array("ar12345678".utf8)) == "ar12345678".map { .character($0) })
        // A driver typing fast still gets every key: 50 ms between presses is 25 quiet times.
        #expect(typed(Array("ar".utf8), gapUs: 50_000) == [.character("a"), .character("r")])
    }

    @Test func onAFastLineTheKeyCountsSooner() {
        var decoder = TerminalKeyDecoder(quietUs: TerminalKeyDecoder.quietTimeUs(characters: 2, baud: 115_200))
        #expect(decoder.receive(Array("a".utf8), at: 0) == [])
        #expect(decoder.tick(at: 174) == [.character("a")])
    }

    @Test func withoutAGuardKeysArriveAtOnce() {
        var decoder = TerminalKeyDecoder(quietUs: 0)
        #expect(decoder.receive(Array("a".utf8), at: 100) == [.character("a")])
    }

    @Test func burstsAreNoise() {
        var decoder = TerminalKeyDecoder(quietUs: quiet)
        #expect(decoder.receive(Array("ar".utf8), at: 100_000) == [])
        #expect(decoder.tick(at: 200_000) == [], "two keys in one read are a burst")
        #expect(decoder.receive(Array("a".utf8), at: 300_000) == [])
        #expect(decoder.receive(Array("r".utf8), at: 300_000 + character) == [])
        #expect(decoder.tick(at: 400_000) == [], "a key followed within the guard is dropped, and so is the one after it")
        #expect(decoder.receive(Array("a".utf8), at: 500_000) == [])
        #expect(decoder.tick(at: 500_000 + quiet) == [.character("a")], "quiet before and after")
    }

    @Test func aKeyInsideABurstDoesNothing() {
        var line = Line()
        // Garbage back to back at 9600 baud with mapped keys in the middle of it, one byte per read
        // as a UART without a FIFO delivers them.
        let burst: [UInt8] = [0x00, 0x9b, UInt8(ascii: "a"), 0xff, UInt8(ascii: "r"), 0x07, 0x80]
        for (index, byte) in burst.enumerated() { line.read([byte], at: 1_000_000 + Int64(index) * character) }
        line.quiet(until: 2_000_000)
        #expect(line.keys == [])
        // The same in one read, as a PTY, a UART's FIFO or a USB adapter hands it over.
        line.read(burst, at: 3_000_000)
        line.quiet(until: 4_000_000)
        #expect(line.keys == [])
    }

    @Test func aKeyThatStartsABurstDoesNothing() {
        var line = Line()
        // The first byte of a burst arrives alone after silence: only the next one, a character
        // time later, shows it was noise.
        line.read("a", at: 1_000_000)
        line.read([0x00], at: 1_000_000 + character)
        line.quiet(until: 2_000_000)
        #expect(line.keys == [])
        // Even when the adapter's thread only gets to read the next byte long after the guard.
        var late = TerminalKeyDecoder(quietUs: quiet)
        #expect(late.receive(Array("a".utf8), at: 0) == [])
        #expect(late.receive([0x00], at: 50_000) == [], "no tick in between: the line was never seen quiet after the key")
        #expect(late.tick(at: 100_000) == [])
    }

    @Test func aKeyRightAfterABurstDoesNothingUntilTheLineIsQuiet() {
        var line = Line()
        let burstEnd: Int64 = 1_000_000 + 99 * character
        for index in 0..<100 { line.read([UInt8(truncatingIfNeeded: index * 37)], at: 1_000_000 + Int64(index) * character) }
        line.read("a", at: burstEnd + character)
        line.quiet(until: burstEnd + 100_000)
        #expect(line.keys == [], "one character time after the burst")
        for index in 0..<100 { line.read([UInt8(truncatingIfNeeded: index * 37)], at: 2_000_000 + Int64(index) * character) }
        line.read("a", at: 2_000_000 + 99 * character + quiet - 1)
        line.quiet(until: 3_000_000)
        #expect(line.keys == [], "just inside the quiet time after the burst")
        for index in 0..<100 { line.read([UInt8(truncatingIfNeeded: index * 37)], at: 4_000_000 + Int64(index) * character) }
        line.read("a", at: 4_000_000 + 99 * character + quiet)
        line.quiet(until: 5_000_000)
        #expect(line.keys == [.character("a")], "the line was quiet for the guard's time: the key counts")
    }

    @Test func escapeSequencesForCursorAndFunctionKeys() {
        let sequences: [(String, TerminalKey)] = [
            ("\u{1b}[A", .up), ("\u{1b}[B", .down), ("\u{1b}[C", .right), ("\u{1b}[D", .left),
            ("\u{1b}OA", .up), ("\u{1b}OP", .function(1)), ("\u{1b}OS", .function(4)),
            ("\u{1b}[11~", .function(1)), ("\u{1b}[14~", .function(4)), ("\u{1b}OM", .enter),
            ("\r", .enter), ("\n", .enter), ("\u{0c}", .redraw),
        ]
        for (text, key) in sequences {
            var decoder = TerminalKeyDecoder(quietUs: quiet)
            #expect(decoder.receive(Array(text.utf8), at: 10) + decoder.tick(at: 10 + quiet) == [key], "\(text.debugDescription)")
        }
    }

    @Test func brokenAndUnknownSequencesAreDropped() {
        let junk = [
            "\u{1b}[99~", "\u{1b}[1;5A", "\u{1b}x", "\u{1b}O", "\u{1b}[", "\u{1b}[12", "\u{1b}[\u{07}",
            "\u{1b}" + String(repeating: "1", count: 40) + "~", "\u{1b}\u{1b}", "\u{7f}", "\u{00}", "\t",
        ]
        for text in junk {
            var decoder = TerminalKeyDecoder(quietUs: quiet)
            let keys = decoder.receive(Array(text.utf8), at: 10) + decoder.tick(at: 1_000_000)
            #expect(keys == [], "\(text.debugDescription)")
            // The line is usable again afterwards.
            #expect(decoder.receive(Array("a".utf8), at: 2_000_000) + decoder.tick(at: 2_000_000 + quiet) == [.character("a")], "\(text.debugDescription)")
        }
    }

    @Test func aLoneEscapeTimesOutAndTheNextKeyCounts() {
        var decoder = TerminalKeyDecoder(quietUs: quiet, escapeTimeoutUs: 100_000)
        #expect(decoder.receive([0x1b], at: 0) == [])
        #expect(decoder.nextDeadline == 100_000)
        #expect(decoder.tick(at: 100_000) == [])
        #expect(decoder.receive(Array("a".utf8), at: 500_000) + decoder.tick(at: 500_000 + quiet) == [.character("a")])
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

    /// Garbage at line speed (one read, or one byte per read 1 ms apart as at 9600 baud) never
    /// yields a key.
    @Test func randomBurstsYieldNothing() async {
        await propertyCheck(count: 500, input: Gen.int(in: 0...255).array(of: 2...300), Gen.bool()) { bytes, oneRead in
            var line = Line()
            if oneRead {
                line.read(bytes.map { UInt8($0) }, at: 0)
            } else {
                for (index, byte) in bytes.enumerated() { line.read([UInt8(byte)], at: Int64(index) * 1000) }
            }
            line.quiet(until: 1_000_000_000)
            #expect(line.keys == [])
        }
    }

    /// Garbage read in pieces of random size, each arriving up to (not including) the quiet time
    /// after the one before, with the serve loop ticking at every deadline in between, never yields
    /// a key.
    @Test func randomBurstsInPiecesYieldNothing() async {
        let pieces = zip(Gen.int(in: 0...255).array(of: 1...8), Gen.int(in: 1...Int(Self.quiet - 1)))
        await propertyCheck(count: 500, input: pieces.array(of: 2...100)) { pieces in
            var line = Line()
            var now: Int64 = 1_000_000
            for (bytes, gap) in pieces {
                line.read(bytes.map { UInt8($0) }, at: now)
                now += Int64(gap)
            }
            line.quiet(until: now + 1_000_000)
            #expect(line.keys == [])
        }
    }
}
