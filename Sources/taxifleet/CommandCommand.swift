import ArgumentParser
import FleetConsole
import Foundation
import StrictJSON
import UnitCore

struct Command: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "command",
        abstract: "Send a signed command to units and wait for each one's cmd/reply.",
        discussion: """
            report: publish the latest fix now; status: answer with the unit's status; purge --days N: \
            delete stored positions older than N days (0: all); reconnect: drop the broker connection. \
            Without --unit it goes to every unit whose retained status the broker holds. A command is \
            not retained: an offline unit's persistent session keeps it until the unit is back, and \
            the unit refuses it after --expires-in.
            """
    )

    @OptionGroup var broker: BrokerOptions
    @OptionGroup var signing: KeyOption
    @OptionGroup var answers: AnswerOptions
    @Option(name: .long, help: "purge only: delete positions older than this many days (0: all).") var days: Int?
    @Option(name: .customLong("expires-in"), help: "Seconds until the units refuse the command as expired (at most 86400).")
    var expiresIn: Int = 600
    @Argument(help: "The command: report, status, purge or reconnect.") var name: String

    func validate() throws {
        guard (1...86_400).contains(expiresIn) else { throw ValidationError("--expires-in must be between 1 and 86400 seconds") }
        if name == "purge", days == nil { throw ValidationError("purge needs --days N (0: every stored position)") }
        if name != "purge", days != nil { throw ValidationError("--days is for purge only") }
    }

    func run() async throws {
        try await failing { try await send() }
    }

    private func send() async throws -> Int32 {
        let brokerSettings = try broker.resolved()
        let key = try signing.load(brokerSettings.file)
        let topics = brokerSettings.topics
        let link = try await FleetLink.open(brokerSettings, timeoutS: min(answers.wait, 10))
        defer { link.close() }
        var state = FleetState(topics: topics)
        try link.subscribe([topics.everyUnit(.cmdReply)])
        try await link.retained([topics.everyUnit(.status)]) { state.take(topic: $0.topic, payload: $0.payload) }
        let units = answers.unit.isEmpty ? state.units.keys.sorted() : answers.unit

        let now = wallClockMs()
        let expiresAt = now + Int64(expiresIn) * 1000
        var ids: [String: String] = [:]
        var payloads: [(topic: String, payload: [UInt8])] = []
        for unit in units {
            let id = "taxifleet-\(UUID().uuidString.lowercased())"
            var members: [(key: String, value: JSONDocument)] = [
                ("cmd", .string(name)), ("expires_at", .number(literal: String(expiresAt))), ("id", .string(id)),
            ]
            if let days { members.insert(("days", .number(literal: String(days))), at: 1) }
            let topic = topics.unit(unit, .cmd)
            do {
                payloads.append((topic, try Preflight.command(members, topic: topic, now: now, key: key)))
            } catch {
                throw Failure("the units would refuse this command, nothing was published:\n" + error.problems.joined(separator: "\n"), exitCode: Failure.wouldBeRefused)
            }
            ids[unit] = id
        }
        let online = units.filter { state.units[$0]?.online == true }
        var rollout = Rollout(topics: topics, awaited: .command(ids: ids), online: online, offline: units.filter { !online.contains($0) })
        let display = ProgressDisplay(json: answers.json)
        let deadline = ContinuousClock.now + .milliseconds(Int(answers.wait * 1000))
        display.started("\(name) to \(units.count) units: \(online.count) online" + (rollout.offline.isEmpty ? "" : ", \(rollout.offline.count) offline"))
        try await publishAll(payloads, retain: false, on: link, until: deadline, into: &rollout, showing: display)
        await collect(&rollout, on: link, until: deadline, showing: display)
        display.finished(rollout)
        return rollout.outcome.rawValue
    }
}
