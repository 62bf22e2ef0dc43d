import ControlSocket
import Foundation
import GPSReader
import LocalCache
import Logging
@testable import MQTTLink
import TaxiProtocol
import TestHarness
import UnitConfig
import UnitCore
@testable import UnitRuntime

/// A broker that records what the engine hands it and lets a test say what the broker does:
/// accept the connection, drop it, acknowledge a publish, deliver a message. The engine sees the
/// same `BrokerLink.Event`s a real connection produces (async-http-client tests its connection pool
/// this way; the real-parts tests stay beside these).
final class RecordingBroker: BrokerPort, @unchecked Sendable {
    struct Publish: Sendable {
        var topic: String
        var payload: [UInt8]
        var retain: Bool
        var ticket: MQTTPublishTicket

        var json: [String: Any] { (try? JSONSerialization.jsonObject(with: Data(payload))) as? [String: Any] ?? [:] }
    }

    private let lock = NSLock()
    private var deliver: @Sendable (BrokerLink.Event) -> Void = { _ in }
    private var generation = 0
    private var acceptedGeneration = 0
    private var session: MQTTSessionID = 0
    private var connected = false
    private var nextMessageID: Int32 = 0
    private var recorded: [Publish] = []
    private var connectedWith: [UnitConfiguration] = []
    private var subscribed: Set<String> = []

    var published: [Publish] { lock.withLock { recorded } }
    /// What the engine is subscribed to; a session of this broker keeps it over connections.
    var subscriptions: Set<String> { lock.withLock { subscribed } }
    /// The configuration of every connection the engine asked for, oldest first.
    var connections: [UnitConfiguration] { lock.withLock { connectedWith } }
    /// The engine asked for a connection the test has not accepted yet.
    var connectionPending: Bool { lock.withLock { acceptedGeneration != generation } }

    func deliverEvents(to handler: @escaping @Sendable (BrokerLink.Event) -> Void) {
        lock.withLock { deliver = handler }
    }

    func connect(_ configuration: UnitConfiguration) -> Int {
        lock.withLock {
            generation += 1
            connected = false
            connectedWith.append(configuration)
            return generation
        }
    }

    func publish(topic: String, payload: [UInt8], qos: Int32, retain: Bool) throws(MQTTLinkError) -> MQTTPublishTicket {
        lock.lock()
        defer { lock.unlock() }
        guard connected else { throw .notConnected }
        nextMessageID += 1
        let ticket = MQTTPublishTicket(session: session, messageID: nextMessageID)
        recorded.append(Publish(topic: topic, payload: payload, retain: retain, ticket: ticket))
        return ticket
    }

    func subscribe(_ pattern: String, qos: Int32) throws(MQTTLinkError) {
        lock.lock()
        defer { lock.unlock() }
        guard connected else { throw .notConnected }
        subscribed.insert(pattern)
    }

    func unsubscribe(_ pattern: String) throws(MQTTLinkError) {
        lock.lock()
        defer { lock.unlock() }
        guard connected else { throw .notConnected }
        subscribed.remove(pattern)
    }

    func dropConnection() {}
    func restartLoopIfSilent(longerThan limit: Duration) {}

    // What the broker does, as the test says.

    /// The session holds `pattern` from an earlier run of the unit.
    func holdInSession(_ pattern: String) {
        lock.withLock { _ = subscribed.insert(pattern) }
    }

    func acceptConnection() {
        let (event, deliver) = lock.withLock {
            session += 1
            connected = true
            acceptedGeneration = generation
            return (BrokerLink.Event(generation: generation, event: .connected(session)), self.deliver)
        }
        deliver(event)
    }

    func loseConnection() {
        let (event, deliver) = lock.withLock {
            connected = false
            return (BrokerLink.Event(generation: generation, event: .disconnected(session, reason: "test")), self.deliver)
        }
        deliver(event)
    }

    func acknowledge(_ publish: Publish) {
        let (event, deliver) = lock.withLock { (BrokerLink.Event(generation: generation, event: .published(publish.ticket)), self.deliver) }
        deliver(event)
    }

    func receive(_ topic: String, _ json: String, retained: Bool = false) {
        let message = MQTTMessage(topic: topic, payload: Array(json.utf8), qos: 1, retained: retained)
        let (event, deliver) = lock.withLock { (BrokerLink.Event(generation: generation, event: .message(message)), self.deliver) }
        deliver(event)
    }
}

/// gpsd, as far as the engine is concerned: fixes handed over on the test's word.
final class ScriptedFixes: FixSource, @unchecked Sendable {
    private let lock = NSLock()
    private var deliver: @Sendable (GPSDEvent) -> Void = { _ in }

    func deliverEvents(to handler: @escaping @Sendable (GPSDEvent) -> Void) {
        lock.withLock { deliver = handler }
    }

    /// A 3D fix at the current time.
    func fix(latitude: Double, longitude: Double) {
        send(GPSSample(mode: 3, time: Date().timeIntervalSince1970, latitude: latitude, longitude: longitude, speed: 5, track: 90, horizontalError: 3))
    }

    func send(_ sample: GPSSample) {
        let deliver = lock.withLock { self.deliver }
        deliver(.sample(sample))
    }
}

/// One engine on a real SQLite file, run in-process against `RecordingBroker` and `ScriptedFixes`.
final class EngineUnderTest {
    let scratch: ScratchDirectory
    let store: LocalCache
    let broker = RecordingBroker()
    let fixes = ScriptedFixes()
    let engine: UnitEngine
    let devices: DriverDeviceSet?
    let topicBase: String
    private var running: Task<Void, Never>?

    /// `settings`: TOML laid under `[unit] id = "T1"`, `fleet = "f"` (sections of their own).
    /// `logs`: where the engine logs, at every level; `devices`: the driver's devices the settings name.
    init(_ settings: String = "", logs: LogRecorder? = nil, devices: Bool = false, prepare: (LocalCache) throws -> Void = { _ in }) throws {
        scratch = try ScratchDirectory("engine")
        store = try LocalCache(path: scratch.file("unit.sqlite"))
        try prepare(store)
        let local = try ConfigValue.parseTOML("[unit]\nid = \"T1\"\nfleet = \"f\"\n" + settings)
        let configuration = try UnitConfiguration(document: local)
        topicBase = configuration.unitTopicBase
        var logger = logs?.logger ?? Logger(label: "engine-test")
        logger.logLevel = logs == nil ? .critical : .trace
        self.devices = devices ? DriverDeviceSet(configuration: configuration, logger: logger) : nil
        engine = try UnitEngine(local: local, store: store, broker: broker, fixes: fixes, logger: logger, devices: self.devices)
    }

    func start() async throws {
        let engine = self.engine
        devices?.badgeReader?.start()
        devices?.ignition?.start()
        running = Task { try? await engine.run() }
        try await eventually("the engine loop waits for input", within: 60) { engine.inbox.hasParkedConsumer }
    }

    /// Stops the loop (offline first: no offline status to wait for) and waits for it.
    func stop() async {
        broker.loseConnection()
        engine.inbox.post(.shutdownRequested)
        await running?.value
        devices?.badgeReader?.stop()
        devices?.ignition?.stop()
    }

    func control(_ request: ControlRequest) async throws -> ControlResponse {
        let answer = await engine.handleControl(Array(try JSONEncoder().encode(request)))
        return try JSONDecoder().decode(ControlResponse.self, from: Data(answer))
    }

    @discardableResult
    func press(_ input: String) async throws -> ControlResponse {
        try await control(ControlRequest(cmd: .press, input: input))
    }

    func status() async throws -> ControlStatus {
        guard let status = try await control(ControlRequest(cmd: .status)).status else { throw HarnessError("no status in the answer") }
        return status
    }

    /// What was published on `suffix` below the unit's topic base.
    func published(on suffix: String) -> [RecordingBroker.Publish] {
        broker.published.filter { $0.topic == topicBase + suffix }
    }

    /// Polls `condition` every 5 ms for up to `seconds`: a bound for a loaded machine, not a timing
    /// assertion (conditions hold within milliseconds).
    func eventually(_ what: String, within seconds: Double = 20, _ condition: () async throws -> Bool) async throws {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while ContinuousClock.now < deadline {
            if try await condition() { return }
            try await Task.sleep(for: .milliseconds(5))
        }
        throw HarnessError("timed out waiting until \(what)")
    }
}

/// The store holds an open shift that started `hoursAgo`, with `drivingHours` of continuous driving:
/// going on duty then starts none (a single event), and limits can be reached without waiting.
func storeWithAnOpenShift(hoursAgo: Int64 = 0, drivingHours: Int64 = 0) -> @Sendable (LocalCache) throws -> Void {
    { store in
        var snapshot = UnitSnapshot()
        let driving = Duration.seconds(drivingHours * 3600)
        snapshot.shift = Shift(startedAt: TestClock.now() - .seconds(hoursAgo * 3600), driving: driving, continuousDriving: driving)
        try store.write { transaction in try transaction.saveValue(snapshot, forKey: UnitEngine.snapshotKey) }
    }
}
