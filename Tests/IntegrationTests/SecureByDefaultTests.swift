import ControlSocket
import Foundation
import Logging
import MQTTLink
import TaxiProtocol
import TestHarness
import Testing
import UnitCore

// Secure by default, on the real parts: mosquitto with the shipped ACL, the daemon, taxiunitctl, openssl.

/// One logged-in connection of the project's libmosquitto adapter, recording what it receives.
final class Account: @unchecked Sendable {
    let connection: MQTTConnection
    private let lock = NSLock()
    private var received: [MQTTMessage] = []
    private var disconnections = 0
    private var connections = 0
    private var pump: Task<Void, Never>?

    /// `tls`: where the broker takes the login from the client certificate, the username is ignored.
    init(_ username: String, port: Int, clientID: String? = nil, tls: MQTTTLS? = nil, subscribe topics: [String] = []) async throws {
        connection = MQTTConnection(
            endpoint: MQTTEndpoint(
                host: "127.0.0.1", port: port, keepaliveS: 10, clientID: clientID ?? "acl-\(username)", cleanSession: true,
                tls: tls, credentials: MQTTCredentials(username: username, password: "pw-\(username)")),
            will: nil, backoff: ReconnectBackoff(minimumS: 5, maximumS: 5), logger: Logger(label: "acl-\(username)"))
        pump = Task { [connection, weak self] in
            for await event in connection.events {
                switch event {
                case .connected:
                    for topic in topics { try? connection.subscribe(topic, qos: 1) }
                    self?.lock.withLock { self?.connections += 1 }
                case .disconnected:
                    self?.lock.withLock { self?.disconnections += 1 }
                case .message(let message):
                    self?.lock.withLock { self?.received.append(message) }
                default:
                    break
                }
            }
        }
        connection.start()
        try await waitUntil("\(username) connected", timeoutS: 10) { lock.withLock { connections > 0 } }
        // SUBACK is not reported; give the broker a moment to register the subscriptions.
        try await Task.sleep(for: .milliseconds(300))
    }

    var messages: [MQTTMessage] { lock.withLock { received } }
    var wasDisconnected: Bool { lock.withLock { disconnections > 0 } }

    func publish(_ topic: String, _ payload: String) throws {
        _ = try connection.publish(topic: topic, payload: Array(payload.utf8), qos: 1, retain: false)
    }

    func stop() {
        connection.stop()
        pump?.cancel()
    }

    deinit { stop() }
}

/// A real mosquitto with `etc/mosquitto-acl.example` (`extraACL` after it) and the listener
/// settings of `etc/mosquitto.conf.example` that are not paths (those are the scratch directory's
/// here); each account's password is `pw-{account}`.
func exampleBroker(in scratch: ScratchDirectory, accounts: [String], extraACL: String) throws -> MosquittoBroker {
    let passwords = scratch.file("taxi.passwd")
    guard FileManager.default.createFile(atPath: passwords, contents: nil) else { throw HarnessError("cannot create \(passwords)") }
    for account in accounts {
        let made = try runCommand("/usr/bin/mosquitto_passwd", ["-b", passwords, account, "pw-\(account)"])
        guard made.exitCode == 0 else { throw HarnessError("mosquitto_passwd: \(made.output)") }
    }
    let acl = scratch.file("taxi.acl")
    let example = try String(contentsOfFile: Corpus.packageRoot + "/etc/mosquitto-acl.example", encoding: .utf8)
    try (example + "\n" + extraACL + "\n").write(toFile: acl, atomically: true, encoding: .utf8)
    let listener = try String(contentsOfFile: Corpus.packageRoot + "/etc/mosquitto.conf.example", encoding: .utf8)
        .split(separator: "\n").map(String.init)
        .filter { line in ["allow_anonymous ", "use_username_as_clientid ", "per_listener_settings ", "max_packet_size "].contains { line.hasPrefix($0) } }
    guard listener.contains("use_username_as_clientid true") else { throw HarnessError("the example listener does not tie client ids to usernames") }
    return try MosquittoBroker(in: scratch, listenerSettings: (listener + ["password_file \(passwords)", "acl_file \(acl)"]).joined(separator: "\n"))
}

/// `etc/mosquitto-acl.example` and the listener settings of `etc/mosquitto.conf.example` in a real
/// mosquitto, with a password file for two units, their OwnTracks feeds, `dispatcher` and `fleet`.
/// What each account may do comes from the unit's one topic catalogue (`ContractTopic`), never from a
/// list kept here.
@Suite(.serialized) struct BrokerACLTests {
    let scratch: ScratchDirectory
    let broker: MosquittoBroker
    static let units = ["T1", "T2"]
    /// Each unit's OwnTracks feed account, in the same order.
    static let feeds = units.map { OwnTracksFeedAccount.usernameTemplate.replacing("{fleet}", with: "north").replacing("{unit}", with: $0) }
    /// The zone the zone broadcasts are tried with.
    static let zone = "Z1"
    /// Every topic of the contract, for both units (the fleet-wide ones once).
    static let topics = Array(Set(units.flatMap { unit in ContractTopic.allCases.map { $0.topic(prefix: "taxi", fleet: "north", unit: unit, zone: zone) } })).sorted()

    /// The catalogue entry and the unit a topic of `topics` belongs to (nil for the fleet-wide ones).
    static func entry(_ topic: String) -> (ContractTopic, unit: String?) {
        for unit in units {
            for entry in ContractTopic.allCases where entry.topic(prefix: "taxi", fleet: "north", unit: unit, zone: zone) == topic {
                return (entry, entry.isFleetWide ? nil : unit)
            }
        }
        fatalError("\(topic) is not in the catalogue")
    }

    static func party(_ account: String) -> ContractTopic.Party {
        feeds.contains(account) ? .ownTracksFeed : ContractTopic.Party(rawValue: account) ?? .unit
    }

    /// The unit a unit's or a feed's account belongs to; nil for the dispatcher and the fleet.
    static func ownUnit(_ account: String) -> String? {
        switch party(account) {
        case .unit: account
        case .ownTracksFeed: feeds.firstIndex(of: account).map { units[$0] }
        case .dispatcher, .fleet: nil
        }
    }

    /// A unit's and a feed's account act only on their unit's topics (and read the fleet-wide
    /// config); the dispatcher and the fleet on every unit's.
    static func mayPublish(_ account: String, _ topic: String) -> Bool {
        let (entry, unit) = entry(topic)
        return entry.publisher == party(account) && (ownUnit(account) == nil || unit == ownUnit(account))
    }

    static func mayRead(_ account: String, _ topic: String) -> Bool {
        let (entry, unit) = entry(topic)
        return entry.readers.contains(party(account)) && (ownUnit(account) == nil || unit == nil || unit == ownUnit(account))
    }

    /// The rules the catalogue calls for, as mosquitto writes them: `pattern` lines for every unit
    /// and feed, `topic` lines under each other account's `user`. A feed's topic is `owntracks/`
    /// and its username.
    static var rulesFromTheCatalogue: Set<String> {
        var rules: Set<String> = []
        for entry in ContractTopic.allCases {
            let unitTopic = switch entry {
            case .ownTracks: OwnTracksFeedAccount.topicTemplate.replacing(OwnTracksFeedAccount.usernameTemplate, with: "%u")
            default: entry.topic(prefix: "taxi", fleet: "+", unit: "%u", zone: "+")
            }
            let anyUnitTopic = entry.topic(prefix: "taxi", fleet: "+", unit: "+", zone: "+")
            switch entry.publisher {
            case .unit, .ownTracksFeed: rules.insert("pattern write \(unitTopic)")
            case .dispatcher, .fleet: rules.insert("user \(entry.publisher.rawValue): topic write \(anyUnitTopic)")
            }
            for reader in entry.readers.sorted(by: { $0.rawValue < $1.rawValue }) {
                switch reader {
                case .unit, .ownTracksFeed: rules.insert("pattern read \(unitTopic)")
                // The fleet-wide topics' pattern lines already let every login read them.
                case .dispatcher, .fleet: if !entry.isFleetWide { rules.insert("user \(reader.rawValue): topic read \(anyUnitTopic)") }
                }
            }
        }
        return rules
    }

    /// The example's rules, each `topic` line with the `user` it is under.
    static func rulesOfTheExample() throws -> Set<String> {
        let text = try String(contentsOfFile: Corpus.packageRoot + "/etc/mosquitto-acl.example", encoding: .utf8)
        var user: String?
        var rules: Set<String> = []
        for line in text.split(separator: "\n").map({ $0.trimmingCharacters(in: .whitespaces) }) where !line.isEmpty && !line.hasPrefix("#") {
            if line.hasPrefix("user ") {
                user = String(line.dropFirst(5))
            } else if line.hasPrefix("topic "), let user {
                rules.insert("user \(user): \(line)")
            } else {
                rules.insert(line)
            }
        }
        return rules
    }

    /// The shipped ACL is exactly what the catalogue calls for: nothing missing, nothing more.
    @Test func theExampleACLIsTheCataloguesRules() throws {
        let example = try Self.rulesOfTheExample()
        let derived = Self.rulesFromTheCatalogue
        #expect(example == derived, "missing \(derived.subtracting(example).sorted()), extra \(example.subtracting(derived).sorted())")
    }

    /// The catalogue is the docs' table of topics, row by row, and holds every suffix the unit uses.
    @Test func theCatalogueIsTheDocumentedTableAndCoversTheCode() throws {
        let protocolText = try String(contentsOfFile: Corpus.packageRoot + "/docs/protocol.md", encoding: .utf8)
        let table = try #require(protocolText.components(separatedBy: "\n## Topics\n").last?.components(separatedBy: "\n\n").first { $0.hasPrefix("| topic |") })
        let rows = table.split(separator: "\n").dropFirst(2).map { $0.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) } }
        let documented = rows.map { "\($0[0]) \($0[1]) \($0[2]) \($0[3])" }
        let catalogued = ContractTopic.allCases.map { entry in
            let topic = switch entry {
            case .ownTracks: "`\(OwnTracksFeedAccount.topicTemplate)`"
            default: entry.isFleetWide ? "`\(entry.topic(prefix: "{prefix}", fleet: "{fleet}", unit: "", zone: "{zone}"))`" : "`…/\(entry.suffix)`"
            }
            let direction = switch entry.publisher {
            case .unit: "unit → \(entry.readers.map(\.rawValue).sorted().joined(separator: ", "))"
            case .dispatcher where entry == .zoneMsg: "dispatcher → every unit in the zone"
            case .dispatcher where entry.isFleetWide: "dispatcher → every unit"
            case .dispatcher: "dispatcher → \(entry.readers.map(\.rawValue).sorted().joined(separator: ", "))"
            case .fleet: entry.isFleetWide ? "fleet → every unit" : "fleet → this unit"
            case .ownTracksFeed: "unit's owntracks feed → map tools"
            }
            return "\(topic) \(direction) \(entry.qos) \(entry.retained ? "yes" : "no")"
        }
        #expect(documented == catalogued)
        let suffixes = Set(ContractTopic.allCases.filter(\.isUnitTopic).map(\.suffix))
        let used = UnitTopic.allCases.map(\.rawValue) + InboundTopic.allCases.map(\.rawValue) + MessageTopic.allCases.map(\.rawValue) + [RideMessage.topic, DriverLogout.topic.suffix]
        #expect(Set(used) == suffixes, "in the code, not catalogued: \(Set(used).subtracting(suffixes).sorted()); catalogued, not used: \(suffixes.subtracting(used).sorted())")
    }

    init() throws {
        scratch = try ScratchDirectory()
        // Test instruments, not part of the example: `observer` sees every publish that got through,
        // `admin` publishes what each account's subscriptions are tried with.
        broker = try exampleBroker(
            in: scratch, accounts: Self.units + Self.feeds + ["dispatcher", "fleet", "observer", "admin"],
            extraACL: "user observer\ntopic read #\nuser admin\ntopic write #")
    }

    /// Every documented topic (of T1, of T2 and the fleet's) x {T1, T2, their OwnTracks feeds,
    /// dispatcher, fleet} x {publish, subscribe}, against what the catalogue allows.
    @Test func everyAllowedAndForbiddenPublishAndSubscribe() async throws {
        let accounts = Self.units + Self.feeds + ["dispatcher", "fleet"]
        var connected: [String: Account] = [:]
        for account in accounts {
            connected[account] = try await Account(account, port: broker.port, subscribe: Self.topics)
        }
        let observer = try await Account("observer", port: broker.port, subscribe: ["#"])
        let admin = try await Account("admin", port: broker.port)

        // Subscriptions: admin publishes on every topic; each account must get exactly what it may read.
        for topic in Self.topics { try admin.publish(topic, "admin|\(topic)") }
        try await waitUntil("the observer to see admin's publishes", timeoutS: 10) {
            observer.messages.filter { $0.text.hasPrefix("admin|") }.count == Self.topics.count
        }
        try await Task.sleep(for: .milliseconds(500))
        for account in accounts {
            let got = Set(connected[account]!.messages.filter { $0.text.hasPrefix("admin|") }.map(\.topic))
            let expected = Set(Self.topics.filter { Self.mayRead(account, $0) })
            #expect(got == expected, "\(account) reads: extra \(got.subtracting(expected).sorted()), missing \(expected.subtracting(got).sorted())")
        }

        // Publishes: each account publishes on every topic; the observer sees only what it may publish.
        for account in accounts {
            for topic in Self.topics { try connected[account]!.publish(topic, "\(account)|\(topic)") }
        }
        let allowed = accounts.flatMap { account in Self.topics.filter { Self.mayPublish(account, $0) }.map { "\(account)|\($0)" } }
        try await waitUntil("the allowed publishes to arrive", timeoutS: 10) {
            Set(observer.messages.map(\.text)).isSuperset(of: allowed)
        }
        // A QoS 1 publish is acknowledged in order; give forbidden ones as long to (not) show up.
        try await Task.sleep(for: .milliseconds(500))
        for account in accounts {
            let got = Set(observer.messages.filter { $0.text.hasPrefix("\(account)|") }.map(\.topic))
            let expected = Set(Self.topics.filter { Self.mayPublish(account, $0) })
            #expect(got == expected, "\(account) publishes: extra \(got.subtracting(expected).sorted()), missing \(expected.subtracting(got).sorted())")
        }
        #expect(Set(allowed.map { String($0.split(separator: "|")[0]) }) == Set(accounts), "every account may publish something")
        for account in connected.values { account.stop() }
    }

    /// The example's `max_packet_size`: a fleet document of the largest size a unit reads gets
    /// through, a message far over it never reaches anyone.
    @Test func theBrokerRefusesAPacketOverTheExamplesLimit() async throws {
        let observer = try await Account("observer", port: broker.port, subscribe: ["#"])
        let admin = try await Account("admin", port: broker.port)
        let largest = String(repeating: "x", count: 64 * 1024)
        try admin.publish("taxi/north/config", largest)
        try await waitUntil("the 64 KiB document", timeoutS: 10) { observer.messages.contains { $0.payload.count == largest.utf8.count } }
        // An MQTT 5 client hears the limit in the CONNACK and does not even send it.
        let fleet = try await Account("fleet", port: broker.port)
        #expect(throws: MQTTLinkError.self) { try fleet.publish("taxi/north/T1/config", String(repeating: "y", count: 200 * 1024)) }
        // A 3.1.1 client hears nothing: the broker refuses the packet and drops the client.
        let big = scratch.file("big.json")
        try String(repeating: "z", count: 200 * 1024).write(toFile: big, atomically: true, encoding: .utf8)
        let sent = try runCommand("/usr/bin/mosquitto_pub", [
            "-p", "\(broker.port)", "-V", "mqttv311", "-u", "fleet", "-P", "pw-fleet", "-q", "1", "-t", "taxi/north/T1/config", "-f", big,
        ])
        #expect(sent.exitCode != 0, "\(sent.output)")
        try admin.publish("taxi/north/T1/status", "after")
        try await waitUntil("a later message", timeoutS: 10) { observer.messages.contains { $0.text == "after" } }
        #expect(!observer.messages.contains { $0.payload.count >= 200 * 1024 })
        for account in [observer, admin, fleet] { account.stop() }
    }

    /// A real unit logged in as T1 behind the shipped ACL: every message kind it publishes reaches
    /// the account the catalogue says reads it, and every kind addressed to it reaches it.
    @Test func aRealUnitDeliversEveryMessageKindThroughTheShippedACL() async throws {
        let signer = try FleetSigner(in: scratch)
        let gps = try FakeGPS(log: Corpus.log(Corpus.steadyLog), in: scratch, cycleS: 0.1)
        let passwordFile = scratch.file("T1.password")
        try "pw-T1\n".write(toFile: passwordFile, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: passwordFile)
        let unit = try UnitUnderTest(
            unitID: "T1", fleet: "north", mqttPort: broker.port, gpsdPort: gps.port, in: scratch,
            extraTOML: signer.fleetSection() + "\n[telemetry]\ninterval_s = 1\n\n[[zones]]\nid = \"\(Self.zone)\"\n"
                + "polygon = [[41.56, -93.76], [41.56, -93.74], [41.59, -93.74], [41.59, -93.76]]\n",
            mqttTOML: "username = \"T1\"\npassword_file = \"\(passwordFile)\"")
        func readable(by party: ContractTopic.Party) -> [String] {
            ContractTopic.allCases.filter { $0.readers.contains(party) && $0.isUnitTopic }.map { $0.topic(prefix: "taxi", fleet: "north", unit: "T1") }
        }
        let dispatcher = try await Account("dispatcher", port: broker.port, subscribe: readable(by: .dispatcher))
        let fleet = try await Account("fleet", port: broker.port, subscribe: readable(by: .fleet))
        let base = unit.topicBase
        func press(_ words: String) throws {
            let response = try unit.request(ControlRequest(cmd: .press, input: words))
            guard response.ok else { throw HarnessError("press \(words): \(response.error ?? "refused")") }
        }
        func json(_ account: Account, _ suffix: String) -> [[String: Any]] {
            account.messages.filter { $0.topic == base + suffix }.compactMap(\.json)
        }
        func nowMs() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

        try await unit.start()
        try await unit.waitForStatus("a fix and the broker") { $0.gps.lastFixTime != nil && $0.broker.connected }
        try press("duty")
        try await unit.waitForStatus("available") { $0.state == "available" }
        try dispatcher.publish(base + "queue", #"{"of":3,"position":1,"zone":"Z"}"#)
        try dispatcher.publish(base + "job/offer", #"{"job":"J1","pickup":{"lat":41.5778,"lon":-93.7471,"address":"Main St 1"}}"#)
        try await unit.waitForStatus("offered") { $0.state == "offered" }
        try press("accept")
        try dispatcher.publish(base + "job/update", #"{"job":"J1","note":"Ring twice"}"#)
        try press("arrived")
        try press("pob 1")
        try press("clear")
        try await unit.waitForStatus("available after the ride") { $0.state == "available" }
        try dispatcher.publish(base + "job/offer", #"{"job":"J2","pickup":{"lat":41.5778,"lon":-93.7471,"address":"Main St 1"}}"#)
        try await unit.waitForStatus("offered J2") { $0.state == "offered" }
        try dispatcher.publish(base + "job/cancel", #"{"job":"J2"}"#)
        try await unit.waitForStatus("J2 cancelled") { $0.state == "available" }
        try dispatcher.publish(base + "msg", #"{"id":"m1","text":"Call the office","replies":["OK"],"t":\#(nowMs())}"#)
        try await waitUntil("the message kept", timeoutS: 20, detail: { unit.log }) { unit.log.contains("topic=msg") }
        try press("msg")
        try press("reply 1")
        try press("send")
        // Nobody is logged in: the unit answers logout_refused on event.
        try dispatcher.publish(base + "driver/logout", #"{"driver":"D9","elsewhere":"T2","id":"out-1","reason":"logged_in_elsewhere"}"#)
        try await unit.waitForStatus("in the zone") { $0.zone == Self.zone }
        try dispatcher.publish(ContractTopic.fleetMsg.topic(prefix: "taxi", fleet: "north", unit: "T1"), #"{"id":"b1","text":"Fleet news"}"#)
        try dispatcher.publish(
            ContractTopic.zoneMsg.topic(prefix: "taxi", fleet: "north", unit: "T1", zone: Self.zone), #"{"id":"b2","text":"Zone news"}"#)
        try press("sos")
        try await waitUntil("the alarm", timeoutS: 20) { !json(dispatcher, "sos").isEmpty }
        let alarm = try #require(json(dispatcher, "sos").first)
        try dispatcher.publish(base + "sos/ack", #"{"id":"\#(alarm["id"] as? String ?? "")"}"#)
        let configTopic = "taxi/north/config"
        try fleet.publish(configTopic, try signer.sign(#"{"version":1,"settings":{"reporting":{"interval_s":2}}}"#, topic: configTopic))
        try fleet.publish(base + "config", try signer.sign(#"{"version":1,"settings":{"reporting":{"interval_s":3}}}"#, topic: base + "config"))
        try fleet.publish(base + "cmd", try signer.sign(#"{"id":"c1","cmd":"report","expires_at":\#(nowMs() + 60_000)}"#, topic: base + "cmd"))

        // Every kind the unit publishes, at the account that reads it.
        for entry in ContractTopic.allCases where entry.publisher == .unit {
            let reader = entry.readers.contains(.dispatcher) ? dispatcher : fleet
            try await waitUntil("\(entry.suffix) at its reader", timeoutS: 30, detail: { unit.log }) { !json(reader, entry.suffix).isEmpty }
        }
        #expect(json(fleet, "config/ack").count == 2 && json(fleet, "config/ack").allSatisfy { $0["result"] as? String == "applied" })
        #expect(json(fleet, "cmd/reply").first?["result"] as? String == "ok")
        #expect(json(dispatcher, "job/reply").contains { $0["job"] as? String == "J1" && $0["reply"] as? String == "accept" })
        #expect(json(dispatcher, "ride").first?["job"] as? String == "J1")
        #expect(json(dispatcher, "msg/read").first?["msg"] as? String == "m1")
        #expect(json(dispatcher, "msg/reply").first?["msg"] as? String == "m1")
        // Every kind addressed to the unit reached it (each is logged as received, by its name in the catalogue).
        let received = unit.log.split(separator: "\n").filter { $0.contains(" received ") }
        for entry in ContractTopic.allCases where entry.readers.contains(.unit) && entry.publisher == .dispatcher {
            #expect(received.contains { $0.hasSuffix("topic=\(entry.rawValue)") || $0.contains("topic=\(entry.rawValue) ") }, "\(entry.rawValue) never reached the unit")
        }
        try await unit.waitForStatus("the alarm acknowledged and nothing waiting") { status in
            !status.sosPending && status.outbox.alarm + status.outbox.reply + status.outbox.event == 0
        }
        #expect(!unit.log.contains("not authorised") && !unit.log.contains("0x87"), "\(unit.log)")
        unit.stop()
        dispatcher.stop()
        fleet.stop()
    }

    /// A private file holding `text`, as the daemon wants its secrets.
    func secret(_ name: String, _ text: String) throws -> String {
        let path = scratch.file(name)
        try (text + "\n").write(toFile: path, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        return path
    }

    /// T1 with `[owntracks]`, logged in as T1 and its feed as `north/T1` with `feedPassword`.
    func ownTracksUnit(gps: FakeGPS, feedPassword: String) throws -> UnitUnderTest {
        try UnitUnderTest(
            unitID: "T1", fleet: "north", mqttPort: broker.port, gpsdPort: gps.port, in: scratch,
            extraTOML: "[owntracks]\nenabled = true\npassword_file = \"\(try secret("feed.password", feedPassword))\"\n",
            reportingIntervalS: 0.2,
            mqttTOML: "username = \"T1\"\npassword_file = \"\(try secret("T1.password", "pw-T1"))\"")
    }

    /// The feed logs in as its own account: its locations get through the shipped ACL, and so does
    /// its will, which the broker publishes when the unit is killed.
    @Test func aUnitsOwnTracksFeedAndItsWillPassTheShippedACL() async throws {
        let gps = try FakeGPS(log: Corpus.log(Corpus.steadyLog), in: scratch, cycleS: 0.1)
        let feed = try #require(Self.feeds.first)
        let unit = try ownTracksUnit(gps: gps, feedPassword: "pw-\(feed)")
        let topic = ContractTopic.ownTracks.topic(prefix: "taxi", fleet: "north", unit: "T1")
        let observer = try await Account("observer", port: broker.port, subscribe: [topic, unit.topicBase + "status"])
        try await unit.start()
        try await waitUntil("a location on the feed's topic", timeoutS: 30, detail: { unit.log }) {
            observer.messages.contains { $0.topic == topic && $0.json?["_type"] as? String == "location" }
        }
        #expect(!observer.messages.contains { $0.topic == topic && $0.json?["_type"] as? String == "lwt" })
        unit.killHard()
        try await waitUntil("the broker's lwt", timeoutS: 20) {
            observer.messages.contains { $0.topic == topic && $0.json?["_type"] as? String == "lwt" }
        }
        #expect(!unit.log.contains("OwnTracks feed cannot connect"), "\(unit.log)")
        observer.stop()
    }

    /// A feed the broker refuses leaves the unit's own link alone: positions go out on `pos`, the
    /// status stays online, and the refusal is logged once however often the feed retries.
    @Test func aRefusedOwnTracksLoginLeavesTheUnitsLinkAlone() async throws {
        let gps = try FakeGPS(log: Corpus.log(Corpus.steadyLog), in: scratch, cycleS: 0.1)
        let unit = try ownTracksUnit(gps: gps, feedPassword: "not-the-password")
        let ownTracks = ContractTopic.ownTracks.topic(prefix: "taxi", fleet: "north", unit: "T1")
        let observer = try await Account("observer", port: broker.port, subscribe: [ownTracks, unit.topicBase + "status", unit.topicBase + "pos"])
        try await unit.start()
        try await waitUntil("the refusal logged", timeoutS: 30, detail: { unit.log }) { unit.log.contains("OwnTracks feed cannot connect") }
        let positionsThen = observer.messages.filter { $0.topic == unit.topicBase + "pos" }.count
        // Several attempts of the feed (its backoff is 0.2 to 1 s), while positions keep going out.
        try await waitUntil("more positions on pos", timeoutS: 30) {
            observer.messages.filter { $0.topic == unit.topicBase + "pos" }.count >= positionsThen + 5
        }
        try await Task.sleep(for: .seconds(3))
        let status = try unit.status()
        #expect(status.broker.connected)
        #expect(status.broker.lastError == nil, "\(String(describing: status.broker.lastError))")
        let statuses = observer.messages.filter { $0.topic == unit.topicBase + "status" }.compactMap { $0.json?["online"] as? Bool }
        #expect(statuses.contains(true) && !statuses.contains(false), "\(statuses)")
        #expect(unit.log.components(separatedBy: "OwnTracks feed cannot connect").count == 2, "\(unit.log)")
        #expect(!observer.messages.contains { $0.topic == ownTracks })
        unit.stop()
        observer.stop()
    }

    @Test func aUnitsCredentialsCannotConnectUnderAnotherUnitsClientID() async throws {
        // T2 as the daemon connects: client id taxiunitd-{fleet}-{unit}, persistent session.
        let victim = try await Account("T2", port: broker.port, clientID: "taxiunitd-north-T2", subscribe: ["taxi/north/T2/job/offer"])
        let dispatcher = try await Account("dispatcher", port: broker.port)
        let observer = try await Account("observer", port: broker.port, subscribe: ["#"])
        // T1's login with T2's client id, and with T2's username as client id.
        for stolen in ["taxiunitd-north-T2", "T2"] {
            let intruder = try await Account("T1", port: broker.port, clientID: stolen, subscribe: ["taxi/north/T2/job/offer"])
            try dispatcher.publish("taxi/north/T2/job/offer", "offer via \(stolen)")
            try await waitUntil("T2 to get the offer", timeoutS: 10) { victim.messages.contains { $0.text == "offer via \(stolen)" } }
            #expect(!victim.wasDisconnected, "T1 took T2's session over with client id \(stolen)")
            #expect(!intruder.messages.contains { $0.text == "offer via \(stolen)" })
            // The intruder is T1, whatever client id it sent: it can still publish as T1 only.
            try intruder.publish("taxi/north/T1/pos", "T1 as \(stolen)")
            try intruder.publish("taxi/north/T2/pos", "T2 forged as \(stolen)")
            try await waitUntil("T1's own publish", timeoutS: 10) { observer.messages.contains { $0.text == "T1 as \(stolen)" } }
            intruder.stop()
        }
        try await Task.sleep(for: .milliseconds(300))
        #expect(!observer.messages.contains { $0.text.hasPrefix("T2 forged") })
        #expect(!victim.wasDisconnected)
        victim.stop()
    }
}

/// TLS off the loopback unless the local file waives it; a fleet document cannot turn it off.
@Suite(.serialized) struct PlaintextBrokerTests {
    let scratch: ScratchDirectory

    init() throws { scratch = try ScratchDirectory() }

    /// A unit whose file names a broker that is not this machine (TEST-NET-1: nothing answers).
    func remoteUnit(_ extraMQTT: String = "") throws -> UnitUnderTest {
        let unit = try UnitUnderTest(mqttPort: 1883, gpsdPort: try Loopback.freePort(), in: scratch, mqttTOML: extraMQTT)
        let file = try String(contentsOfFile: unit.configPath, encoding: .utf8)
        try file.replacingOccurrences(of: "[mqtt]\nhost = \"127.0.0.1\"", with: "[mqtt]\nhost = \"192.0.2.1\"")
            .write(toFile: unit.configPath, atomically: true, encoding: .utf8)
        return unit
    }

    @Test func checkAndStartRefuseARemotePlaintextBrokerAndAcceptItWhenWaived() async throws {
        let refused = try remoteUnit()
        for arguments in [["--config", refused.configPath, "--check"], ["--config", refused.configPath]] {
            let result = try runCommand(Corpus.binary("taxiunitd"), arguments)
            #expect(result.exitCode == 1, "\(arguments): \(result.output)")
            #expect(result.output.contains(#"mqtt.host "192.0.2.1" is not this machine: set tls = true"#), "\(result.output)")
        }
        let waived = try remoteUnit("allow_plaintext = true")
        let checked = try runCommand(Corpus.binary("taxiunitd"), ["--config", waived.configPath, "--check"])
        #expect(checked.exitCode == 0, "\(checked.output)")
        try await waived.start()
        #expect(try waived.status().broker.connected == false)
        waived.stop()
    }

    @Test func aFleetDocumentThatTurnsTLSOffOrGoesToAPlaintextRemoteBrokerIsInvalid() async throws {
        let broker = try MosquittoBroker(in: scratch)
        let signer = try FleetSigner(in: scratch)
        let unit = try UnitUnderTest(mqttPort: broker.port, gpsdPort: try Loopback.freePort(), in: scratch, extraTOML: signer.fleetSection())
        let recorder = try await MQTTRecorder(port: broker.port, subscribe: [unit.topicBase + "config/ack"])
        try await unit.start()
        try await unit.waitForStatus("connected") { $0.broker.connected }
        let topic = "taxi/\(unit.fleet)/config"
        try recorder.publish(topic, try signer.sign(#"{"version":1,"settings":{"mqtt":{"tls":false}}}"#, topic: topic))
        try recorder.publish(topic, try signer.sign(#"{"version":2,"settings":{"mqtt":{"host":"192.0.2.1","port":1883}}}"#, topic: topic))
        let acks = try await recorder.waitFor("two acks") { $0.count == 2 }.compactMap(\.json)
        #expect(acks.map { $0["result"] as? String } == ["rejected", "rejected"])
        #expect(acks.map { $0["reason"] as? String } == ["invalid", "invalid"])
        #expect((acks[0]["errors"] as? [String])?.contains("mqtt.tls is not remotely settable") == true, "\(acks[0])")
        #expect((acks[1]["errors"] as? [String])?.contains { $0.contains(#"mqtt.host "192.0.2.1" is not this machine"#) } == true, "\(acks[1])")
        #expect(try unit.status().config?.broker == "127.0.0.1:\(broker.port)")
        unit.stop()
    }
}

extension PlaintextBrokerTests {
    /// A unit waived for its loopback broker: a fleet list whose first node is the loopback and
    /// whose second is a plaintext broker elsewhere is refused, and the unit stays where it was.
    @Test func aFleetHostsListWithARemotePlaintextNodeAfterTheLoopbackIsInvalid() async throws {
        let broker = try MosquittoBroker(in: scratch)
        let signer = try FleetSigner(in: scratch)
        let unit = try UnitUnderTest(
            mqttPort: broker.port, gpsdPort: try Loopback.freePort(), in: scratch,
            extraTOML: signer.fleetSection(), mqttTOML: "allow_plaintext = true")
        let recorder = try await MQTTRecorder(port: broker.port, subscribe: [unit.topicBase + "config/ack"])
        try await unit.start()
        try await unit.waitForStatus("connected") { $0.broker.connected }
        let topic = "taxi/\(unit.fleet)/config"
        try recorder.publish(topic, try signer.sign(#"{"version":1,"settings":{"mqtt":{"hosts":["127.0.0.1:1","192.0.2.2:1883"]}}}"#, topic: topic))
        let ack = try #require(try await recorder.waitFor("the ack") { $0.count == 1 }.first?.json)
        #expect(ack["result"] as? String == "rejected" && ack["reason"] as? String == "invalid", "\(ack)")
        #expect((ack["errors"] as? [String]) == ["mqtt.hosts: a fleet config cannot move the unit to a broker off this machine without TLS (192.0.2.2:1883)"], "\(ack)")
        let status = try unit.status()
        #expect(status.config?.broker == "127.0.0.1:\(broker.port)" && status.broker.connected)
        unit.stop()
    }
}

/// `cafile = "system"` against mosquitto with a test CA, and what `--check` says of the TLS files.
@Suite(.serialized) struct SystemCATests {
    let scratch: ScratchDirectory
    let pki: TestCertificates
    let broker: MosquittoBroker
    /// The test CA installed as OpenSSL's default verify paths read a CA directory: by hash.
    let caDirectory: String

    init() throws {
        scratch = try ScratchDirectory()
        pki = try TestCertificates(in: scratch)
        broker = try MosquittoBroker(in: scratch, listenerSettings: pki.brokerSettings)
        caDirectory = scratch.file("ca-dir")
        try FileManager.default.createDirectory(atPath: caDirectory, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: pki.caFile, toPath: caDirectory + "/taxi-test-ca.pem")
        let rehash = try runCommand("/usr/bin/openssl", ["rehash", caDirectory])
        guard rehash.exitCode == 0 else { throw HarnessError("openssl rehash: \(rehash.output)") }
    }

    func unit(certFile: String? = nil, keyFile: String? = nil, caFile: String = "system") throws -> UnitUnderTest {
        try UnitUnderTest(
            mqttPort: broker.port, gpsdPort: try Loopback.freePort(), in: scratch,
            mqttTOML: """
                tls = true
                cafile = "\(caFile)"
                certfile = "\(certFile ?? pki.clientCertFile)"
                keyfile = "\(keyFile ?? pki.clientKeyFile)"
                alpn = "mqtt"
                """)
    }

    /// The system store is only the temporary CA directory: no bundle file.
    var systemStore: [String: String] { ["SSL_CERT_DIR": caDirectory, "SSL_CERT_FILE": scratch.file("no-bundle.pem")] }

    @Test func theSystemStoreVerifiesTheBroker() async throws {
        let unit = try unit()
        try await unit.start(environment: systemStore)
        try await unit.waitForStatus("connected over TLS with the system's CAs") { $0.broker.connected }
        unit.stop()
    }

    @Test func aSystemStoreWithoutTheCAFailsVerification() async throws {
        let unit = try unit()
        let empty = scratch.file("empty-ca-dir")
        try FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: true)
        try await unit.start(environment: ["SSL_CERT_DIR": empty, "SSL_CERT_FILE": scratch.file("no-bundle.pem")])
        try await waitUntil("the verification failure in the log", timeoutS: 10, detail: { unit.log }) { unit.log.contains("certificate verify failed") }
        #expect(try unit.status().broker.connected == false)
        unit.stop()
    }

    func check(_ unit: UnitUnderTest) throws -> (output: String, exitCode: Int32) {
        try runCommand(Corpus.binary("taxiunitd"), ["--config", unit.configPath, "--check"])
    }

    @Test func checkAcceptsGoodFilesAndWarnsOfACertificateExpiringWithin30Days() throws {
        let good = try check(try unit(caFile: pki.caFile))
        #expect(good.exitCode == 0, "\(good.output)")
        #expect(!good.output.contains("warning"), "\(good.output)")
        let soon = try check(try unit(certFile: pki.soonExpiringClientCertFile))
        #expect(soon.exitCode == 0, "\(soon.output)")
        #expect(soon.output.contains("warning: mqtt.certfile \(pki.soonExpiringClientCertFile) expires on "), "\(soon.output)")
        #expect(soon.output.contains("in 9 days: renew it") || soon.output.contains("in 10 days: renew it"), "\(soon.output)")
    }

    @Test func checkRefusesExpiredMismatchedMissingAndUnparsableFiles() throws {
        let expired = try check(try unit(certFile: pki.expiredClientCertFile))
        #expect(expired.exitCode == 1)
        #expect(expired.output.contains("mqtt.certfile \(pki.expiredClientCertFile) expired on "), "\(expired.output)")
        let mismatched = try check(try unit(keyFile: pki.otherClientKeyFile))
        #expect(mismatched.exitCode == 1)
        #expect(mismatched.output.contains("mqtt.keyfile \(pki.otherClientKeyFile) does not belong to the certificate"), "\(mismatched.output)")
        let missing = try check(try unit(caFile: scratch.file("nowhere.crt")))
        #expect(missing.exitCode == 1)
        #expect(missing.output.contains("mqtt.cafile \(scratch.file("nowhere.crt")): no such file"), "\(missing.output)")
        let notPEM = scratch.file("not-a-cert.pem")
        try "hello\n".write(toFile: notPEM, atomically: true, encoding: .utf8)
        let junk = try check(try unit(certFile: notPEM))
        #expect(junk.exitCode == 1)
        #expect(junk.output.contains("mqtt.certfile \(notPEM) holds no PEM certificate"), "\(junk.output)")
    }
}

/// The keys a unit trusts, on the daemon and taxifleet.
@Suite(.serialized) struct FleetKeyTests {
    let scratch: ScratchDirectory
    let broker: MosquittoBroker

    init() throws {
        scratch = try ScratchDirectory()
        broker = try MosquittoBroker(in: scratch)
    }

    func openssl(_ arguments: [String]) throws -> String {
        let result = try runCommand("/usr/bin/openssl", arguments, in: scratch.path)
        guard result.exitCode == 0 else { throw HarnessError("openssl \(arguments): \(result.output)") }
        return result.output
    }

    func sign(_ json: String, topic: String, key: String) throws -> String {
        let document = scratch.file("doc-\(UUID().uuidString).json")
        try json.write(toFile: document, atomically: true, encoding: .utf8)
        let (output, code) = try runCommand(Corpus.binary("taxifleet"), ["sign-config", "--key", key, "--topic", topic, document])
        guard code == 0 else { throw HarnessError("sign-config: \(output)") }
        return output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test func genKeyWritesA0600FileOnceAndNeverOverwrites() throws {
        let path = scratch.file("new.key")
        let first = try runCommand(Corpus.binary("taxifleet"), ["gen-key", "--out", path])
        #expect(first.exitCode == 0)
        let mode = try #require(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber).intValue
        #expect(mode == 0o600)
        let key = try String(contentsOfFile: path, encoding: .utf8)
        let again = try runCommand(Corpus.binary("taxifleet"), ["gen-key", "--out", path])
        #expect(again.exitCode != 0)
        #expect(again.output.contains("exists; not overwriting a key"), "\(again.output)")
        #expect(try String(contentsOfFile: path, encoding: .utf8) == key)
        // Nor through a link to somewhere else.
        let link = scratch.file("link.key")
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: scratch.file("elsewhere.key"))
        #expect(try runCommand(Corpus.binary("taxifleet"), ["gen-key", "--out", link]).exitCode != 0)
        #expect(!FileManager.default.fileExists(atPath: scratch.file("elsewhere.key")))
        // The tool that ships on every taxi no longer makes keys, and says where that went.
        for name in ["gen-key", "sign-config"] {
            let moved = try runCommand(Corpus.binary("taxiunitctl"), [name, "--out", scratch.file("old.key")])
            #expect(moved.exitCode == 64)
            #expect(moved.output.contains("\(name) moved to taxifleet"), "\(moved.output)")
        }
        #expect(!FileManager.default.fileExists(atPath: scratch.file("old.key")))
    }

    @Test func pemKeysFromOpensslSignWhatAUnitTrustingThePEMPublicKeyApplies() async throws {
        _ = try openssl(["genpkey", "-algorithm", "ed25519", "-out", "fleet.pem"])
        let publicPEM = try openssl(["pkey", "-in", "fleet.pem", "-pubout"]).trimmingCharacters(in: .whitespacesAndNewlines)
        let unit = try UnitUnderTest(
            mqttPort: broker.port, gpsdPort: try Loopback.freePort(), in: scratch,
            extraTOML: "[fleet]\nconfig_pubkeys = [\"\"\"\n\(publicPEM)\n\"\"\"]\n")
        let recorder = try await MQTTRecorder(port: broker.port, subscribe: [unit.topicBase + "config/ack"])
        try await unit.start()
        try await unit.waitForStatus("connected") { $0.broker.connected }
        let topic = "taxi/\(unit.fleet)/config"
        try recorder.publish(topic, try sign(#"{"version":1,"settings":{"reporting":{"interval_s":9}}}"#, topic: topic, key: scratch.file("fleet.pem")))
        let ack = try await recorder.waitFor("applied") { $0.count == 1 }.first?.json
        #expect(ack?["result"] as? String == "applied", "\(String(describing: ack))")
        unit.stop()
    }

    @Test func checkRefusesWeakKeys() throws {
        let zeros = Data(count: 32).base64EncodedString()
        let order8 = Data([0x26, 0xE8, 0x95, 0x8F, 0xC2, 0xB2, 0x27, 0xB0, 0x45, 0xC3, 0xF4, 0x89, 0xF2, 0xEF, 0x98, 0xF0,
                           0xD5, 0xDF, 0xAC, 0x05, 0xD3, 0xC6, 0x33, 0x39, 0xB1, 0x38, 0x02, 0x88, 0x6D, 0x53, 0xFC, 0x05]).base64EncodedString()
        for (setting, key) in [("config_pubkeys", zeros), ("command_pubkeys", order8)] {
            let unit = try UnitUnderTest(
                unitID: "W\(setting.count)", mqttPort: broker.port, gpsdPort: try Loopback.freePort(), in: scratch,
                extraTOML: "[fleet]\n\(setting) = [\"\(key)\"]\n")
            let result = try runCommand(Corpus.binary("taxiunitd"), ["--config", unit.configPath, "--check"])
            #expect(result.exitCode == 1)
            #expect(result.output.contains("fleet.\(setting) entry \"\(key)\" is a weak key"), "\(result.output)")
        }
    }

    @Test func commandsAreVerifiedWithTheCommandKeysAlone() async throws {
        let config = try FleetSigner(in: scratch, name: "config")
        let commands = try FleetSigner(in: scratch, name: "commands")
        let commandKey = commands.pubkeysLine.replacingOccurrences(of: "config_pubkeys", with: "command_pubkeys")
        let unit = try UnitUnderTest(
            mqttPort: broker.port, gpsdPort: try Loopback.freePort(), in: scratch, extraTOML: "[fleet]\n\(config.pubkeysLine)\n\(commandKey)\n")
        let recorder = try await MQTTRecorder(port: broker.port, subscribe: [unit.topicBase + "cmd/reply", unit.topicBase + "config/ack"])
        try await unit.start()
        try await unit.waitForStatus("connected") { $0.broker.connected }
        let topic = unit.topicBase + "cmd"
        let expires = TestClock.milliseconds() + 60_000
        try recorder.publish(topic, try config.sign(#"{"id":"by-config-key","cmd":"status","expires_at":\#(expires)}"#, topic: topic))
        try recorder.publish(topic, try commands.sign(#"{"id":"by-command-key","cmd":"status","expires_at":\#(expires)}"#, topic: topic))
        let fleetTopic = "taxi/\(unit.fleet)/config"
        try recorder.publish(fleetTopic, try commands.sign(#"{"version":1,"settings":{}}"#, topic: fleetTopic))
        let messages = try await recorder.waitFor("two replies and an ack") { $0.count == 3 }
        let replies = Dictionary(uniqueKeysWithValues: messages.filter { $0.topic.hasSuffix("cmd/reply") }.compactMap(\.json).map { ($0["cmd_id"] as? String ?? "?", $0) })
        #expect(replies["by-config-key"]?["result"] as? String == "rejected")
        #expect(replies["by-config-key"]?["reason"] as? String == "signature")
        #expect(replies["by-command-key"]?["result"] as? String == "ok")
        let ack = messages.first { $0.topic.hasSuffix("config/ack") }?.json
        #expect(ack?["reason"] as? String == "signature", "a command key signs no config: \(String(describing: ack))")
        unit.stop()
    }

    @Test func removingAKeyRevokesTheDocumentsItSignedAtTheNextStart() async throws {
        let old = try FleetSigner(in: scratch, name: "old")
        let new = try FleetSigner(in: scratch, name: "new")
        let unit = try UnitUnderTest(mqttPort: broker.port, gpsdPort: try Loopback.freePort(), in: scratch, extraTOML: old.fleetSection())
        let recorder = try await MQTTRecorder(port: broker.port, subscribe: [unit.topicBase + "config/ack"])
        try await unit.start()
        try await unit.waitForStatus("connected") { $0.broker.connected }
        // Sent live, not retained: after the restart only the store holds it.
        let topic = "taxi/\(unit.fleet)/config"
        try recorder.publish(topic, try old.sign(#"{"version":1,"settings":{"reporting":{"interval_s":9}}}"#, topic: topic))
        try await unit.waitForStatus("v1 applied") { $0.config?.versions == ["fleet": 1] }
        unit.stop()

        let file = try String(contentsOfFile: unit.configPath, encoding: .utf8)
        try file.replacingOccurrences(of: old.pubkeysLine, with: new.pubkeysLine).write(toFile: unit.configPath, atomically: true, encoding: .utf8)
        try await unit.start()
        let status = try unit.status()
        #expect(status.config?.versions.isEmpty == true, "\(String(describing: status.config))")
        #expect(status.aside?["fleet_config"] == 1, "\(String(describing: status.aside))")
        #expect(unit.log.contains("stored fleet config version 1: signature does not match any of the configured keys"), "\(unit.log)")
        unit.stop()
    }
}

/// A broker change is kept only when the fleet's own broker answers with its retained config.
@Suite(.serialized) struct BrokerTrialTests {
    @Test func anOpenBrokerThatIsNotTheFleetsIsRolledBack() async throws {
        let scratch = try ScratchDirectory()
        let home = try MosquittoBroker(in: scratch)
        let stranger = try MosquittoBroker(in: scratch)
        let signer = try FleetSigner(in: scratch)
        let unit = try UnitUnderTest(mqttPort: home.port, gpsdPort: try Loopback.freePort(), in: scratch, extraTOML: signer.fleetSection(rollbackAfterS: 4))
        let recorder = try await MQTTRecorder(port: home.port, subscribe: [unit.topicBase + "config/ack"])
        let watcher = try await MQTTRecorder(port: stranger.port, subscribe: [unit.topicBase + "status"])
        try await unit.start()
        try await unit.waitForStatus("connected") { $0.broker.connected }
        let topic = "taxi/\(unit.fleet)/config"
        try recorder.publish(topic, try signer.sign(#"{"version":1,"settings":{"mqtt":{"port":\#(stranger.port)}}}"#, topic: topic), retain: true)
        // The stranger accepts the unit (its status arrives there), yet that proves nothing.
        try await watcher.waitFor("the unit online on the stranger") { $0.contains { $0.json?["online"] as? Bool == true } }
        #expect(try unit.status().config?.onTrial == "fleet")
        let rolledBack = try await recorder.waitFor("rolled back", timeoutS: 20) { messages in
            messages.contains { $0.json?["result"] as? String == "rolled_back" }
        }.compactMap(\.json).first { $0["result"] as? String == "rolled_back" }
        #expect(rolledBack?["reason"] as? String == "unreachable")
        let status = try await unit.waitForStatus("back home") { $0.broker.connected && $0.config?.broker == "127.0.0.1:\(home.port)" }
        #expect(status.config?.onTrial == nil)
        #expect(status.config?.versions.isEmpty == true)
        unit.stop()
    }

    @Test func theFleetsOwnBrokerWithItsRetainedConfigKeepsTheChange() async throws {
        let scratch = try ScratchDirectory()
        let home = try MosquittoBroker(in: scratch)
        let next = try MosquittoBroker(in: scratch)
        let signer = try FleetSigner(in: scratch)
        let unit = try UnitUnderTest(mqttPort: home.port, gpsdPort: try Loopback.freePort(), in: scratch, extraTOML: signer.fleetSection(rollbackAfterS: 6))
        let topic = "taxi/\(unit.fleet)/config"
        let document = try signer.sign(#"{"version":1,"settings":{"mqtt":{"port":\#(next.port)}}}"#, topic: topic)
        // The fleet publishes the same retained document on both brokers, as a migration would.
        let atNext = try await MQTTRecorder(port: next.port, subscribe: [unit.topicBase + "config/ack"])
        try atNext.publish(topic, document, retain: true)
        let atHome = try await MQTTRecorder(port: home.port, subscribe: [unit.topicBase + "config/ack"])
        try await unit.start()
        try await unit.waitForStatus("connected") { $0.broker.connected }
        try atHome.publish(topic, document, retain: true)
        try await unit.waitForStatus("on the new broker, trial over") {
            $0.broker.connected && $0.config?.broker == "127.0.0.1:\(next.port)" && $0.config?.onTrial == nil
        }
        // Past the window: still there; the applied ack went out on one broker or the other.
        try await Task.sleep(for: .seconds(7))
        #expect(try unit.status().config?.broker == "127.0.0.1:\(next.port)")
        let acks = (atHome.messages + atNext.messages).compactMap { $0.json?["result"] as? String }
        #expect(acks == ["applied"], "\(acks)")
        unit.stop()
    }
}
