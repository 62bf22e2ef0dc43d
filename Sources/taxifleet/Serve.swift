import ArgumentParser
import FleetConsole
import Foundation
import Hummingbird
import StrictJSON
import Synchronization
import UnitConfig
import UnitCore

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "A live fleet page: the table, a map of the zones and taxis, and the rollout of the last push.",
        discussion: """
            Serves GET / (the page), /fleet.json (what it shows) and /events (server-sent events: the \
            same JSON whenever it changed, at most four times a second). The zones are those of the \
            fleet's retained document, or of --zones. Positions come from pos/last and live pos, so \
            the fleet account must be allowed to read pos for taxis to move between pos/last updates.
            """
    )

    @OptionGroup var broker: BrokerOptions
    @Option(name: .long, help: "Where to listen, HOST:PORT (default 127.0.0.1:8080); a host off this machine serves the fleet's positions to the network.")
    var listen: String = "127.0.0.1:8080"
    @Option(name: .long, help: "A TOML file with [[zones]] (as the units' file) for the map, used when the fleet's document has none.")
    var zones: String?

    func validate() throws {
        guard Self.address(listen) != nil else { throw ValidationError("--listen must be HOST:PORT, found \"\(listen)\"") }
    }

    static func address(_ text: String) -> (host: String, port: Int)? {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]), (1...65535).contains(port) else { return nil }
        let host = String(text[..<colon]).trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        return host.isEmpty ? nil : (host, port)
    }

    func run() async throws {
        try await failing { try await serve() }
    }

    private func serve() async throws -> Int32 {
        let settings = try broker.resolved()
        var initialZones: [FleetZone] = []
        if let zones {
            do { initialZones = FleetZone.zones(inSettings: JSONDocument(try ConfigValue.loadTOML(path: zones))) } catch {
                throw Failure(error.problems.joined(separator: "; "), exitCode: Failure.usage)
            }
        }
        let live = SharedFleet(LiveFleet(topics: settings.topics, zones: initialZones))
        let link = try await FleetLink.open(settings, timeoutS: 10)
        defer { link.close() }
        try link.subscribe(live.subscriptions)

        let router = Router()
        router.get("/") { _, _ in
            Response(status: .ok, headers: [.contentType: "text/html; charset=utf-8"], body: .init(byteBuffer: ByteBuffer(string: FleetPage.html)))
        }
        router.get("/fleet.json") { _, _ in
            Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: live.snapshot().text)))
        }
        router.get("/events") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "text/event-stream", .cacheControl: "no-store"],
                body: ResponseBody { writer in
                    var sent = -1
                    var quietSince = ContinuousClock.now
                    while !Task.isCancelled {
                        let snapshot = live.snapshot()
                        if snapshot.revision != sent {
                            try await writer.write(ByteBuffer(string: "data: \(snapshot.text)\n\n"))
                            sent = snapshot.revision
                            quietSince = .now
                        } else if ContinuousClock.now - quietSince > .seconds(15) {
                            // A comment keeps proxies from closing an idle stream.
                            try await writer.write(ByteBuffer(string: ": idle\n\n"))
                            quietSince = .now
                        }
                        try await Task.sleep(for: .milliseconds(250))
                    }
                    try await writer.finish(nil)
                })
        }
        let (host, port) = Self.address(listen)!
        let app = Application(router: router, configuration: .init(address: .hostname(host, port: port), serverName: "taxifleet"))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await app.runService() }
            group.addTask {
                while !Task.isCancelled {
                    if let event = await link.next(before: .now + .seconds(1)), case .message(let message) = event {
                        live.take(message.topic, message.payload)
                    }
                }
            }
            // The server ends on SIGINT or SIGTERM; the broker's loop with it.
            try await group.next()
            group.cancelAll()
        }
        return 0
    }
}

/// The live fleet, shared by the broker's loop and the page's requests; the JSON of a revision is
/// made once, however many pages are open.
final class SharedFleet: Sendable {
    private struct Shared {
        var fleet: LiveFleet
        var cached: (revision: Int, text: String)?
    }

    private let shared: Mutex<Shared>
    let subscriptions: [String]

    init(_ fleet: LiveFleet) {
        shared = Mutex(Shared(fleet: fleet))
        subscriptions = fleet.subscriptions
    }

    func take(_ topic: String, _ payload: [UInt8]) {
        shared.withLock { _ = $0.fleet.take(topic: topic, payload: payload) }
    }

    /// The fleet as JSON, with the revision it shows. Fix ages are those of the revision's time.
    func snapshot() -> (revision: Int, text: String) {
        shared.withLock { shared in
            if let cached = shared.cached, cached.revision == shared.fleet.revision { return cached }
            let made = (shared.fleet.revision, shared.fleet.snapshot(now: wallClockMs()).text)
            shared.cached = made
            return made
        }
    }
}
