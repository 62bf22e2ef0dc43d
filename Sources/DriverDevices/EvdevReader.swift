import DriverKeys
import Foundation
import Logging
import Platform

#if canImport(Glibc)
import Glibc
#endif

/// The evdev adapter: reads `struct input_event` records from `/dev/input/...` (or a FIFO in tests)
/// on its own thread and turns debounced key presses into `DriverPress`es. All of its unsafe code is
/// here and in `DeviceLine`.
public final class ButtonReader: Sendable {
    public let presses: AsyncStream<DriverPress>
    private let sink: AsyncStream<DriverPress>.Continuation
    private let line: DeviceLine
    private let inputsByCode: [UInt16: (name: String, input: String)]
    private let debounceMs: Int64
    private let holdMs: Int64
    private let layout: InputEventLayout

    /// The input that acts only when its key is held for `holdMs`.
    public static let holdOnlyInput = "sos"
    /// EVIOCGRAB: the keys are ours alone, so KEY_F1 does not also switch the console.
    static let grabRequest: UInt = 0x4004_4590

    /// `keys`: key name (`KEY_F1` or a decimal code) → driver input; names must be valid (`EvdevKeyNames`).
    public init(
        path: String, keys: [String: String], debounceMs: Int, holdMs: Int, layout: InputEventLayout = .native,
        retryIntervalS: Double = 3, logger: Logger
    ) {
        var inputs: [UInt16: (String, String)] = [:]
        for (name, input) in keys {
            if let code = EvdevKeyNames.code(named: name) { inputs[code] = (name, input) }
        }
        inputsByCode = inputs
        self.debounceMs = Int64(debounceMs)
        self.holdMs = Int64(holdMs)
        self.layout = layout
        line = DeviceLine(path: path, role: "button device", threadName: "buttons", retryIntervalS: retryIntervalS, logger: logger)
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
        let opened = DeviceLine.openDevice(path, flags: O_RDONLY)
        if case .success(let fd) = opened {
            // Fails harmlessly (ENOTTY) on a FIFO.
            _ = try? syscall("ioctl EVIOCGRAB") { ioctl(fd, grabRequest, 1) }
        }
        return opened
    }

    private func serve(_ fd: Int32) -> DeviceLine.Served {
        var decoder = InputEventDecoder(layout: layout)
        let holdOnly = Set(inputsByCode.filter { $0.value.input == Self.holdOnlyInput }.keys)
        var debouncer = ButtonDebouncer(debounceMs: debounceMs, holdMs: holdMs, holdOnlyKeys: holdOnly)
        var buffer = [UInt8](repeating: 0, count: layout.recordSize * 64)
        while !line.stopping {
            let now = DeviceLine.monotonicMs()
            let timeout = debouncer.nextDeadline.map { Int(max(0, $0 - now)) } ?? 1000
            switch line.wait(fd: fd, timeoutMs: timeout) {
            case .failed(let reason): return .lost(reason)
            case .woken, .timedOut: break
            case .readable:
                switch DeviceLine.read(fd, into: &buffer) {
                case .failed(let reason): return .lost(reason)
                case .end: return .ended
                case .nothingYet: break
                case .bytes(let count):
                    let at = DeviceLine.monotonicMs()
                    for record in decoder.decode(buffer[..<count]) {
                        guard let (code, value) = record.keyChange, inputsByCode[code] != nil else { continue }
                        emit(debouncer.key(code, value, at: at))
                    }
                }
            }
            emit(debouncer.tick(at: DeviceLine.monotonicMs()))
        }
        return .stopped
    }

    private func emit(_ gestures: [ButtonGesture]) {
        for gesture in gestures {
            switch gesture {
            case .pressed(let code), .held(let code):
                guard let key = inputsByCode[code] else { continue }
                sink.yield(DriverPress(input: key.input, source: "button \(key.name)"))
            }
        }
    }
}
