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
import UnitConfig
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
        subcommands: [Status.self, Health.self, Config.self, Jobs.self, Outbox.self, Press.self, LogLevel.self, HashPIN.self, GenKey.self, SignConfig.self]
    )

    struct Connection: ParsableArguments {
        static let defaultSocket = "/run/taxiunitd/control.sock"
        static let defaultConfig = "/etc/taxiunitd/taxiunitd.toml"

        @Option(name: .long, help: "The daemon's control socket (default: [control] socket of --config, else /run/taxiunitd/control.sock).")
        var socket: String?

        @Option(name: .long, help: "The daemon's configuration file (default: /etc/taxiunitd/taxiunitd.toml); its conf.d/ drop-ins are read too.")
        var config: String?

        @Flag(name: .long, help: "Print JSON for scripts.")
        var json = false

        var configPath: String { config ?? Self.defaultConfig }

        /// --socket, else the configuration's `[control] socket` (the default file only when it
        /// exists), else where the service puts it.
        func socketPath() throws -> String {
            if let socket { return socket }
            if config == nil && !FileManager.default.fileExists(atPath: Self.defaultConfig) { return Self.defaultSocket }
            let local = try localSources()
            if case .table(let root) = local.value, case .table(let control)? = root["control"], case .string(let path)? = control["socket"] {
                return path
            }
            return Self.defaultSocket
        }

        /// The configuration file and its drop-ins; a problem ends the program with a line each.
        func localSources() throws -> LocalConfigSources {
            // Outside the service there are no credentials: shown as where the daemon will find them.
            let here = LocalConfigSources.Machine.current
            let machine = LocalConfigSources.Machine(
                hostName: here.hostName, machineID: here.machineID,
                credentialsDirectory: here.credentialsDirectory ?? "$CREDENTIALS_DIRECTORY")
            do {
                return try LocalConfigSources.load(path: configPath, machine: machine)
            } catch {
                for problem in error.problems { printToStandardError("\(configPath): \(problem)") }
                throw ExitCode(1)
            }
        }

        /// Sends one request; a refusal or an unreachable daemon ends the program with a clear line.
        /// `answersRefusals`: a request the daemon refused with a message for the user (a driver input
        /// that makes no sense now) is returned for the caller to show, not failed here.
        func send(_ request: ControlRequest, answersRefusals: Bool = false) throws -> ControlResponse {
            let response: ControlResponse
            do {
                let bytes = try ControlClient.request(Array(JSONEncoder().encode(request)), socket: try socketPath())
                response = try JSONDecoder().decode(ControlResponse.self, from: Data(bytes))
            } catch let error as ControlSocketError {
                printToStandardError("taxiunitctl: \(error)")
                switch error {
                case .daemonNotRunning: throw ExitCode(3)
                case .permissionDenied: throw ExitCode(4)
                default: throw ExitCode(1)
                }
            }
            guard response.ok || (answersRefusals && response.message != nil) else {
                printToStandardError("taxiunitctl: \(response.error ?? "the daemon refused the request")")
                throw ExitCode(1)
            }
            return response
        }

        func show(_ value: some Encodable) throws {
            if json {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
                // The wire's convention (docs/protocol.md), as the fleet's `status` command answers.
                encoder.keyEncodingStrategy = .convertToSnakeCase
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
        static let configuration = CommandConfiguration(
            abstract: "Show the ride history, newest first; with --no-ride the jobs that ended without a ride; with --upcoming the jobs ahead: the stacked next job and the pre-bookings.")
        @OptionGroup var connection: Connection
        @Option(name: .long, help: "Show only the last N rides (with --no-ride: jobs).") var last: Int = 20
        @Flag(name: .long, help: "Show the jobs ahead instead: the stacked next job, then the pre-bookings by meeting time.") var upcoming = false
        @Flag(name: .long, help: "Show the jobs that ended without a ride instead, newest first: offers rejected or not answered in time (timed_out), no-shows and cancels.") var noRide = false

        func validate() throws {
            guard last > 0 else { throw ValidationError("--last must be at least 1") }
        }

        func run() throws {
            if upcoming {
                let status = try connection.send(ControlRequest(cmd: .status)).status
                let ahead = (status?.next.map { [$0] } ?? []) + (status?.upcoming ?? [])
                if ahead.isEmpty && !connection.json {
                    print("no jobs ahead")
                } else {
                    try connection.show(ahead)
                }
                return
            }
            let response = try connection.send(ControlRequest(cmd: .jobs, limit: last))
            if noRide {
                let outcomes = response.jobOutcomes ?? []
                if outcomes.isEmpty && !connection.json {
                    print("no jobs without a ride")
                } else {
                    try connection.show(outcomes)
                }
                return
            }
            let rides = response.rides ?? []
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
        @Argument(help: "The input and its argument: duty, accept, reject [reason], arrived, pob [N], clear, noshow, pause [break|refuel|personal|other], resume, sos, seats [N] (free seats), info (the next page of job details), jobs (the next page of the shift's history), bookings (the next pre-booking on the terminal), msg (read the messages), reply [N] (choose a canned text), send (send the chosen canned text), soon [N] (on board: clear in N minutes), drop [unreachable|vehicle|other] (ask dispatch to drop the job), login DRIVER PIN, logout.")
        var words: [String]

        /// The daemon's own parsers: a word it would refuse is a usage error here, exit 64.
        func validate() throws {
            let text = words.joined(separator: " ")
            if let session = SessionInput.parse(text) {
                if case .failure(let problem) = session { throw ValidationError(problem.description) }
            } else if case .failure(let problem) = DriverInput.parse(text) {
                throw ValidationError(problem.description)
            }
        }

        /// What the driver is told, on standard output; exit 1 when the daemon refused the input.
        func run() throws {
            let response = try connection.send(ControlRequest(cmd: .press, input: words.joined(separator: " ")), answersRefusals: true)
            if connection.json {
                try connection.show(response)
            } else if let message = response.message, !message.isEmpty {
                print(message)
            }
            if !response.ok { throw ExitCode(1) }
        }
    }
}

func printToStandardError(_ line: String, terminator: String = "\n") {
    writeToStandardError(line + terminator)
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
