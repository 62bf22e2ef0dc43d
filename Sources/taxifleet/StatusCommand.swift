import ArgumentParser
import FleetConsole
import Foundation

struct Status: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "A table of every unit from its retained status, telemetry and pos/last.",
        discussion: """
            ONLINE: yes, no (last will or shutdown), ? (no status, only telemetry or a position). SINCE: \
            how long the daemon has run. CONFIG: the fleet (f) and unit (u) config versions in force. \
            FIX AGE: the newest fix any of the three topics tells of, against this machine's clock. \
            OUTBOX: messages and positions waiting on the unit. ASIDE: what the unit set aside.
            """
    )

    @OptionGroup var broker: BrokerOptions
    @Option(name: .long, help: "Only this unit (repeatable).") var unit: [String] = []
    @Flag(name: .long, help: "Only units that are not online.") var offline = false
    @Option(name: .long, help: "Only units running this software release.") var version: String?
    @Option(name: .customLong("stale-fix"), help: "Only units whose newest fix is older than this many seconds, or that have none.")
    var staleFix: Double?
    @Option(name: .long, help: "Order by: \(StatusQuery.SortKey.allCases.map(\.rawValue).joined(separator: ", ")).")
    var sort: String = "unit"
    @Flag(name: .long, help: "Print JSON (with --watch: one array a line).") var json = false
    @Flag(name: .long, help: "Keep running and show the table again whenever it changes (at most once a second).") var watch = false

    func validate() throws {
        guard StatusQuery.SortKey(rawValue: sort) != nil else {
            throw ValidationError("--sort must be one of \(StatusQuery.SortKey.allCases.map(\.rawValue).joined(separator: ", "))")
        }
    }

    func run() async throws {
        try await failing { try await show() }
    }

    private func show() async throws -> Int32 {
        let settings = try broker.resolved()
        var query = StatusQuery()
        query.units = unit
        query.offlineOnly = offline
        query.software = version
        query.staleFixS = staleFix
        query.sort = StatusQuery.SortKey(rawValue: sort) ?? .unit
        let link = try await FleetLink.open(settings, timeoutS: 10)
        defer { link.close() }
        var state = FleetState(topics: settings.topics)
        try await link.retained(FleetTopics.stateTopics.map(settings.topics.everyUnit)) { state.take(topic: $0.topic, payload: $0.payload) }
        draw(query, state)
        guard watch else { return 0 }
        var changed = false
        var nextDraw = ContinuousClock.now + .seconds(1)
        while true {
            if let event = await link.next(before: nextDraw), case .message(let message) = event {
                changed = state.take(topic: message.topic, payload: message.payload) != nil || changed
            }
            if ContinuousClock.now >= nextDraw {
                if changed { draw(query, state) }
                changed = false
                nextDraw = ContinuousClock.now + .seconds(1)
            }
        }
    }

    private func draw(_ query: StatusQuery, _ state: FleetState) {
        let now = wallClockMs()
        let rows = query.rows(of: state, now: now)
        if json {
            print(StatusTable.json(rows, now: now).text)
        } else {
            // On a terminal the table replaces the last one; otherwise tables follow each other.
            if watch && standardOutputIsTerminal { print("\u{1B}[H\u{1B}[2J", terminator: "") }
            print(StatusTable.render(rows, now: now), terminator: watch ? "\n" : "")
        }
        fflush(nil)  // every stream: the table or line is out before the next wait
    }
}
