import ArgumentParser
import Foundation
import UnitCore

@main
struct TaxiFleet: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "taxifleet",
        abstract: "The fleet manager's console: push signed configuration and commands to a fleet of taxiunitd units and see every unit at a glance.",
        discussion: """
            Talks MQTT 5 to the fleet's broker with the fleet account (login, TLS and client certificate \
            as the units do). Broker, account, fleet and key come from --config (or $TAXIFLEET_CONFIG) \
            and the options, which win over the file. See taxifleet(8) and docs/fleet.md.

            EXIT STATUS
            0 every unit that was online applied the document (answered ok); 1 some unit rejected or \
            rolled it back (the command failed or was refused); 2 not every online unit answered within \
            --wait; 3 the broker could not be reached or refused a publish; 4 the units would refuse \
            the document or command (nothing was published); 64 a usage error.
            """,
        version: SoftwareVersion.software,
        subcommands: [Push.self, Command.self, Status.self, Serve.self, GenKey.self, SignConfig.self]
    )
}

/// What ends the program with a message and an exit status (see the discussion above).
struct Failure: Error, CustomStringConvertible {
    static let unreachable: Int32 = 3
    static let wouldBeRefused: Int32 = 4
    static let usage: Int32 = 64

    let description: String
    let exitCode: Int32

    init(_ description: String, exitCode: Int32) {
        self.description = description
        self.exitCode = exitCode
    }
}

extension AsyncParsableCommand {
    /// Runs `body`; a `Failure` is printed on standard error and becomes the exit status.
    func failing(_ body: () async throws -> Int32) async throws {
        let code: Int32
        do {
            code = try await body()
        } catch let failure as Failure {
            printToStandardError("taxifleet: \(failure.description)")
            code = failure.exitCode
        }
        if code != 0 { throw ExitCode(code) }
    }
}

func printToStandardError(_ line: String) {
    FileHandle.standardError.write(Data((line + "\n").utf8))
}

/// Standard error is a terminal: draw progress bars and redraw tables in place.
var standardErrorIsTerminal: Bool { isatty(STDERR_FILENO) == 1 }
var standardOutputIsTerminal: Bool { isatty(STDOUT_FILENO) == 1 }

/// The wall clock in ms since the epoch, as the units' clocks are read against it.
func wallClockMs() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }
