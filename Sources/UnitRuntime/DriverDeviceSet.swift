import DriverDevices
import DriverDisplay
import Logging
import UnitConfig

/// The buttons, badge reader and serial terminal the configuration asks for, built and ready to run.
public struct DriverDeviceSet: Sendable {
    public let buttons: EvdevReader?
    public let badgeReader: EvdevReader?
    public let terminal: SerialTerminal?
    public let ignition: EvdevReader?
    /// `[input.meter]` as an evdev signal.
    public let meterSignal: EvdevReader?
    /// `[input.meter]` as a serial line.
    public let serialMeter: SerialMeter?

    private let logger: Logger

    public init(configuration: UnitConfiguration, logger: Logger) {
        self.logger = logger
        buttons = configuration.input.buttons.map { buttons in
            EvdevReader(path: buttons.device, keys: buttons.keys, debounceMs: buttons.debounceMs, holdMs: buttons.sosHoldMs, logger: logger)
        }
        badgeReader = configuration.input.badge.map { EvdevReader(badgeReader: $0.device, logger: logger) }
        ignition = configuration.input.ignition.map { EvdevReader(ignition: $0.device, signal: $0.signal, logger: logger) }
        switch configuration.input.meter {
        case .signal(let device, let signal)?:
            meterSignal = EvdevReader(meter: device, signal: signal, logger: logger)
            serialMeter = nil
        case .serial(let port, let baud, let meterProtocol)?:
            meterSignal = nil
            serialMeter = SerialMeter(path: port, baud: baud, protocol: meterProtocol, logger: logger)
        case nil:
            meterSignal = nil
            serialMeter = nil
        }
        terminal = configuration.input.serial.map { serial in
            let catalogue: MessageCatalogue
            do {
                catalogue = try Self.catalogue(configuration)
            } catch {
                // A terminal in English (or showing text keys) beats no terminal.
                logger.error("cannot load the terminal's language; using English", metadata: ["problems": "\(error)"])
                catalogue = (try? MessageCatalogue.load(language: "en", directory: configuration.unit.catalogues))
                    ?? MessageCatalogue(language: "none", texts: [:])
            }
            let renderer = ScreenRenderer(
                catalogue: catalogue, size: ScreenSize(columns: serial.columns, rows: serial.rows),
                keyLabels: ScreenRenderer.keyLabels(for: serial.keys.mapValues(\.text)))
            return SerialTerminal(
                path: serial.device, baud: serial.baud, keys: serial.keys, noiseGuardCharacters: serial.noiseGuardCharacters,
                presenter: TerminalPresenter(renderer: renderer, charset: TerminalCharset(rawValue: serial.charset) ?? .ascii),
                logger: logger)
        }
    }

    /// The configured language's catalogue; `--check` reports its problems.
    public static func catalogue(_ configuration: UnitConfiguration) throws(ConfigError) -> MessageCatalogue {
        try MessageCatalogue.load(language: configuration.unit.language, directory: configuration.unit.catalogues)
    }

    /// The terminal repaints in `language` (a fleet push changed `[unit] language`, or the
    /// logged-in driver's own). A catalogue that cannot be loaded leaves the current one in place;
    /// returns whether the terminal now shows `language`.
    @discardableResult
    public func useLanguage(_ language: String, catalogues: String) -> Bool {
        guard let terminal else { return false }
        guard terminal.language != language else { return true }
        do {
            terminal.setCatalogue(try MessageCatalogue.load(language: language, directory: catalogues))
            logger.notice("terminal language changed", metadata: ["language": "\(language)"])
            return true
        } catch {
            logger.error("cannot load the new terminal language; keeping the current one", metadata: ["problems": "\(error)"])
            return false
        }
    }

    public var presses: [AsyncStream<DriverPress>] {
        [buttons?.presses, badgeReader?.presses, terminal?.presses, ignition?.presses, meterSignal?.presses, serialMeter?.presses].compactMap { $0 }
    }
}
