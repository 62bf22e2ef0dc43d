import DriverKeys
import Foundation
import FoundationEssentials
import Logging
import Platform
import UnitCore

/// The evdev adapter: reads `struct input_event` records from `/dev/input/...` (or a FIFO in tests)
/// on its own thread, grabbed so that the keys reach nothing else. For the driver's buttons it turns
/// debounced key presses into `DriverPress`es; for a badge reader, typed badge numbers into
/// `DriverPress.badge`. Its system calls are in `DeviceLine`.
public final class EvdevReader: BackgroundAdapter {
    public let presses: AsyncStream<DriverPress>
    private let sink: AsyncStream<DriverPress>.Continuation
    private let line: DeviceLine
    private let layout: InputEventLayout
    private let interpreter: @Sendable () -> any KeyInterpreter

    /// The driver's buttons. `keys`: key name (`KEY_F1` or a decimal code) → what it does; names
    /// must be valid (`EvdevKeyNames`).
    public convenience init(
        path: String, keys: [String: DriverCommand], debounceMs: Int, holdMs: Int, layout: InputEventLayout = .native,
        retryIntervalS: Double = 3, logger: Logger
    ) {
        var commands: [UInt16: (String, DriverCommand)] = [:]
        for (name, command) in keys {
            if let code = EvdevKeyNames.code(named: name) { commands[code] = (name, command) }
        }
        let keys = ButtonKeys(commandsByCode: commands, debounceMs: Int64(debounceMs), holdMs: Int64(holdMs))
        self.init(path: path, role: "button device", threadName: "buttons", layout: layout, retryIntervalS: retryIntervalS, logger: logger) { keys }
    }

    /// A badge or key-fob reader that types the badge number and ENTER (`BadgeSequence`).
    public convenience init(badgeReader path: String, layout: InputEventLayout = .native, retryIntervalS: Double = 3, logger: Logger) {
        self.init(path: path, role: "badge reader", threadName: "badge", layout: layout, retryIntervalS: retryIntervalS, logger: logger) {
            BadgeKeys(logger: logger)
        }
    }

    /// The ignition line (`[input.ignition]`): its state when the device opens, then every change.
    public convenience init(ignition path: String, signal: IgnitionSignal, layout: InputEventLayout = .native, retryIntervalS: Double = 3, logger: Logger) {
        self.init(path: path, role: "ignition input", threadName: "ignition", layout: layout, retryIntervalS: retryIntervalS, logger: logger) {
            IgnitionKeys(signal: signal)
        }
    }

    /// The taximeter's hired/vacant line (`[input.meter]` with a `device`): hired while the signal
    /// is set. Its state when the device opens, then every change.
    public convenience init(meter path: String, signal: IgnitionSignal, layout: InputEventLayout = .native, retryIntervalS: Double = 3, logger: Logger) {
        self.init(path: path, role: "meter input", threadName: "meter", layout: layout, retryIntervalS: retryIntervalS, logger: logger) {
            MeterKeys(signal: signal)
        }
    }

    private init(
        path: String, role: String, threadName: String, layout: InputEventLayout, retryIntervalS: Double, logger: Logger,
        interpreter: @escaping @Sendable () -> any KeyInterpreter
    ) {
        self.layout = layout
        self.interpreter = interpreter
        line = DeviceLine(path: path, role: role, threadName: threadName, retryIntervalS: retryIntervalS, logger: logger)
        (presses, sink) = AsyncStream.makeStream(of: DriverPress.self, bufferingPolicy: .bufferingNewest(256))
    }

    /// Starts the reader thread; it opens the device, or keeps trying.
    public func start() {
        line.start(open: Self.open, serve: serve)
    }

    /// Returns once the thread has closed the device; `presses` then ends.
    public func stop() {
        line.stop()
        sink.finish()
    }

    private static func open(_ path: String) -> Result<Int32, DeviceError> {
        DeviceLine.openInputDevice(path)
    }

    /// Each (re)opened device starts with a fresh interpreter: what was held or half typed is gone.
    private func serve(_ fd: Int32) -> DeviceLine.Served {
        var decoder = InputEventDecoder(layout: layout)
        var keys = interpreter()
        for press in keys.opened(fd) { sink.yield(press) }
        var buffer = [UInt8](repeating: 0, count: layout.recordSize * 64)
        while !line.stopping {
            let now = Monotonic.milliseconds()
            let timeout = keys.nextDeadline.map { Int(clamping: max(0, $0 - now)) } ?? 1000
            switch line.wait(fd: fd, timeoutMs: timeout) {
            case .failed(let reason): return .lost(reason)
            case .woken, .timedOut: break
            case .readable:
                switch DeviceLine.read(fd, into: &buffer) {
                case .failed(let reason): return .lost(reason)
                case .end: return .ended
                case .nothingYet: break
                case .bytes(let count):
                    let at = Monotonic.milliseconds()
                    for record in decoder.decode(buffer[..<count]) {
                        for press in keys.record(record, at: at) { sink.yield(press) }
                    }
                }
            }
            for press in keys.tick(at: Monotonic.milliseconds()) { sink.yield(press) }
        }
        return .stopped
    }
}

/// What a reader makes of its device's key changes (the pure work is in DriverKeys).
protocol KeyInterpreter: Sendable {
    var nextDeadline: Int64? { get }
    /// The device was (re)opened as `fd`: what it says before any event.
    mutating func opened(_ fd: Int32) -> [DriverPress]
    mutating func record(_ record: InputEventRecord, at now: Int64) -> [DriverPress]
    mutating func key(_ code: UInt16, _ value: InputEventRecord.KeyValue, at now: Int64) -> [DriverPress]
    mutating func tick(at now: Int64) -> [DriverPress]
}

extension KeyInterpreter {
    func opened(_ fd: Int32) -> [DriverPress] { [] }

    /// Keys only, by default.
    mutating func record(_ record: InputEventRecord, at now: Int64) -> [DriverPress] {
        guard let (code, value) = record.keyChange else { return [] }
        return key(code, value, at: now)
    }
}

/// The ignition: every change, and its state when the device opens (unknown on a FIFO).
private struct IgnitionKeys: KeyInterpreter {
    let signal: IgnitionSignal
    var nextDeadline: Int64? { nil }

    func opened(_ fd: Int32) -> [DriverPress] {
        guard let set = DeviceLine.inputState(fd, switches: signal.kind == .switch, code: signal.code) else { return [] }
        return [press(on: set != signal.inverted)]
    }

    mutating func record(_ record: InputEventRecord, at now: Int64) -> [DriverPress] {
        signal.reading(record).map { [press(on: $0)] } ?? []
    }

    func key(_ code: UInt16, _ value: InputEventRecord.KeyValue, at now: Int64) -> [DriverPress] { [] }

    func tick(at now: Int64) -> [DriverPress] { [] }

    private func press(on: Bool) -> DriverPress {
        DriverPress(command: nil, source: "ignition", ignition: on)
    }
}

/// The meter's flag: hired while the signal is set, its state when the device opens, then every
/// change. Where the device cannot say its state (a FIFO) its first event is the state found.
private struct MeterKeys: KeyInterpreter {
    let signal: IgnitionSignal
    var found = false
    var nextDeadline: Int64? { nil }

    mutating func opened(_ fd: Int32) -> [DriverPress] {
        guard let set = DeviceLine.inputState(fd, switches: signal.kind == .switch, code: signal.code) else { return [] }
        return [press(hired: set != signal.inverted)]
    }

    mutating func record(_ record: InputEventRecord, at now: Int64) -> [DriverPress] {
        signal.reading(record).map { [press(hired: $0)] } ?? []
    }

    func key(_ code: UInt16, _ value: InputEventRecord.KeyValue, at now: Int64) -> [DriverPress] { [] }

    func tick(at now: Int64) -> [DriverPress] { [] }

    private mutating func press(hired: Bool) -> DriverPress {
        defer { found = true }
        return DriverPress(command: nil, source: "meter", meter: hired ? .hired : .vacant, meterFound: !found)
    }
}

/// Buttons: mapped keys only, debounced; the `sos` key acts when held.
private struct ButtonKeys: KeyInterpreter {
    let commandsByCode: [UInt16: (name: String, command: DriverCommand)]
    var debouncer: ButtonDebouncer

    init(commandsByCode: [UInt16: (name: String, command: DriverCommand)], debounceMs: Int64, holdMs: Int64) {
        self.commandsByCode = commandsByCode
        let holdOnly = Set(commandsByCode.filter { $0.value.command.action == .job(.sos) }.keys)
        debouncer = ButtonDebouncer(debounceMs: debounceMs, holdMs: holdMs, holdOnlyKeys: holdOnly)
    }

    var nextDeadline: Int64? { debouncer.nextDeadline }

    mutating func key(_ code: UInt16, _ value: InputEventRecord.KeyValue, at now: Int64) -> [DriverPress] {
        guard commandsByCode[code] != nil else { return [] }
        return presses(debouncer.key(code, value, at: now))
    }

    mutating func tick(at now: Int64) -> [DriverPress] {
        presses(debouncer.tick(at: now))
    }

    private func presses(_ gestures: [ButtonGesture]) -> [DriverPress] {
        gestures.compactMap { gesture in
            switch gesture {
            case .pressed(let code), .held(let code):
                commandsByCode[code].map { DriverPress(command: $0.command, source: "button \($0.name)") }
            }
        }
    }
}

/// A badge reader: whole badge numbers; a dropped one is logged (without its characters).
private struct BadgeKeys: KeyInterpreter {
    let logger: Logger
    var sequence = BadgeSequence()

    var nextDeadline: Int64? { sequence.nextDeadline }

    mutating func key(_ code: UInt16, _ value: InputEventRecord.KeyValue, at now: Int64) -> [DriverPress] {
        presses(sequence.key(code, value, at: now))
    }

    mutating func tick(at now: Int64) -> [DriverPress] {
        presses(sequence.tick(at: now))
    }

    private func presses(_ outcomes: [BadgeSequence.Outcome]) -> [DriverPress] {
        outcomes.compactMap { outcome in
            switch outcome {
            case .badge(let number):
                return DriverPress(command: nil, source: "badge reader", badge: number)
            case .dropped(let drop):
                logger.info("badge read dropped: \(drop.rawValue)")
                return nil
            }
        }
    }
}
