import DriverDisplay
import DriverKeys
import Foundation
import FoundationEssentials
import Logging
import Platform
import UnitCore
import Synchronization
import TaxiProtocol

/// The serial terminal adapter: raw 8N1 termios on the port, keys in, screen out, on its own thread.
/// Its system calls are in `DeviceLine`.
public final class SerialTerminal: BackgroundAdapter {
    public let presses: AsyncStream<DriverPress>
    private let sink: AsyncStream<DriverPress>.Continuation
    private let line: DeviceLine
    private let baud: Int
    private let keys: [TerminalKey: (name: String, command: DriverCommand)]
    /// The noise guard's quiet time that ends a burst of bytes (see `TerminalKeyDecoder`).
    private let quietUs: Int64

    /// What the engine last showed, and what the terminal has drawn of it.
    private let screen: Mutex<Screen>

    private struct Screen {
        var view = DriverView()
        var presenter: TerminalPresenter
    }

    /// How often the screen is looked at while nothing happens: countdowns tick in seconds.
    static let refreshUs: Int64 = 200_000

    /// `keys`: key name (see `TerminalKey(configName:)`) → what it does. `noiseGuardCharacters`: the
    /// quiet time a key needs before and after it, in character times at `baud`.
    public init(
        path: String, baud: Int, keys: [String: DriverCommand], noiseGuardCharacters: Int, presenter: TerminalPresenter,
        retryIntervalS: Double = 3, logger: Logger
    ) {
        var decoded: [TerminalKey: (String, DriverCommand)] = [:]
        for (name, command) in keys {
            if let key = TerminalKey(configName: name) { decoded[key] = (name, command) }
        }
        self.keys = decoded
        self.baud = baud
        quietUs = TerminalKeyDecoder.quietTimeUs(characters: noiseGuardCharacters, baud: baud)
        screen = Mutex(Screen(presenter: presenter))
        line = DeviceLine(path: path, role: "serial terminal", threadName: "serial-terminal", retryIntervalS: retryIntervalS, logger: logger)
        (presses, sink) = AsyncStream.makeStream(of: DriverPress.self, bufferingPolicy: .bufferingNewest(256))
    }

    /// The engine's latest view of the unit; drawn at once.
    public func show(_ view: DriverView) {
        screen.withLock { $0.view = view }
        line.wake()
    }

    /// The catalogue's language, as drawn now.
    public var language: String {
        screen.withLock { $0.presenter.renderer.catalogue.language }
    }

    /// The driver's alert style: `false` silences the bell (alerts still blink).
    public func setRingsBell(_ rings: Bool) {
        screen.withLock { $0.presenter.ringsBell = rings }
        line.wake()
    }

    /// A fleet push changed the language: everything is drawn again in it.
    public func setCatalogue(_ catalogue: MessageCatalogue) {
        screen.withLock {
            $0.presenter.renderer.catalogue = catalogue
            $0.presenter.invalidate()
        }
        line.wake()
    }

    /// Starts the reader thread; it opens the device, or keeps trying.
    public func start() {
        line.start(open: open, serve: serve)
    }

    /// Returns once the thread has closed the device; `presses` then ends.
    public func stop() {
        line.stop()
        sink.finish()
    }

    private func open(_ path: String) -> Result<Int32, DeviceError> {
        DeviceLine.openSerialPort(path, baud: baud)
    }

    private func serve(_ fd: Int32) -> DeviceLine.Served {
        var decoder = TerminalKeyDecoder(quietUs: quietUs)
        var buffer = [UInt8](repeating: 0, count: 512)
        screen.withLock { $0.presenter.invalidate() }
        while !line.stopping {
            if let failure = draw(fd) { return .lost(failure) }
            let now = Monotonic.microseconds()
            let deadline = min(decoder.nextDeadline ?? .max, now + Self.refreshUs)
            switch line.readSerial(fd, into: &buffer, timeoutUs: deadline - now) {
            case .lost(let reason): return .lost(reason)
            case .nothing: continue
            case .timedOut: handle(decoder.tick(at: Monotonic.microseconds()))
            case .bytes(let count): handle(decoder.receive(buffer[..<count], at: Monotonic.microseconds()))
            }
        }
        return .stopped
    }

    private func handle(_ inputs: [TerminalInput]) {
        for input in inputs {
            guard case .key(let key) = input else {
                sink.yield(DriverPress(command: nil, source: "terminal noise", discarded: true))
                continue
            }
            if key == .redraw {
                screen.withLock { $0.presenter.invalidate() }
            } else {
                let typed: Character? = switch key {
                case .character(let character): character
                case .enter: "\n"
                case .left: "\u{8}"
                case .up, .down, .right, .function, .redraw: nil
                }
                let mapped = keys[key]
                // Unmapped keys matter only while a login is typed; the engine ignores them otherwise.
                guard mapped != nil || typed != nil else { continue }
                sink.yield(DriverPress(command: mapped?.command, source: "terminal \(mapped?.name ?? "key")", typed: typed))
            }
        }
    }

    private func draw(_ fd: Int32) -> String? {
        // The system clock: the engine hands over deadlines shifted onto it (DriverPanel).
        let now = UnitTime(seconds: Date().timeIntervalSince1970)
        let offset = TimeZone.current.secondsFromGMT()
        let bytes = screen.withLock { screen in
            let view = screen.view
            return screen.presenter.present(view, now: now, utcOffsetS: offset)
        }
        guard !bytes.isEmpty else { return nil }
        switch DeviceLine.write(fd, bytes) {
        case .all: return nil
        case .full:
            // Half a screen went out: draw it all again once the line drains.
            screen.withLock { $0.presenter.invalidate() }
            return nil
        case .failed(let reason): return reason
        }
    }
}
