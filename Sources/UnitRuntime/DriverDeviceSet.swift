import DriverDevices
import DriverDisplay
import Logging
import UnitConfig

extension ButtonReader: BackgroundAdapter {}
extension SerialTerminal: BackgroundAdapter {}

/// The buttons and the serial terminal the configuration asks for, built and ready to run.
public struct DriverDeviceSet: Sendable {
    public let buttons: ButtonReader?
    public let terminal: SerialTerminal?

    private let logger: Logger

    public init(configuration: UnitConfiguration, logger: Logger) {
        self.logger = logger
        buttons = configuration.input.buttons.map { buttons in
            ButtonReader(path: buttons.device, keys: buttons.keys, debounceMs: buttons.debounceMs, holdMs: buttons.sosHoldMs, logger: logger)
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
                keyLabels: ScreenRenderer.keyLabels(for: serial.keys))
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

    /// A fleet configuration changed `[unit] language`: the terminal repaints in it. A catalogue that
    /// cannot be loaded leaves the current one in place.
    public func useLanguage(of configuration: UnitConfiguration) {
        guard let terminal, terminal.language != configuration.unit.language else { return }
        do {
            terminal.setCatalogue(try Self.catalogue(configuration))
            logger.notice("terminal language changed", metadata: ["language": "\(configuration.unit.language)"])
        } catch {
            logger.error("cannot load the new terminal language; keeping the current one", metadata: ["problems": "\(error)"])
        }
    }

    public var presses: [AsyncStream<DriverPress>] {
        [buttons?.presses, terminal?.presses].compactMap { $0 }
    }
}
