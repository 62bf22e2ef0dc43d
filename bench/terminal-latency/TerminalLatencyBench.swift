import ControlSocket
import DriverKeys
import Foundation
import LocalCache
import Logging
import MQTTLink
import TestHarness

/// Key press on the serial terminal → `job/reply` PUBLISH seen by a subscriber on the local broker,
/// against the real daemon (release build), real mosquitto, a real SQLite file (the reply is
/// committed with synchronous=FULL before it is published) and a real PTY pair from socat.
///
/// Baselines measured in the same run: the same accept through the control socket (no serial line,
/// no noise guard), one MQTT hop between two clients on the same broker, and one synchronous=FULL
/// SQLite commit on the same disk (the floor under every reply).
@main
struct TerminalLatencyBench {
    static let presses = Int(ProcessInfo.processInfo.environment["PRESSES"] ?? "") ?? 1000
    static let targetP99Ms = 10.0
    /// The daemon's default guard on the default 9600-baud line.
    static let guardUs = TerminalKeyDecoder.quietTimeUs(characters: 2, baud: 9600)

    static func main() async throws {
        try await measure()
    }

    /// Off the main actor: the harness's waits take non-sendable closures.
    nonisolated static func measure() async throws {
        let scratch = try ScratchDirectory("taxiunitd-bench")
        let broker = try MosquittoBroker(in: scratch)
        let pair = try await SerialPair(in: scratch)
        // Offers and cancels far faster than any dispatcher sends them: above the default inbound rate.
        let unit = try UnitUnderTest(
            mqttPort: broker.port, gpsdPort: try Loopback.freePort(), in: scratch,
            extraTOML: "[input.serial]\ndevice = \"\(pair.unitPath)\"\n", mqttTOML: "inbound_per_s = 10000")
        let replies = try await Subscriber(port: broker.port, topics: [unit.topicBase + "job/reply", "bench/hop"])
        try await unit.start()
        let screen = TerminalScreen(pair: pair)
        try await unit.waitForStatus("broker connected") { $0.broker.connected }
        try await screen.press("d")
        try await screen.waitFor("on duty") { $0.rows[0].hasPrefix("AVAILABLE") }

        print("taxiunitd terminal latency: \(presses) presses each (PRESSES=n to change)")
        var serial: [Double] = []
        var control: [Double] = []
        for round in 0..<presses {
            serial.append(try await accept(job: "S\(round)", unit: unit, screen: screen, replies: replies, broker: broker) {
                try await pair.type(Array("a".utf8))
            })
        }
        for round in 0..<presses {
            control.append(try await accept(job: "C\(round)", unit: unit, screen: screen, replies: replies, broker: broker) {
                _ = try unit.request(ControlRequest(cmd: .press, input: "accept"))
            })
        }
        var hop: [Double] = []
        for round in 0..<presses {
            let sent = ContinuousClock.now
            try replies.publish("bench/hop", "{\"n\":\(round)}")
            let received = try await replies.arrival(on: "bench/hop", containing: "\"n\":\(round)}")
            hop.append((received - sent).milliseconds)
        }
        unit.stop()
        let store = try LocalCache(path: scratch.file("fsync.sqlite"))
        var commit: [Double] = []
        for round in 0..<presses {
            let started = ContinuousClock.now
            try store.write(.full) { try $0.saveValue(round, forKey: "bench") }
            commit.append((ContinuousClock.now - started).milliseconds)
        }

        print("")
        print("path".padding(toLength: 54, withPad: " ", startingAt: 0) + "  p50 ms   p99 ms   max ms")
        report("serial key 'a' → job/reply PUBLISH (FULL fsync)", serial)
        report("baseline: taxiunitctl press accept → job/reply", control)
        report("baseline: one MQTT hop, client → broker → client", hop)
        report("baseline: one synchronous=FULL SQLite commit", commit)
        let p99 = percentile(serial, 0.99)
        print("")
        print("target: p99 ≤ \(targetP99Ms) ms for the serial path: \(p99 <= targetP99Ms ? "MET" : "NOT MET") (\(format(p99)) ms)")
        print("the serial path includes the noise guard (noise_guard_chars = 2 at 9600 baud): a key counts \(format(Double(guardUs) / 1000)) ms after it arrived, once the line was seen quiet that long")
        print("load average while measuring: \((try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").prefix(3).joined(separator: " ") ?? "?")")
    }

    /// Offers a job, waits until the terminal shows it, presses, and returns ms until the reply arrived.
    static func accept(
        job: String, unit: UnitUnderTest, screen: TerminalScreen, replies: Subscriber, broker: MosquittoBroker,
        press: () async throws -> Void
    ) async throws -> Double {
        let offer = #"{"job":"\#(job)","pickup":{"lat":46.5,"lon":7.5,"address":"Bahnhofplatz 1"},"passengers":1,"respond_within_s":60}"#
        try replies.publish(unit.topicBase + "job/offer", offer)
        try await tightWait("offer \(job) on screen") { screen.refresh().rows[0].hasPrefix("NEW JOB") }
        let pressed = ContinuousClock.now
        try await press()
        let received = try await replies.arrival(on: unit.topicBase + "job/reply", containing: "\"job\":\"\(job)\"")
        try replies.publish(unit.topicBase + "job/cancel", #"{"job":"\#(job)","reason":"bench"}"#)
        try await tightWait("cancel \(job) on screen") { screen.refresh().rows[0].hasPrefix("AVAILABLE") }
        return (received - pressed).milliseconds
    }

    static func tightWait(_ what: String, timeoutS: Double = 10, _ condition: () throws -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(timeoutS)
        while ContinuousClock.now < deadline {
            if try condition() { return }
            try await Task.sleep(for: .milliseconds(1))
        }
        throw HarnessError("timed out waiting for \(what)")
    }

    static func percentile(_ values: [Double], _ fraction: Double) -> Double {
        let sorted = values.sorted()
        return sorted[min(sorted.count - 1, Int((Double(sorted.count) * fraction).rounded(.up)) - 1)]
    }

    static func format(_ value: Double) -> String { String(format: "%.2f", value) }

    static func report(_ label: String, _ values: [Double]) {
        let columns = [percentile(values, 0.5), percentile(values, 0.99), values.max() ?? 0].map { format($0).leftPadded(8) }
        print(label.padding(toLength: 54, withPad: " ", startingAt: 0) + columns.joined(separator: " "))
    }
}

/// An MQTT client that notes the instant each message arrives (the recorder in the harness keeps no times).
final class Subscriber: @unchecked Sendable {
    private let connection: MQTTConnection
    private let lock = NSLock()
    private var arrivals: [(topic: String, text: String, at: ContinuousClock.Instant)] = []
    private var connected = false

    init(port: Int, topics: [String]) async throws {
        connection = MQTTConnection(
            endpoint: MQTTEndpoint(host: "127.0.0.1", port: port, keepaliveS: 30, clientID: "bench-\(UUID().uuidString.prefix(8))", cleanSession: true),
            will: nil, backoff: ReconnectBackoff(minimumS: 0.1, maximumS: 0.5), logger: Logger(label: "bench"))
        Task { [connection, weak self] in
            for await event in connection.events {
                let now = ContinuousClock.now
                switch event {
                case .connected:
                    for topic in topics { try? connection.subscribe(topic, qos: 1) }
                    self?.lock.withLock { self?.connected = true }
                case .message(let message):
                    self?.lock.withLock { self?.arrivals.append((message.topic, String(decoding: message.payload, as: UTF8.self), now)) }
                default:
                    break
                }
            }
        }
        connection.start()
        try await waitUntil("bench subscriber connected", timeoutS: 10) { lock.withLock { connected } }
        try await Task.sleep(for: .milliseconds(200))
    }

    func publish(_ topic: String, _ payload: String) throws {
        _ = try connection.publish(topic: topic, payload: Array(payload.utf8), qos: 1, retain: false)
    }

    func arrival(on topic: String, containing text: String, timeoutS: Double = 10) async throws -> ContinuousClock.Instant {
        var found: ContinuousClock.Instant?
        try await TerminalLatencyBench.tightWait("\(text) on \(topic)", timeoutS: timeoutS) {
            found = lock.withLock { arrivals.first { $0.topic == topic && $0.text.contains(text) }?.at }
            return found != nil
        }
        return found!
    }
}

extension Duration {
    var milliseconds: Double { Double(components.seconds) * 1000 + Double(components.attoseconds) / 1e15 }
}

extension String {
    func leftPadded(_ width: Int) -> String { String(repeating: " ", count: max(0, width - count)) + self }
}
