import ArgumentParser
import ControlSocket
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import Platform
import UnitCore

@main
struct TaxiUnitCtl: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "taxiunitctl",
        abstract: "Talk to a running taxiunitd over its control socket.",
        discussion: """
            Human-readable output by default; --json prints the daemon's answer as JSON for scripts. The \
            socket is /run/taxiunitd/control.sock under systemd; it is open to root and the taxiunitd \
            group.

            EXIT STATUS
            0 done; 1 the daemon refused the request; 2 health found a problem; 3 taxiunitd is not \
            running; 4 not permitted to use the control socket.
            """,
        version: SoftwareVersion.software,
        subcommands: [Status.self, Health.self, Config.self, Jobs.self, Outbox.self, Press.self, LogLevel.self, GenKey.self, SignConfig.self, HashPIN.self]
    )

    struct Connection: ParsableArguments {
        @Option(name: .long, help: "The daemon's control socket.")
        var socket: String = "/run/taxiunitd/control.sock"

        @Flag(name: .long, help: "Print JSON for scripts.")
        var json = false

        /// Sends one request; a refusal or an unreachable daemon ends the program with a clear line.
        func send(_ request: ControlRequest) throws -> ControlResponse {
            let response: ControlResponse
            do {
                let bytes = try ControlClient.request(Array(JSONEncoder().encode(request)), socket: socket)
                response = try JSONDecoder().decode(ControlResponse.self, from: Data(bytes))
            } catch let error as ControlSocketError {
                printToStandardError("taxiunitctl: \(error)")
                switch error {
                case .daemonNotRunning: throw ExitCode(3)
                case .permissionDenied: throw ExitCode(4)
                default: throw ExitCode(1)
                }
            }
            guard response.ok else {
                printToStandardError("taxiunitctl: \(response.error ?? "the daemon refused the request")")
                throw ExitCode(1)
            }
            return response
        }

        func show(_ value: some Encodable) throws {
            if json {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
                print(String(decoding: try encoder.encode(value), as: UTF8.self))
            } else {
                print(HumanReadable.render(value))
            }
        }
    }

    struct Status: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show the unit's state, job, GPS, broker link, outbox and configuration.")
        @OptionGroup var connection: Connection

        func run() throws {
            let response = try connection.send(ControlRequest(cmd: .status))
            guard let status = response.status else { throw ExitCode(1) }
            try connection.show(status)
        }
    }

    struct Jobs: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show the ride history, newest first.")
        @OptionGroup var connection: Connection
        @Option(name: .long, help: "Show only the last N rides.") var last: Int = 20

        func validate() throws {
            guard last > 0 else { throw ValidationError("--last must be at least 1") }
        }

        func run() throws {
            let rides = try connection.send(ControlRequest(cmd: .jobs, limit: last)).rides ?? []
            if rides.isEmpty && !connection.json {
                print("no rides yet")
            } else {
                try connection.show(rides)
            }
        }
    }

    struct Outbox: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the messages waiting for the broker's acknowledgement, per class, oldest first.")
        @OptionGroup var connection: Connection
        @Option(name: .long, help: "Show at most N messages of each class.") var limit: Int = 10

        func validate() throws {
            guard limit >= 0 else { throw ValidationError("--limit must not be negative") }
        }

        func run() throws {
            let response = try connection.send(ControlRequest(cmd: .outbox, limit: limit))
            guard let outbox = response.outbox else { throw ExitCode(1) }
            try connection.show(outbox)
        }
    }

    struct Press: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Press a driver input, as the buttons or the terminal would.")
        @OptionGroup var connection: Connection
        @Argument(help: "The input and its argument: duty, accept, reject [reason], arrived, pob [N], clear, noshow, pause [break|refuel|personal|other], resume, sos, seats [N] (free seats), info (the next page of job details), msg, reply [N], send (next page of job details).")
        var words: [String]

        func run() throws {
            let response = try connection.send(ControlRequest(cmd: .press, input: words.joined(separator: " ")))
            if connection.json {
                try connection.show(response)
            } else if let message = response.message, !message.isEmpty {
                print(message)
            }
        }
    }
}

func printToStandardError(_ line: String) {
    writeToStandardError(line + "\n")
}

/// Standard input up to `limit` bytes or its end, whichever comes first.
func readStandardInput(limit: Int) -> [UInt8] {
    var input: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 4096)
    while input.count < limit {
        guard let count = try? syscall("read", { read(STDIN_FILENO, &chunk, min(chunk.count, limit - input.count)) }), count > 0 else { break }
        input += chunk[..<count]
    }
    return input
}

/// An error printed as one plain line, exit code 1.
struct ValidationErrorLine: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
