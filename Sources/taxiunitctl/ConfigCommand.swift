import ArgumentParser
import ControlSocket
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import StrictJSON
import UnitConfig
import UnitCore

extension TaxiUnitCtl {
    struct Config: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show the settings in force and where each came from.",
            discussion: """
                One line per setting, `key = value  # origin`: the main file, the drop-in in conf.d/ that \
                set it last, or the fleet's document (fleet, then unit scope) in force in the running \
                daemon. Settings left at their defaults are not listed. The files are read as they are \
                now (the daemon read them when it started). Without a running daemon (no socket), or \
                with --offline, the files alone are shown, and the first line says so.
                """)
        @OptionGroup var connection: Connection
        @Flag(name: .long, help: "Read the files only; do not ask the daemon for the fleet's documents.")
        var offline = false

        func run() throws {
            let local = try connection.localSources()
            let askDaemon = try !offline && FileManager.default.fileExists(atPath: connection.socketPath())
            let fleetLayers = askDaemon ? try connection.send(ControlRequest(cmd: .config)).layers ?? [] : []
            var layers: [ConfigProvenance.Layer] = []
            for layer in fleetLayers {
                do {
                    let settings = try JSONDocument.parse(Array(layer.settings.utf8)).configValue()
                    layers.append(ConfigProvenance.Layer(scope: layer.scope, version: layer.version, settings: settings))
                } catch {
                    printToStandardError("taxiunitctl: the daemon's \(layer.scope) document is unreadable: \(error)")
                    throw ExitCode(1)
                }
            }
            let settings = ConfigProvenance.effective(local: local, layers: layers)
            if connection.json {
                try connection.show(settings)
                return
            }
            if !askDaemon {
                print(offline ? "# --offline: the local files only" : "# taxiunitd is not running: the local files only")
            } else if fleetLayers.isEmpty {
                print("# no fleet document in force")
            }
            for setting in settings { print("\(setting.key) = \(setting.value)  # \(setting.origin)") }
        }
    }
}
