import ArgumentParser
import ControlSocket
import Foundation

@main
struct TaxiUnitCtl: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "taxiunitctl",
        abstract: "Talk to a running taxiunitd over its control socket.",
        subcommands: [Status.self, Press.self, GenKey.self, SignConfig.self]
    )

    struct Connection: ParsableArguments {
        @Option(name: .long, help: "The daemon's control socket.")
        var socket: String = "/run/taxiunitd/control.sock"

        func send(_ request: ControlRequest) throws -> ControlResponse {
            do {
                let bytes = try ControlClient.request(Array(JSONEncoder().encode(request)), socket: socket)
                return try JSONDecoder().decode(ControlResponse.self, from: Data(bytes))
            } catch let error as ControlSocketError {
                throw ValidationErrorLine(error.description)
            }
        }
    }

    struct Status: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show the unit's state, links and queue.")
        @OptionGroup var connection: Connection
        @Flag(name: .long, help: "Print JSON for scripts.") var json = false

        func run() throws {
            let response = try connection.send(ControlRequest(cmd: .status))
            guard response.ok, let status = response.status else { throw ValidationErrorLine(response.error ?? "no status") }
            if json {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
                print(String(decoding: try encoder.encode(status), as: UTF8.self))
                return
            }
            let fixAge = status.gps.lastFixAgeS.map { String(format: "last fix %.1f s ago", $0) } ?? "no fix yet"
            print("unit      \(status.unit)")
            print("state     \(status.state)\(status.pauseReason.map { " (\($0))" } ?? "")")
            if let job = status.job {
                var line = "job       \(job.id): \(job.pickup), \(job.passengers) pax"
                if let left = job.offerSecondsLeft { line += ", \(left) s to answer" }
                if let meeting = job.meetingInS { line += ", meeting in \(meeting / 60) min" }
                if job.shared { line += ", shared" }
                if let note = job.note { line += " (\(note))" }
                print(line)
            }
            if let seats = status.seatsLeft { print("seats     \(seats) left") }
            print("gpsd      \(status.gps.connected ? "connected" : "disconnected"), \(fixAge)")
            print("clock     \(status.clock ?? "unknown")")
            print("zone      \(status.zone ?? "none")")
            print("broker    \(status.broker.connected ? "connected" : "disconnected")\(status.broker.lastError.map { " (\($0))" } ?? "")")
            print("outbox    \(status.outbox.depth) waiting, \(status.outbox.inFlight) in flight")
            print("positions \(status.storedPositions) stored")
            if let config = status.config {
                let versions = config.versions.sorted { $0.key < $1.key }.map { "\($0.key) v\($0.value)" }
                let trial = config.onTrial.map { ", \($0) config on trial" } ?? ""
                print("config    \(versions.isEmpty ? "local file only" : versions.joined(separator: ", "))\(trial)")
            }
        }
    }

    struct Press: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Press a driver input, as the buttons or the terminal would.")
        @OptionGroup var connection: Connection
        @Argument(help: "The input and its argument: duty, accept, reject [reason], arrived, pob [N], clear, noshow, pause [break|refuel|personal|other], resume, sos.")
        var words: [String]

        func run() throws {
            let response = try connection.send(ControlRequest(cmd: .press, input: words.joined(separator: " ")))
            guard response.ok else { throw ValidationErrorLine(response.error ?? "refused") }
            if let message = response.message, !message.isEmpty { print(message) }
        }
    }
}

/// An error printed as one plain line, exit code 1.
struct ValidationErrorLine: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
