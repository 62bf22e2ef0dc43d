import ArgumentParser
import ControlSocket
import Logging

extension TaxiUnitCtl {
    struct LogLevel: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "log-level",
            abstract: "Show the daemon's log level, or set it until the next start.",
            discussion: "The level a start uses is taxiunitd's --log-level, else [log] level.")
        @OptionGroup var connection: Connection
        @Argument(help: "trace, debug, info, notice, warning, error or critical.") var level: String?

        func validate() throws {
            if let level, Logger.Level(rawValue: level) == nil {
                throw ValidationError("unknown log level \(level); one of \(Logger.Level.allCases.map(\.rawValue).joined(separator: ", "))")
            }
        }

        func run() throws {
            let response = try connection.send(ControlRequest(cmd: .logLevel, input: level))
            if connection.json {
                try connection.show(response)
            } else {
                print(response.message ?? "")
            }
        }
    }
}
