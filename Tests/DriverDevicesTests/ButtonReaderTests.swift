import DriverDevices
import DriverKeys
import Foundation
import TestHarness
import Testing

/// Collects what a reader yields, so a test can wait for it without blocking.
final class PressCollector: @unchecked Sendable {
    private let lock = NSLock()
    private var received: [DriverPress] = []
    private var pump: Task<Void, Never>?

    init(_ presses: AsyncStream<DriverPress>) {
        pump = Task { [weak self] in
            for await press in presses { self?.lock.withLock { self?.received.append(press) } }
        }
    }

    /// What each press does, in the words its key is mapped to ("" for none).
    var inputs: [String] { lock.withLock { received.map { $0.command?.text ?? "" } } }
    var presses: [DriverPress] { lock.withLock { received } }

    func waitFor(count: Int, timeoutS: Double = 10) async throws {
        try await waitUntil("\(count) presses", timeoutS: timeoutS, detail: { "got \(self.inputs)" }) { inputs.count >= count }
    }
}

@Suite(.serialized) struct ButtonReaderTests {
    static let keys = driverCommands(["KEY_F1": "accept", "KEY_F2": "reject", "KEY_3": "pob 3", "KEY_F10": "sos"])
    static let f1 = EvdevKeyNames.code(named: "KEY_F1")!, f2 = EvdevKeyNames.code(named: "KEY_F2")!
    static let sos = EvdevKeyNames.code(named: "KEY_F10")!

    struct Rig {
        let scratch: ScratchDirectory
        let fifo: EvdevFIFO
        let reader: EvdevReader
        let collector: PressCollector
        let logs: LogRecorder
        let layout: InputEventLayout

        func send(_ code: UInt16, _ value: Int32, layout: InputEventLayout? = nil) throws {
            try fifo.send(record(code, value, layout: layout ?? self.layout))
        }

        func record(_ code: UInt16, _ value: Int32, layout: InputEventLayout) -> [UInt8] {
            // A real device sends EV_MSC and EV_SYN around every key record: they must be skipped.
            InputEventDecoder.encode(InputEventRecord(type: 4, code: 4, value: Int32(code)), layout: layout)
                + InputEventDecoder.encode(InputEventRecord(type: 1, code: code, value: value), layout: layout, seconds: Int(TestClock.seconds()), microseconds: 5)
                + InputEventDecoder.encode(InputEventRecord(type: 0, code: 0, value: 0), layout: layout)
        }

        func stop() {
            reader.stop()
        }
    }

    func rig(layout: InputEventLayout = .native) async throws -> Rig {
        let scratch = try ScratchDirectory()
        let fifo = try EvdevFIFO(path: scratch.file("event0"))
        let logs = LogRecorder()
        let reader = EvdevReader(path: fifo.path, keys: Self.keys, debounceMs: 30, holdMs: 2000, layout: layout, retryIntervalS: 0.2, logger: logs.logger)
        let collector = PressCollector(reader.presses)
        reader.start()
        try await fifo.connect()
        return Rig(scratch: scratch, fifo: fifo, reader: reader, collector: collector, logs: logs, layout: layout)
    }

    @Test(arguments: [InputEventLayout.bits64, .bits32])
    func pressAndReleaseIsOneInput(layout: InputEventLayout) async throws {
        let rig = try await rig(layout: layout)
        try rig.send(Self.f1, 1)
        try await rig.collector.waitFor(count: 1)
        try rig.send(Self.f1, 0)
        try await Task.sleep(for: .milliseconds(100))
        try rig.send(EvdevKeyNames.code(named: "KEY_3")!, 1)
        try await rig.collector.waitFor(count: 2)
        #expect(rig.collector.inputs == ["accept", "pob 3"])
        #expect(rig.collector.presses.first?.source == "button KEY_F1")
        rig.stop()
    }

    @Test func autoRepeatIsOnePress() async throws {
        let rig = try await rig()
        var bytes = rig.record(Self.f1, 1, layout: .native)
        for _ in 0..<30 { bytes += rig.record(Self.f1, 2, layout: .native) }
        try rig.fifo.send(bytes)
        try await Task.sleep(for: .milliseconds(300))
        try rig.send(Self.f1, 0)
        try rig.send(Self.f2, 1)
        try await rig.collector.waitFor(count: 2)
        #expect(rig.collector.inputs == ["accept", "reject"])
        rig.stop()
    }

    @Test func bounceIsOnePress() async throws {
        let rig = try await rig()
        try rig.fifo.send([1, 0, 1, 0, 1].flatMap { rig.record(Self.f1, $0, layout: .native) })
        try await Task.sleep(for: .milliseconds(300))
        try rig.send(Self.f1, 0)
        try await Task.sleep(for: .milliseconds(100))
        try rig.send(Self.f2, 1)
        try await rig.collector.waitFor(count: 2)
        #expect(rig.collector.inputs == ["accept", "reject"])
        rig.stop()
    }

    @Test func aRecordSplitAcrossWritesIsStillRead() async throws {
        let rig = try await rig()
        let bytes = rig.record(Self.f1, 1, layout: .native)
        try rig.fifo.send(Array(bytes.prefix(7)))
        try await Task.sleep(for: .milliseconds(50))
        try rig.fifo.send(Array(bytes.dropFirst(7)))
        try await rig.collector.waitFor(count: 1)
        #expect(rig.collector.inputs == ["accept"])
        rig.stop()
    }

    @Test func holdingTheSOSKeyRaisesSOSWhileItIsStillHeld() async throws {
        let rig = try await rig()
        let pressedAt = ContinuousClock.now
        try rig.send(Self.sos, 1)
        for _ in 0..<10 {
            try await Task.sleep(for: .milliseconds(100))
            try rig.send(Self.sos, 2)
        }
        try await rig.collector.waitFor(count: 1, timeoutS: 5)
        let heldFor = ContinuousClock.now - pressedAt
        #expect(heldFor >= .milliseconds(2000))
        #expect(rig.collector.inputs == ["sos"])
        try rig.send(Self.sos, 0)
        try await Task.sleep(for: .milliseconds(300))
        #expect(rig.collector.inputs == ["sos"], "releasing adds nothing")
        rig.stop()
    }

    @Test func aShortPressOfTheSOSKeyDoesNothing() async throws {
        let rig = try await rig()
        let pressedAt = ContinuousClock.now
        try rig.send(Self.sos, 1)
        try await Task.sleep(for: .milliseconds(500))
        try rig.send(Self.sos, 0)
        let heldFor = ContinuousClock.now - pressedAt
        // Past the hold time with the key up: still nothing. Then a normal key proves the reader is alive.
        try await Task.sleep(for: .milliseconds(2000))
        try rig.send(Self.f2, 1)
        try await rig.collector.waitFor(count: 1)
        // A machine too loaded to release the key within the hold time has really held it.
        if heldFor < .milliseconds(1900) { #expect(rig.collector.inputs == ["reject"]) }
        rig.stop()
    }

    @Test func unmappedKeysAreIgnored() async throws {
        let rig = try await rig()
        try rig.send(EvdevKeyNames.code(named: "KEY_Q")!, 1)
        try rig.send(Self.f1, 1)
        try await rig.collector.waitFor(count: 1)
        #expect(rig.collector.inputs == ["accept"])
        rig.stop()
    }

    @Test func theDeviceMayVanishAndComeBack() async throws {
        let rig = try await rig()
        try rig.send(Self.f1, 1)
        try await rig.collector.waitFor(count: 1)

        rig.fifo.remove()
        try await waitUntil("the loss logged", timeoutS: 5) { rig.logs.count(containing: "button device unavailable") == 1 }
        // Several retries pass while it is gone: still one line in the log.
        try await Task.sleep(for: .milliseconds(1000))
        #expect(rig.logs.count(containing: "button device unavailable") == 1)

        try rig.fifo.create()
        try await rig.fifo.connect()
        try await waitUntil("the return logged", timeoutS: 5) { rig.logs.count(containing: "button device is back") == 1 }
        try rig.send(Self.f2, 1)
        try await rig.collector.waitFor(count: 2)
        #expect(rig.collector.inputs == ["accept", "reject"])
        #expect(rig.logs.count(containing: "button device unavailable") == 1)
        rig.stop()
    }

    @Test func aDeviceAbsentAtStartIsWaitedFor() async throws {
        let scratch = try ScratchDirectory()
        let logs = LogRecorder()
        let path = scratch.file("event7")
        let reader = EvdevReader(path: path, keys: Self.keys, debounceMs: 30, holdMs: 2000, retryIntervalS: 0.2, logger: logs.logger)
        let collector = PressCollector(reader.presses)
        reader.start()
        try await waitUntil("the absence logged", timeoutS: 5) { logs.count(containing: "button device unavailable") == 1 }
        let fifo = try EvdevFIFO(path: path)
        try await fifo.connect()
        try fifo.send(InputEventDecoder.encode(InputEventRecord(type: 1, code: Self.f1, value: 1)))
        try await collector.waitFor(count: 1)
        #expect(collector.inputs == ["accept"])
        #expect(logs.count(containing: "button device is back") == 1)
        reader.stop()
    }

    @Test func aRegularFileIsRefused() async throws {
        let scratch = try ScratchDirectory()
        let logs = LogRecorder()
        let path = scratch.file("not-a-device")
        try Data(InputEventDecoder.encode(InputEventRecord(type: 1, code: Self.f1, value: 1))).write(to: URL(fileURLWithPath: path))
        let reader = EvdevReader(path: path, keys: Self.keys, debounceMs: 30, holdMs: 2000, retryIntervalS: 0.2, logger: logs.logger)
        let collector = PressCollector(reader.presses)
        reader.start()
        try await waitUntil("the refusal logged", timeoutS: 5) { logs.count(containing: "button device unavailable") == 1 }
        try await Task.sleep(for: .milliseconds(500))
        #expect(collector.inputs == [])
        #expect(logs.messages.joined().contains("button device unavailable"))
        reader.stop()
    }
}
