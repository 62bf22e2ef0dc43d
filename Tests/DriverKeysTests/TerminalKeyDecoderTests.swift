import DriverKeys
import PropertyBased
import Testing

/// Plays the adapter's serve loop over a decoder: between reads the loop's poll times out at every
/// deadline that comes first, and ticks (a byte that is readable at a deadline is read first).
struct Line {
    var decoder: TerminalKeyDecoder
    var inputs: [TerminalInput] = []

    init(quietUs: Int64 = TerminalKeyDecoderTests.quiet) {
        decoder = TerminalKeyDecoder(quietUs: quietUs)
    }

    var keys: [TerminalKey] { inputs.compactMap { if case .key(let key) = $0 { key } else { nil } } }
    var discarded: Int { inputs.filter { $0 == .discarded }.count }

    mutating func read(_ bytes: [UInt8], at time: Int64) {
        while let deadline = decoder.nextDeadline, deadline < time { inputs += decoder.tick(at: deadline) }
        inputs += decoder.receive(bytes, at: time)
    }

    mutating func read(_ text: String, at time: Int64) { read(Array(text.utf8), at: time) }

    /// The line stays quiet until `time`.
    mutating func quiet(until time: Int64) {
        while let deadline = decoder.nextDeadline, deadline <= time { inputs += decoder.tick(at: deadline) }
    }
}

/// Bytes no terminal key sends: control bytes other than ENTER, Ctrl-L, ESC, TAB and BS, and the
/// high half.
let noiseBytes: [UInt8] = Array(0x00...0x07) + [0x0b] + Array(0x0e...0x1a) + Array(0x1c...0x1f) + Array(0x80...0xff)

@Suite struct TerminalKeyDecoderTests {
    /// One character on an 8N1 line at 9600 baud, and the default guard of two (µs).
    static let character = TerminalKeyDecoder.quietTimeUs(characters: 1, baud: 9600)
    static let quiet = TerminalKeyDecoder.quietTimeUs(characters: 2, baud: 9600)
    var character: Int64 { Self.character }
    var quiet: Int64 { Self.quiet }

    /// Types `bytes` one at a time, `gapUs` apart, and lets the guard pass after the last one.
    func typed(_ bytes: [UInt8], gapUs: Int64 = 200_000) -> [TerminalInput] {
        var line = Line()
        var now: Int64 = 1_000_000
        for byte in bytes {
            line.read([byte], at: now)
            now += gapUs
        }
        line.quiet(until: now)
        return line.inputs
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
        #expect(decoder.tick(at: 100_000 + quiet) == [.key(.character("a"))])
        #expect(decoder.nextDeadline == nil)
        #expect(typed(Array("ar12345678".utf8)) == "ar12345678".map { .key(.character($0)) })
        // A driver typing fast still gets every key: 50 ms between presses is 25 quiet times.
        #expect(typed(Array("ar".utf8), gapUs: 50_000) == [.key(.character("a")), .key(.character("r"))])
    }

    @Test func onAFastLineTheKeyCountsSooner() {
        var decoder = TerminalKeyDecoder(quietUs: TerminalKeyDecoder.quietTimeUs(characters: 2, baud: 115_200))
        #expect(decoder.receive(Array("a".utf8), at: 0) == [])
        #expect(decoder.tick(at: 174) == [.key(.character("a"))])
    }

    @Test func withoutAGuardKeysArriveAtOnce() {
        var decoder = TerminalKeyDecoder(quietUs: 0)
        #expect(decoder.receive(Array("a".utf8), at: 100) == [.key(.character("a"))])
        #expect(decoder.receive([0x00, UInt8(ascii: "b")], at: 200) == [.discarded])
        #expect(decoder.receive(Array("cd".utf8), at: 300) == [.key(.character("c")), .key(.character("d"))])
    }

    /// A busy machine reads keys typed apart in one go; a UART's FIFO, a PTY or a USB adapter
    /// hands several over at once: every key counts, in order.
    @Test func keysReadTogetherAllCountInOrder() {
        let login = "lD-0417\r2468\r"
        var line = Line()
        line.read(login, at: 1_000_000)
        line.quiet(until: 2_000_000)
        #expect(line.inputs == [.key(.character("l")), .key(.character("D")), .key(.character("-")), .key(.character("0")),
                                .key(.character("4")), .key(.character("1")), .key(.character("7")), .key(.enter),
                                .key(.character("2")), .key(.character("4")), .key(.character("6")), .key(.character("8")), .key(.enter)])
        // Eight keys in one write, and keys with their escape sequences in the same read.
        var eight = Line()
        eight.read("ar12\u{1b}[A34\u{1b}OP", at: 0)
        eight.quiet(until: 1_000_000)
        #expect(eight.inputs == [.key(.character("a")), .key(.character("r")), .key(.character("1")), .key(.character("2")), .key(.up),
                                 .key(.character("3")), .key(.character("4")), .key(.function(1))])
        // Keys typed 50 ms apart, read in twos and threes whenever the thread gets to them.
        var late = Line()
        late.read("D-0", at: 0)
        late.read("41", at: 150_000)
        late.read("7\r", at: 400_000)
        late.quiet(until: 1_000_000)
        #expect(late.keys == "D-0417".map { .character($0) } + [.enter])
    }

    @Test func aBurstWithABytesNoKeySendsIsDiscardedWhole() {
        var decoder = TerminalKeyDecoder(quietUs: quiet)
        #expect(decoder.receive(Array("ar".utf8) + [0x00], at: 100_000) == [])
        #expect(decoder.tick(at: 200_000) == [.discarded], "keys inside a noisy burst are dropped with it")
        #expect(decoder.receive(Array("a".utf8), at: 300_000) == [])
        #expect(decoder.receive([0x9b], at: 300_000 + character) == [])
        #expect(decoder.tick(at: 400_000) == [.discarded], "a key followed within the guard by noise is dropped with it")
        #expect(decoder.receive(Array("a".utf8), at: 500_000) == [])
        #expect(decoder.tick(at: 500_000 + quiet) == [.key(.character("a"))], "the next burst is judged on its own")
    }

    @Test func moreKeysInOneBurstThanADriverTypesAheadIsNoise() {
        let most = String(repeating: "1", count: TerminalKeyDecoder.maximumBurstKeys)
        var line = Line()
        line.read(most, at: 0)
        line.quiet(until: 1_000_000)
        #expect(line.keys.count == TerminalKeyDecoder.maximumBurstKeys && line.discarded == 0)
        line.read(most + "1", at: 2_000_000)
        line.quiet(until: 3_000_000)
        #expect(line.keys.count == TerminalKeyDecoder.maximumBurstKeys && line.discarded == 1)
    }

    @Test func aKeyInsideABurstDoesNothing() {
        var line = Line()
        // Garbage back to back at 9600 baud with mapped keys in the middle of it, one byte per read
        // as a UART without a FIFO delivers them.
        let burst: [UInt8] = [0x00, 0x9b, UInt8(ascii: "a"), 0xff, UInt8(ascii: "r"), 0x07, 0x80]
        for (index, byte) in burst.enumerated() { line.read([byte], at: 1_000_000 + Int64(index) * character) }
        line.quiet(until: 2_000_000)
        #expect(line.inputs == [.discarded])
        // The same in one read, as a PTY, a UART's FIFO or a USB adapter hands it over.
        line.read(burst, at: 3_000_000)
        line.quiet(until: 4_000_000)
        #expect(line.inputs == [.discarded, .discarded])
    }

    @Test func aKeyThatStartsABurstDoesNothing() {
        var line = Line()
        // The first byte of a burst arrives alone after silence: only the next one, a character
        // time later, shows it was noise.
        line.read("a", at: 1_000_000)
        line.read([0x00], at: 1_000_000 + character)
        line.quiet(until: 2_000_000)
        #expect(line.inputs == [.discarded])
        // Even when the adapter's thread only gets to read the next byte long after the guard.
        var late = TerminalKeyDecoder(quietUs: quiet)
        #expect(late.receive(Array("a".utf8), at: 0) == [])
        #expect(late.receive([0x00], at: 50_000) == [], "no tick in between: the line was never seen quiet after the key")
        #expect(late.tick(at: 100_000) == [.discarded])
    }

    @Test func aKeyRightAfterABurstDoesNothingUntilTheLineIsQuiet() {
        var line = Line()
        let burstEnd: Int64 = 1_000_000 + 99 * character
        for index in 0..<100 { line.read([UInt8(truncatingIfNeeded: index * 37)], at: 1_000_000 + Int64(index) * character) }
        line.read("a", at: burstEnd + character)
        line.quiet(until: burstEnd + 100_000)
        #expect(line.inputs == [.discarded], "one character time after the burst")
        for index in 0..<100 { line.read([UInt8(truncatingIfNeeded: index * 37)], at: 2_000_000 + Int64(index) * character) }
        line.read("a", at: 2_000_000 + 99 * character + quiet - 1)
        line.quiet(until: 3_000_000)
        #expect(line.inputs == [.discarded, .discarded], "just inside the quiet time after the burst")
        for index in 0..<100 { line.read([UInt8(truncatingIfNeeded: index * 37)], at: 4_000_000 + Int64(index) * character) }
        // A byte readable at the deadline is read before the poll can time out, so it takes a little
        // more than the guard's time for the line to be seen quiet.
        line.read("a", at: 4_000_000 + 99 * character + quiet + 1)
        line.quiet(until: 5_000_000)
        #expect(line.inputs == [.discarded, .discarded, .discarded, .key(.character("a"))], "the line was seen quiet for the guard's time: the key counts")
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
            #expect(decoder.receive(Array(text.utf8), at: 10) + decoder.tick(at: 10 + quiet) == [.key(key)], "\(text.debugDescription)")
        }
    }

    @Test func unknownSequencesAndUnusedKeysAreIgnoredAndBrokenSequencesAreNoise() {
        // Whole sequences of keys the unit does not use, and keys without a use.
        let ignored = ["\u{1b}[99~", "\u{1b}[1;5A", "\u{1b}x", "\u{1b}\u{1b}", "\u{1b}", "\u{7f}", "\u{08}", "\t", " "]
        // What no key sends: sequences cut short or broken by a control byte, over-long ones, NUL.
        let broken = ["\u{1b}O", "\u{1b}[", "\u{1b}[12", "\u{1b}[\u{07}", "\u{1b}" + "[" + String(repeating: "1", count: 40) + "~", "\u{00}", "\u{1b}\u{07}"]
        for (text, expected) in ignored.map({ ($0, [TerminalInput]()) }) + broken.map({ ($0, [TerminalInput.discarded]) }) {
            var line = Line()
            line.read(text, at: 10)
            line.quiet(until: 1_000_000)
            #expect(line.inputs == expected, "\(text.debugDescription)")
            // The line is usable again afterwards.
            line.read("a", at: 2_000_000)
            line.quiet(until: 3_000_000)
            #expect(line.inputs == expected + [.key(.character("a"))], "\(text.debugDescription)")
        }
    }

    @Test func aLoneEscapeTimesOutAndTheNextKeyCounts() {
        var decoder = TerminalKeyDecoder(quietUs: quiet, escapeTimeoutUs: 100_000)
        #expect(decoder.receive([0x1b], at: 0) == [])
        #expect(decoder.nextDeadline == 100_000)
        #expect(decoder.tick(at: 100_000) == [])
        #expect(decoder.nextDeadline == nil)
        #expect(decoder.receive(Array("a".utf8), at: 500_000) + decoder.tick(at: 500_000 + quiet) == [.key(.character("a"))])
    }

    @Test func bytesOutsideASCIIAreNoise() {
        #expect(typed([0x80, 0xff, 0xc3, 0xa8, 0x9b]) == Array(repeating: .discarded, count: 5))
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

    /// A burst at line speed (one read, or one byte per read 1 ms apart as at 9600 baud) that holds
    /// a byte no key sends never yields a key, and is reported once.
    @Test func noisyBurstsYieldNoKey() async {
        await propertyCheck(count: 500, input: Gen.int(in: 0...255).array(of: 0...300), Gen.int(in: 0...(noiseBytes.count - 1)), Gen.bool()) { bytes, noise, oneRead in
            var burst = bytes.map { UInt8($0) }
            burst.insert(noiseBytes[noise], at: bytes.isEmpty ? 0 : noise % (bytes.count + 1))
            var line = Line()
            if oneRead {
                line.read(burst, at: 0)
            } else {
                for (index, byte) in burst.enumerated() { line.read([byte], at: Int64(index) * 1000) }
            }
            line.quiet(until: 1_000_000_000)
            #expect(line.inputs == [.discarded])
        }
    }

    /// Noise read in pieces of random size, each arriving up to (not including) the quiet time after
    /// the one before, with the serve loop ticking at every deadline in between, never yields a key.
    @Test func noisyBurstsInPiecesYieldNoKey() async {
        let pieces = zip(Gen.int(in: 0...255).array(of: 1...8), Gen.int(in: 1...Int(Self.quiet - 1)))
        await propertyCheck(count: 500, input: pieces.array(of: 2...100), Gen.int(in: 0...(noiseBytes.count - 1))) { pieces, noise in
            var line = Line()
            var now: Int64 = 1_000_000
            for (index, (bytes, gap)) in pieces.enumerated() {
                line.read(bytes.map { UInt8($0) } + (index == noise % pieces.count ? [noiseBytes[noise]] : []), at: now)
                now += Int64(gap)
            }
            line.quiet(until: now + 1_000_000)
            #expect(line.inputs == [.discarded])
        }
    }

    /// Printable keys typed ahead, read in pieces of any size at any time: every one counts, in order.
    @Test func typedKeysAllCountHoweverTheyAreRead() async {
        let pieces = zip(Gen.int(in: 0x21...0x7e).array(of: 1...8), Gen.int(in: 1...200_000))
        await propertyCheck(count: 500, input: pieces.array(of: 1...4)) { pieces in
            var line = Line()
            var now: Int64 = 1_000_000
            for (bytes, gap) in pieces {
                line.read(bytes.map { UInt8($0) }, at: now)
                now += Int64(gap)
            }
            line.quiet(until: now + 1_000_000)
            #expect(line.keys == pieces.flatMap { $0.0 }.map { .character(Character(Unicode.Scalar(UInt8($0)))) })
        }
    }
}
