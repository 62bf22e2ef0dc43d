import ArgumentParser
import ControlSocket
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension TaxiUnitCtl {
    struct Health: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Exit 0 with one line \"healthy\", or 2 with one line per problem.",
            discussion: """
                Problems: no valid fix for --no-fix-s seconds (counted from the start before the first \
                fix), the broker unreachable for --broker-down-s seconds (from the start if it was never \
                reached), the store unusable and a volatile one in use, more than --max-outbox messages \
                waiting for the broker. Exit 3 and 4 as for every command.
                """)
        @OptionGroup var connection: Connection
        @Option(name: .customLong("no-fix-s"), help: "Seconds without a fix that are a problem.") var noFixS: Double = 60
        @Option(name: .customLong("broker-down-s"), help: "Seconds without the broker that are a problem.") var brokerDownS: Double = 120
        @Option(name: .customLong("max-outbox"), help: "Messages waiting for the broker that are a problem when exceeded.")
        var maxOutbox: Int = 1000

        func validate() throws {
            guard noFixS.isFinite, noFixS >= 0, brokerDownS.isFinite, brokerDownS >= 0 else {
                throw ValidationError("--no-fix-s and --broker-down-s must be 0 or more seconds")
            }
            guard maxOutbox >= 0 else { throw ValidationError("--max-outbox must not be negative") }
        }

        func run() throws {
            guard let status = try connection.send(ControlRequest(cmd: .status)).status else { throw ExitCode(1) }
            let problems = HealthCheck.problems(
                status, thresholds: HealthThresholds(noFixS: noFixS, brokerDownS: brokerDownS, outboxDepth: maxOutbox))
            if connection.json {
                try connection.show(HealthReport(healthy: problems.isEmpty, problems: problems))
            } else {
                print(problems.isEmpty ? "healthy" : problems.joined(separator: "\n"))
            }
            // 2: distinct from 1 (the daemon refused) and 3 (not running), for monitoring scripts.
            if !problems.isEmpty { throw ExitCode(2) }
        }
    }

    struct HealthReport: Encodable {
        var healthy: Bool
        var problems: [String]
    }
}
