import DriverDevices
import DriverKeys
import Foundation
import TestHarness
import Testing

/// The badge reader on a FIFO standing in for its evdev device: what a USB reader types.
@Suite(.serialized) struct BadgeReaderTests {
    /// Key down and up for each of `keys` (names without `KEY_`), framed as a real keyboard frames them.
    static func typed(_ keys: [String]) -> [UInt8] {
        keys.flatMap { key -> [UInt8] in
            let code = EvdevKeyNames.code(named: "KEY_" + key)!
            return [1, 0].flatMap { value -> [UInt8] in
                InputEventDecoder.encode(InputEventRecord(type: 4, code: 4, value: Int32(code)))
                    + InputEventDecoder.encode(InputEventRecord(type: 1, code: code, value: value))
                    + InputEventDecoder.encode(InputEventRecord(type: 0, code: 0, value: 0))
            }
        }
    }

    @Test func aTypedBadgeIsOneReadAndAnInterruptedOneIsDropped() async throws {
        let scratch = try ScratchDirectory()
        let logs = LogRecorder()
        let path = scratch.file("event3")
        let reader = EvdevReader(badgeReader: path, retryIntervalS: 0.2, logger: logs.logger)
        let collector = PressCollector(reader.presses)
        reader.start()
        // Absent at first, like the buttons: waited for.
        try await waitUntil("the absence logged", timeoutS: 5) { logs.count(containing: "badge reader unavailable") == 1 }
        let fifo = try EvdevFIFO(path: path)
        try await fifo.connect()
        try fifo.send(Self.typed(["0", "0", "4", "2", "KP7", "A", "ENTER"]))
        try await collector.waitFor(count: 1)
        #expect(collector.presses == [DriverPress(command: nil, source: "badge reader", badge: "00427A")])

        // Half a badge, a pause, then another whole one: the half is dropped, not prefixed.
        try fifo.send(Self.typed(["9", "9"]))
        try await waitUntil("the drop logged", timeoutS: 5) { logs.count(containing: "badge read dropped: interrupted") == 1 }
        try fifo.send(Self.typed(["5", "1", "KPENTER"]))
        try await collector.waitFor(count: 2)
        #expect(collector.presses.map(\.badge) == ["00427A", "51"])
        #expect(!logs.messages.joined().contains("00427A"), "a badge number is never logged")
        reader.stop()
    }
}
