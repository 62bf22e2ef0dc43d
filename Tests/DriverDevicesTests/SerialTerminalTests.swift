import DriverDevices
import DriverDisplay
import Foundation
import TaxiProtocol
import TestHarness
import Testing

let catalogueDirectory = Corpus.packageRoot + "/share/taxiunitd/lang"

/// The serial adapter on a real PTY pair made by socat: the test is the terminal.
@Suite(.serialized) struct SerialTerminalTests {
    static let keys = driverCommands(["a": "accept", "r": "reject", "2": "pob 2", "PF1": "accept", "ENTER": "pob"])

    struct Rig {
        let scratch: ScratchDirectory
        let pair: SerialPair
        let screen: TerminalScreen
        let terminal: SerialTerminal
        let collector: PressCollector
        let logs: LogRecorder

        func stop() {
            terminal.stop()
        }
    }

    func rig(language: String = "en") async throws -> Rig {
        let scratch = try ScratchDirectory()
        let pair = try await SerialPair(in: scratch)
        let logs = LogRecorder()
        let renderer = ScreenRenderer(
            catalogue: try MessageCatalogue.load(language: language, directory: catalogueDirectory),
            size: ScreenSize(columns: 20, rows: 4), keyLabels: ["accept": "a", "reject": "r"])
        let terminal = SerialTerminal(
            path: pair.unitPath, baud: 9600, keys: Self.keys, noiseGuardCharacters: 2,
            presenter: TerminalPresenter(renderer: renderer, charset: .ascii), retryIntervalS: 0.2, logger: logs.logger)
        let collector = PressCollector(terminal.presses)
        terminal.start()
        return Rig(scratch: scratch, pair: pair, screen: TerminalScreen(pair: pair), terminal: terminal, collector: collector, logs: logs)
    }

    @Test func theUnitDrawsItsViewAndKeysBecomeInputs() async throws {
        let rig = try await rig()
        rig.terminal.show(DriverView(mode: .available, zone: "Z1", seatsLeft: 4, online: true))
        try await rig.screen.waitFor("the available screen") { $0.rows == ["AVAILABLE           ", "Zone Z1             ", "Free seats 4        ", "Online              "] }
        try await rig.screen.press("a")
        try await rig.screen.press("2")
        try await rig.screen.press("\u{1b}OP")
        try await rig.screen.press("\r")
        try await rig.collector.waitFor(count: 4)
        #expect(rig.collector.inputs == ["accept", "pob 2", "accept", "pob"])
        #expect(rig.collector.presses.first?.source == "terminal a")
        rig.stop()
    }

    @Test func anOfferCountsDownRingsAndBlinks() async throws {
        let rig = try await rig()
        let deadline = TestClock.now() + .seconds(5)
        let pickup = DriverView.Pickup(address: "Via Roma 12", distanceM: 350, passengers: 2, meetingTime: nil)
        rig.terminal.show(DriverView(mode: .offered(pickup, deadline: deadline), online: true))
        let first = try await rig.screen.waitFor("the offer") { $0.rows[0].hasPrefix("NEW JOB") }
        #expect(first.bells == 1)
        #expect(first.blinking[0].allSatisfy { $0 })
        #expect(first.rows[1] == "Via Roma 12         ")
        #expect(first.rows[2] == "350 m  2 pax        ")
        var seen: [String] = []
        try await rig.screen.waitFor("the countdown to reach 0", timeoutS: 10) { screen in
            let seconds = String(screen.rows[0].suffix(3)).trimmingCharacters(in: .whitespaces)
            if seen.last != seconds { seen.append(seconds) }
            return seconds == "0s"
        }
        #expect(seen.count >= 4, "one redraw per second: \(seen)")
        #expect(seen == seen.sorted { Int($0.dropLast())! > Int($1.dropLast())! }, "counting down: \(seen)")
        rig.stop()
    }

    /// Noise is dropped whole and said once per burst; whole sequences of unused keys are ignored
    /// and the keys around them count.
    @Test func tenThousandGarbageBytesAreOneBurstOfNoise() async throws {
        let rig = try await rig()
        rig.terminal.show(DriverView(mode: .available, zone: "Z1", seatsLeft: 4, online: true))
        let before = try await rig.screen.waitFor("the screen") { $0.rows[0].hasPrefix("AVAILABLE") }
        var generator = SystemRandomNumberGenerator()
        let garbage = (0..<10_000).map { _ in UInt8.random(in: 0...255, using: &generator) }
        try await rig.pair.type(garbage + [0x00])
        try await rig.collector.waitFor(count: 1)
        // Broken sequences, each in a burst of its own, then whole ones and keys.
        for junk in ["\u{1b}[", "\u{1b}[99", "\u{1b}O", "\u{1b}\u{1b}[A\u{1b}", "a\u{1b}[1;5A", "ar"] {
            try await rig.pair.type(Array(junk.utf8))
            try await Task.sleep(for: .milliseconds(150))
        }
        try await rig.collector.waitFor(count: 7)
        try await Task.sleep(for: .milliseconds(300))
        let noise = DriverPress(command: nil, source: "terminal noise", discarded: true)
        #expect(rig.collector.presses.prefix(4) == [noise, noise, noise, noise])
        #expect(rig.collector.inputs.dropFirst(4) == ["accept", "accept", "reject"])
        #expect(rig.screen.rows == before.rows)
        rig.stop()
    }

    /// On the real PTY: a burst that holds a mapped key among noise is dropped whole; the same key
    /// alone on the line afterwards counts.
    @Test func aKeyInABurstOfNoiseIsDroppedWithIt() async throws {
        let rig = try await rig()
        rig.terminal.show(DriverView(mode: .available, zone: "Z1", seatsLeft: 4, online: true))
        try await rig.screen.waitFor("the screen") { $0.rows[0].hasPrefix("AVAILABLE") }
        try await rig.pair.type([0x00, 0x9b, 0xff, 0x07] + Array("a".utf8))
        try await Task.sleep(for: .milliseconds(150))
        try await rig.pair.type([0x80] + Array("r".utf8) + [0xfe, 0x01])
        try await rig.collector.waitFor(count: 2)
        try await Task.sleep(for: .milliseconds(300))
        #expect(rig.collector.presses.map(\.discarded) == [true, true])
        try await rig.screen.press("a")
        try await rig.collector.waitFor(count: 3)
        #expect(rig.collector.inputs == ["", "", "accept"])
        rig.stop()
    }

    @Test func ctrlLRepaintsTheWholeScreen() async throws {
        let rig = try await rig()
        rig.terminal.show(DriverView(mode: .available, zone: "Z1", seatsLeft: 4, online: true))
        try await rig.screen.waitFor("the screen") { $0.rows[0].hasPrefix("AVAILABLE") }
        try await rig.pair.type([0x0c])
        var bytes: [UInt8] = []
        try await waitUntil("a full repaint", timeoutS: 5) {
            bytes += rig.pair.received()
            return String(decoding: bytes, as: UTF8.self).contains("Online")
        }
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(text.hasPrefix("\u{1b}[0m\u{1b}[2J"))
        for row in ["AVAILABLE", "Zone Z1", "Free seats 4", "Online"] { #expect(text.contains(row)) }
        #expect(rig.collector.inputs == [], "Ctrl-L is not a driver input")
        rig.stop()
    }

    @Test func aLanguageChangeRedrawsInTheNewLanguage() async throws {
        let rig = try await rig()
        rig.terminal.show(DriverView(mode: .available, zone: "Z1", seatsLeft: 4, online: true))
        try await rig.screen.waitFor("English") { $0.rows[0].hasPrefix("AVAILABLE") }
        rig.terminal.setCatalogue(try MessageCatalogue.load(language: "zu", directory: catalogueDirectory))
        try await rig.screen.waitFor("isiZulu") { $0.rows == ["NGIYATHOLAKALA      ", "Indawo Z1           ", "Izihlalo 4          ", "Ixhunyiwe           "] }
        rig.stop()
    }

    @Test func thePortMayVanishAndComeBack() async throws {
        let rig = try await rig()
        rig.terminal.show(DriverView(mode: .available, zone: "Z1", seatsLeft: 4, online: true))
        try await rig.screen.waitFor("the screen") { $0.rows[0].hasPrefix("AVAILABLE") }
        rig.pair.stop()
        try await waitUntil("the loss logged", timeoutS: 5, detail: { rig.logs.messages.joined(separator: "\n") }) {
            rig.logs.count(containing: "serial terminal lost") == 1
        }
        try await Task.sleep(for: .milliseconds(800))
        #expect(rig.logs.count(containing: "serial terminal lost") + rig.logs.count(containing: "serial terminal unavailable") == 1, "\(rig.logs.messages)")
        try await rig.pair.start()
        let fresh = TerminalScreen(pair: rig.pair)
        try await fresh.waitFor("the whole screen again on the new line") { $0.rows[0].hasPrefix("AVAILABLE") && $0.rows[3].hasPrefix("Online") }
        #expect(rig.logs.count(containing: "serial terminal is back") == 1)
        try await fresh.press("a")
        try await rig.collector.waitFor(count: 1)
        #expect(rig.collector.inputs == ["accept"])
        rig.stop()
    }
}
