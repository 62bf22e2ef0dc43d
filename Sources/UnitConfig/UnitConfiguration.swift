#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import TaxiProtocol
import UnitCore

/// The daemon's settings, validated. Build it with `load(path:)` or `init(document:)`.
public struct UnitConfiguration: Sendable, Equatable {
    public struct Unit: Sendable, Equatable {
        public var id: String
        public var fleet: String
        /// The terminal's language: a catalogue `<language>.toml` in `catalogues`.
        public var language: String
        public var catalogues: String
        public var seats: Int
    }

    public struct GPSD: Sendable, Equatable {
        public var host: String
        public var port: Int
    }

    public struct MQTT: Sendable, Equatable {
        public var host: String
        public var port: Int
        public var keepaliveS: Int
        public var topicPrefix: String
        /// Reconnect backoff bounds: capped exponential with full jitter between them.
        public var reconnectMinS: Double
        public var reconnectMaxS: Double
        /// Messages handed to libmosquitto at once; the rest wait in SQLite.
        public var maxInflight: Int
        /// Most positions in one backfill message.
        public var batchMax: Int
        public var tls: TLS?
        public var username: String?
        /// Holds the broker password; must be readable by its owner only.
        public var passwordFile: String?
        /// Inbound messages admitted per second (after a burst of five seconds' worth); the rest
        /// are dropped unread and counted. A dispatcher sends a taxi a few a minute.
        public var inboundPerS: Double = 10
        /// Plaintext to a broker off this machine, waived in the local file only.
        public var allowPlaintext = false
        /// "5" or "3.1.1" (`MQTTProtocolVersion`'s raw values).
        public var protocolVersion = "5"
        /// MQTT 5: how long the broker keeps our session while we are away; `UInt32.max` never ends it.
        public var sessionExpiryS = 86_400
        /// Messages published per second at most (a token bucket with a second's burst); 0: unlimited.
        public var maxPublishRate: Double = 0
        /// With `{fleet}` and `{unit}` (`clientID(fleet:unit:)`).
        public var clientIDTemplate = Self.defaultClientID
        /// The broker nodes tried in order: `hosts`, or the one `host`:`port`.
        public var nodes: [Node] = []

        public static let defaultClientID = "taxiunitd-{fleet}-{unit}"
        public static let clientIDPlaceholders = ["{fleet}", "{unit}"]

        public struct Node: Sendable, Equatable, CustomStringConvertible {
            public var host: String
            public var port: Int

            public init(host: String, port: Int) {
                self.host = host
                self.port = port
            }

            public var description: String { host.contains(":" as Character) ? "[\(host)]:\(port)" : "\(host):\(port)" }
        }

        public func clientID(fleet: String, unit: String) -> String {
            clientIDTemplate.replacing("{fleet}", with: fleet).replacing("{unit}", with: unit)
        }
    }

    public struct TLS: Sendable, Equatable {
        /// The CA file that signed the broker's certificate; nil: the operating system's CA store
        /// (`cafile = "system"`).
        public var caFile: String?
        /// Client certificate and its key, both or neither.
        public var certFile: String?
        public var keyFile: String?
        public var version: String
        /// The protocol offered in the TLS handshake (ALPN), for brokers that share a port.
        public var alpn: String? = nil
    }

    public struct Store: Sendable, Equatable {
        public var path: String
        /// Past this, positions are thinned, then dropped; other classes are always kept.
        public var maxMB: Double
        /// Undelivered positions older than this are dropped (personal data).
        public var retentionDays: Double
        /// Fixes alone are committed at most once per this many ms; 0 commits each one.
        public var positionCommitMs: Int = 1000
    }

    public struct Control: Sendable, Equatable {
        public var socket: String
    }

    /// `[gps]`: what counts as a usable position, and zone borders.
    public struct GPS: Sendable, Equatable {
        public var maxEphM: Double
        public var zoneHysteresisM: Double
        /// Use the system clock even when the kernel does not call it synchronised (a battery-backed
        /// real-time clock, a test machine) instead of falling back to GPS time.
        public var trustSystemClock: Bool
    }

    public struct Log: Sendable, Equatable {
        public var level: String
    }

    /// `[telemetry]`: the unit's counters and gauges (docs/protocol.md, "telemetry").
    public struct Telemetry: Sendable, Equatable {
        /// Seconds between two retained `telemetry` messages (and textfile writes); 0: none.
        public var intervalS: Double
        /// Where node_exporter's textfile collector reads them; nil: not written.
        public var textfile: String?
    }

    /// `[owntracks]`: each reported fix also as an OwnTracks `location`, over a broker connection of
    /// its own whose will is OwnTracks' `lwt` (docs/protocol.md, "OwnTracks").
    public struct OwnTracks: Sendable, Equatable {
        public var enabled: Bool
        /// Tracker id, the initials a map shows: 1–2 letters or digits.
        public var tid: String
        /// With `{fleet}` and `{unit}` in it, replaced when published.
        public var topic: String
        /// The feed connection's login, with `{fleet}` and `{unit}`: an account of its own, since a
        /// second connection under the unit's login would take the unit's session over.
        public var usernameTemplate = OwnTracksFeedAccount.usernameTemplate
        public var passwordFile: String?
        /// The feed's own client certificate and key, where the broker uses certificates.
        public var certFile: String?
        public var keyFile: String?

        public func username(fleet: String, unit: String) -> String {
            usernameTemplate.replacing("{fleet}", with: fleet).replacing("{unit}", with: unit)
        }
    }

    /// Trust in the fleet's remote configuration and commands (docs/protocol.md).
    public struct Fleet: Sendable, Equatable {
        /// Ed25519 public keys, 32 raw bytes each, allowed to sign config documents (and commands
        /// while `commandPubkeys` is empty).
        public var configPubkeys: [[UInt8]]
        /// Keys for commands alone, so that the config keys can stay offline.
        public var commandPubkeys: [[UInt8]] = []
        public var requireSigned: Bool
        /// How long a pushed config that changes the broker may go without the fleet's retained,
        /// signed config arriving from it before the unit goes back to the last good one.
        public var rollbackAfterS: Double
    }

    /// The driver's job rules (docs/protocol.md, "Jobs").
    public struct JobRules: Sendable, Equatable {
        public var offerTimeoutS: Double
        public var arrivalRadiusM: Double
        public var noShowWaitS: Double
        public var noShowRadiusM: Double
        /// An accepted reservation rings this many minutes before its meeting time; 0: never.
        public var reminderMin: Int
        /// What the driver's `soon` announces without a number: clear in this many minutes.
        public var soonClearMin: Int
        /// How a passenger may pay, one terminal digit key each; empty: no fare and payment screen.
        public var payments: [String]
        /// A ride is cleared only with a payment picked.
        public var paymentRequired: Bool
        /// ISO 4217 code of a fare the driver types.
        public var currency: String
        /// A reservation occupies the unit from this many minutes before its meeting time; one
        /// meeting later is a pre-booking. 0: every reservation occupies it from acceptance.
        public var reservationLeadMin: Int
        /// How many pre-bookings the unit keeps.
        public var maxUpcoming: Int
        /// How long a job is assumed to take, for conflicts with pre-bookings.
        public var expectedJobMin: Int
    }

    /// The driver's messages (docs/protocol.md, "Messages").
    public struct Messages: Sendable, Equatable {
        /// What the driver can send unasked, in the order the `reply` key steps through them.
        public var canned: [String]
        /// Messages kept on the unit, read or not.
        public var keep: Int

        public static let defaultCanned = ["Traffic", "Running late", "Call me"]
    }

    public var unit: Unit
    public var gpsd: GPSD
    public var mqtt: MQTT
    public var store: Store
    public var control: Control
    public var gps: GPS
    public var reporting: ReportingPolicy
    public var zones: [Zone]
    public var log: Log
    public var telemetry: Telemetry
    public var ownTracks: OwnTracks
    public var input: InputConfiguration
    public var fleet: Fleet
    public var job: JobRules
    public var driver = DriverConfiguration()
    public var privacy = PrivacyConfiguration()
    public var ignition = IgnitionConfiguration()
    public var messages: Messages
    /// `[shift]`: the driver's working day, its limits off unless set.
    public var shift = ShiftSettings()

    public static let logLevels = ["trace", "debug", "info", "notice", "warning", "error", "critical"]

    /// Validates the whole document and reports every problem at once.
    public init(document: ConfigValue) throws(ConfigError) {
        var problems: [String] = []
        guard case .table(let root) = document else {
            throw ConfigError(problems: ["the document must be a table"])
        }
        let known = ["unit", "gpsd", "gps", "mqtt", "store", "control", "reporting", "zones", "log", "telemetry", "owntracks", "fleet", "job", "input", "driver", "privacy", "ignition", "messages", "shift"]
        for key in root.keys.sorted() where !known.contains(key) {
            problems.append("unknown section [\(key)]")
        }

        var unitSection = SectionReader(path: "unit", value: root["unit"], problems: &problems)
        let unit = Unit(
            id: unitSection.requiredString("id"),
            fleet: unitSection.requiredString("fleet"),
            language: unitSection.string("language", default: "en"),
            catalogues: unitSection.string("catalogues", default: "/usr/share/taxiunitd/lang"),
            seats: unitSection.integer("seats", default: 4, in: 1...99)
        )
        if !Self.isLanguageCode(unit.language) {
            unitSection.reject("language must be a language code such as en, it or zu, found \"\(unit.language)\"")
        }
        for (key, value) in [("id", unit.id), ("fleet", unit.fleet)] where !value.isEmpty && !Self.isTopicSafe(value) {
            unitSection.reject("\(key) may use only letters, digits, '-' and '_', found \"\(value)\"")
        }
        unitSection.finish(into: &problems)

        var gpsdSection = SectionReader(path: "gpsd", value: root["gpsd"], problems: &problems)
        let gpsd = GPSD(
            host: gpsdSection.string("host", default: "127.0.0.1"),
            port: gpsdSection.integer("port", default: 2947, in: 1...65535)
        )
        gpsdSection.finish(into: &problems)

        var mqttSection = SectionReader(path: "mqtt", value: root["mqtt"], problems: &problems)
        let listed = mqttSection.has("hosts")
        var mqtt = MQTT(
            host: mqttSection.string("host", default: "127.0.0.1"),
            port: mqttSection.integer("port", default: 1883, in: 1...65535),
            keepaliveS: mqttSection.integer("keepalive_s", default: 30, in: 5...3600),
            topicPrefix: mqttSection.string("topic_prefix", default: "taxi"),
            reconnectMinS: mqttSection.number("reconnect_min_s", default: 1, in: 0.1...3600),
            reconnectMaxS: mqttSection.number("reconnect_max_s", default: 300, in: 0.1...3600),
            maxInflight: mqttSection.integer("max_inflight", default: 10, in: 1...1000),
            batchMax: mqttSection.integer("batch_max", default: 50, in: 1...1000),
            tls: Self.readTLS(&mqttSection),
            username: mqttSection.optionalString("username"),
            passwordFile: mqttSection.optionalString("password_file"),
            inboundPerS: mqttSection.number("inbound_per_s", default: 10, in: 1...10_000),
            allowPlaintext: mqttSection.bool("allow_plaintext", default: false),
            protocolVersion: mqttSection.oneOf("protocol", default: "5", allowed: ["5", "3.1.1"]),
            sessionExpiryS: mqttSection.integer("session_expiry_s", default: 86_400, in: 0...Int(UInt32.max)),
            maxPublishRate: mqttSection.number("max_publish_rate", default: 0, in: 0...100_000),
            clientIDTemplate: mqttSection.string("client_id", default: MQTT.defaultClientID)
        )
        if let problem = Self.clientIDProblem(mqtt.clientIDTemplate) { mqttSection.reject(problem) }
        let hosts = mqttSection.strings("hosts")
        if listed {
            if hosts.isEmpty || hosts.count > 16 { mqttSection.reject("hosts must list 1 to 16 brokers, found \(hosts.count)") }
            for text in hosts {
                switch Self.node(text, defaultPort: mqtt.port) {
                case .success(let node): mqtt.nodes.append(node)
                case .failure(let problem): mqttSection.reject("hosts: \(problem.text)")
                }
            }
            // hosts replaces host, so a fleet document can move a unit with a local host to a cluster.
            if let first = mqtt.nodes.first { (mqtt.host, mqtt.port) = (first.host, first.port) }
        } else {
            mqtt.nodes = [MQTT.Node(host: mqtt.host, port: mqtt.port)]
        }
        for node in mqtt.nodes where mqtt.tls == nil && !mqtt.allowPlaintext && !Self.isLoopback(node.host) {
            mqttSection.reject("host \"\(node.host)\" is not this machine: set tls = true (cafile = \"system\" for a broker with a public CA), or allow_plaintext = true to send in the clear")
        }
        if mqtt.passwordFile != nil && mqtt.username == nil {
            mqttSection.reject("password_file needs a username")
        }
        if mqtt.reconnectMinS > mqtt.reconnectMaxS {
            mqttSection.reject("reconnect_min_s must not exceed reconnect_max_s")
        }
        if !Self.isTopicSafe(mqtt.topicPrefix, allowing: "/") {
            mqttSection.reject("topic_prefix may not contain '+', '#' or empty levels, found \"\(mqtt.topicPrefix)\"")
        }
        mqttSection.finish(into: &problems)

        var storeSection = SectionReader(path: "store", value: root["store"], problems: &problems)
        let store = Store(
            path: storeSection.string("path", default: "/var/lib/taxiunitd/unit.sqlite"),
            maxMB: storeSection.number("max_mb", default: 64, in: 0.1...1_000_000),
            retentionDays: storeSection.number("retention_days", default: 7, in: 0.001...3650),
            positionCommitMs: storeSection.integer("position_commit_ms", default: 1000, in: 0...60_000)
        )
        storeSection.finish(into: &problems)

        var controlSection = SectionReader(path: "control", value: root["control"], problems: &problems)
        let control = Control(socket: controlSection.string("socket", default: "/run/taxiunitd/control.sock"))
        controlSection.finish(into: &problems)

        var gpsSection = SectionReader(path: "gps", value: root["gps"], problems: &problems)
        let gps = GPS(
            maxEphM: gpsSection.number("max_eph_m", default: 50, in: 1...100_000),
            zoneHysteresisM: gpsSection.number("zone_hysteresis_m", default: 30, in: 0...10_000),
            trustSystemClock: gpsSection.bool("trust_system_clock", default: false)
        )
        gpsSection.finish(into: &problems)

        let reporting = Self.reportingPolicy(root["reporting"], problems: &problems)
        let zones = Self.zones(root["zones"], problems: &problems)

        var logSection = SectionReader(path: "log", value: root["log"], problems: &problems)
        let log = Log(level: logSection.oneOf("level", default: "info", allowed: Self.logLevels))
        logSection.finish(into: &problems)

        var telemetrySection = SectionReader(path: "telemetry", value: root["telemetry"], problems: &problems)
        let telemetry = Telemetry(
            intervalS: telemetrySection.number("interval_s", default: 60, in: 0...86400),
            textfile: telemetrySection.optionalString("textfile"))
        // Below a second it would be a stream, not telemetry: the retained message is a snapshot.
        if telemetry.intervalS > 0 && telemetry.intervalS < 1 {
            telemetrySection.reject("interval_s must be 0 (off) or at least 1")
        }
        if let textfile = telemetry.textfile, !textfile.hasPrefix("/") || !textfile.hasSuffix(".prom") {
            telemetrySection.reject("textfile must be an absolute path ending in .prom (node_exporter reads only those), found \"\(textfile)\"")
        }
        telemetrySection.finish(into: &problems)
        var ownTracksSection = SectionReader(path: "owntracks", value: root["owntracks"], problems: &problems)
        let ownTracks = OwnTracks(
            enabled: ownTracksSection.bool("enabled", default: false),
            tid: ownTracksSection.string("tid", default: String(unit.id.filter { $0.isASCII && ($0.isLetter || $0.isNumber) }.suffix(2))),
            topic: ownTracksSection.string("topic", default: OwnTracksFeedAccount.topicTemplate),
            usernameTemplate: ownTracksSection.string("username", default: OwnTracksFeedAccount.usernameTemplate),
            passwordFile: ownTracksSection.optionalString("password_file"),
            certFile: ownTracksSection.optionalString("certfile"),
            keyFile: ownTracksSection.optionalString("keyfile"))
        if ownTracks.enabled || ownTracksSection.has("tid"), !(1...2).contains(ownTracks.tid.count) || !ownTracks.tid.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) {
            ownTracksSection.reject("tid must be 1 or 2 letters or digits (the initials a map shows), found \"\(LogExcerpt.of(ownTracks.tid, limit: 20))\"")
        }
        if ownTracks.topic.contains(where: { "+#\u{0}".contains($0) }) || ownTracks.topic.hasPrefix("/") || ownTracks.topic.hasSuffix("/")
            || ownTracks.topic.firstRange(of: "//") != nil || ownTracks.topic.utf8.count > 256 {
            ownTracksSection.reject("topic must be an MQTT topic of at most 256 bytes without wildcards or empty levels, found \"\(LogExcerpt.of(ownTracks.topic, limit: 80))\"")
        }
        if let problem = Self.templateProblem("username", ownTracks.usernameTemplate, forbidding: "+#:") { ownTracksSection.reject(problem) }
        if ownTracks.enabled, let login = mqtt.username, ownTracks.username(fleet: unit.fleet, unit: unit.id) == login {
            ownTracksSection.reject("username must not be [mqtt] username: the feed's connection would take the unit's session over")
        }
        if (ownTracks.certFile == nil) != (ownTracks.keyFile == nil) {
            ownTracksSection.reject("certfile and keyfile go together: set both or neither")
        }
        if ownTracks.certFile != nil, mqtt.tls == nil {
            ownTracksSection.reject("certfile and keyfile need [mqtt] tls = true")
        }
        // Where a certificate is the login (mosquitto's use_identity_as_username), the unit's own
        // would log the feed in as the unit, and the two connections would take turns throwing each other out.
        if ownTracks.enabled, mqtt.tls?.certFile != nil, ownTracks.certFile == nil {
            ownTracksSection.reject("certfile and keyfile are needed when [mqtt] has a client certificate: the feed's own, for its own account")
        }
        ownTracksSection.finish(into: &problems)

        let input = InputConfiguration(value: root["input"], problems: &problems)
        var fleetSection = SectionReader(path: "fleet", value: root["fleet"], problems: &problems)
        func keys(_ name: String) -> [[UInt8]] {
            fleetSection.strings(name).compactMap { text in
                switch FleetPublicKey.parse(text) {
                case .success(let raw):
                    return raw
                case .failure(let problem):
                    let excerpt = LogExcerpt.of(text, limit: 80)
                    switch problem {
                    case .unreadable:
                        fleetSection.reject("\(name) entries must be Ed25519 public keys (32 bytes in base64, or PEM), found \"\(excerpt)\"")
                    case .notEd25519:
                        fleetSection.reject("\(name) entries must be Ed25519 keys, found another kind of key in \"\(excerpt)\"")
                    case .weak:
                        fleetSection.reject("\(name) entry \"\(excerpt)\" is a weak key (a point of small order, under which forged signatures verify); make one with taxifleet gen-key")
                    }
                    return nil
                }
            }
        }
        let fleet = Fleet(
            configPubkeys: keys("config_pubkeys"),
            commandPubkeys: keys("command_pubkeys"),
            requireSigned: fleetSection.bool("require_signed", default: true),
            rollbackAfterS: fleetSection.number("rollback_after_s", default: 120, in: 1...86400)
        )
        fleetSection.finish(into: &problems)
        var jobSection = SectionReader(path: "job", value: root["job"], problems: &problems)
        let job = JobRules(
            offerTimeoutS: jobSection.number("offer_timeout_s", default: 60, in: 1...3600),
            arrivalRadiusM: jobSection.number("arrival_radius_m", default: 20, in: 1...10_000),
            noShowWaitS: jobSection.number("no_show_wait_s", default: 300, in: 0...86400),
            noShowRadiusM: jobSection.number("no_show_radius_m", default: 100, in: 1...10_000),
            reminderMin: jobSection.integer("reminder_min", default: 10, in: 0...1440),
            soonClearMin: jobSection.integer("soon_clear_min", default: 5, in: DriverInput.soonClearMinutes),
            payments: jobSection.has("payments") ? jobSection.strings("payments") : UnitSettings.defaultPayments,
            paymentRequired: jobSection.bool("payment_required", default: false),
            currency: jobSection.string("currency", default: UnitSettings.defaultCurrency),
            reservationLeadMin: jobSection.integer("reservation_lead_min", default: 0, in: 0...1440),
            maxUpcoming: jobSection.integer("max_upcoming", default: 8, in: 1...64),
            expectedJobMin: jobSection.integer("expected_job_min", default: 30, in: 1...1440)
        )
        jobSection.finish(into: &problems)
        if job.payments.count > FareLimits.payments.upperBound {
            problems.append("job.payments holds more than \(FareLimits.payments.upperBound) methods (one terminal digit key each)")
        }
        for (index, payment) in job.payments.enumerated() where !FareLimits.isPayment(payment) {
            problems.append("job.payments[\(index)] must be 1 to \(FareLimits.paymentBytes.upperBound) of a-z, 0-9, _ and -, found \"\(payment)\"")
        }
        if Set(job.payments).count != job.payments.count { problems.append("job.payments names a method twice") }
        if !FareLimits.isCurrency(job.currency) { problems.append("job.currency must be an ISO 4217 code of three upper-case letters, found \"\(job.currency)\"") }
        if job.paymentRequired && (job.payments.isEmpty || input.serial == nil) {
            problems.append("job.payment_required = true needs job.payments and [input.serial], where the payment is picked")
        }
        let driver = DriverConfiguration.read(root["driver"], problems: &problems)
        let privacy = PrivacyConfiguration.read(root["privacy"], problems: &problems)
        let ignition = IgnitionConfiguration.read(root["ignition"], problems: &problems)
        var messagesSection = SectionReader(path: "messages", value: root["messages"], problems: &problems)
        let cannedGiven = root["messages"].flatMap { if case .table(let table) = $0 { table["canned"] } else { nil } } != nil
        var canned = cannedGiven ? messagesSection.strings("canned") : Messages.defaultCanned
        let most = MessageLimits.cannedCount.upperBound
        if canned.count > most {
            problems.append("messages.canned holds more than \(most) texts")
            canned = Array(canned.prefix(most))
        }
        // Canned messages go on the wire and the terminal row like a message's canned replies.
        for (index, text) in canned.enumerated() where !DriverMessages.isCannedText(text) {
            problems.append("messages.canned[\(index)] must be 1 to \(MessageLimits.replyCharacters) printable characters, found \"\(text)\"")
        }
        let messages = Messages(canned: canned, keep: messagesSection.integer("keep", default: 50, in: MessageLimits.inboxCapacity))
        messagesSection.finish(into: &problems)
        var shiftSection = SectionReader(path: "shift", value: root["shift"], problems: &problems)
        let shift = ShiftSettings(
            maxContinuousDrivingMin: shiftSection.integer("max_continuous_driving_min", default: 0, in: ShiftSettings.minutes),
            maxShiftMin: shiftSection.integer("max_shift_min", default: 0, in: ShiftSettings.minutes),
            breakMin: shiftSection.integer("break_min", default: 0, in: ShiftSettings.minutes),
            warnBeforeMin: shiftSection.integer("warn_before_min", default: 0, in: ShiftSettings.minutes))
        shiftSection.finish(into: &problems)

        guard problems.isEmpty else { throw ConfigError(problems: problems) }
        self.unit = unit
        self.gpsd = gpsd
        self.mqtt = mqtt
        self.store = store
        self.control = control
        self.gps = gps
        self.reporting = reporting
        self.zones = zones
        self.log = log
        self.telemetry = telemetry
        self.ownTracks = ownTracks
        self.input = input
        self.fleet = fleet
        self.job = job
        self.driver = driver
        self.privacy = privacy
        self.ignition = ignition
        self.messages = messages
        self.shift = shift
    }

    /// What the fleet may set over MQTT (docs/protocol.md, "Fleet configuration"); everything else
    /// is the unit's own: its identity, local paths, and whom it trusts. A section added to the
    /// schema above becomes remotely settable by adding it here (and to docs/protocol.md's table,
    /// which RemotelySettableDocsTests holds to this one).
    public static let remotelySettable: [String: RemoteAccess] = [
        // Whom the unit trusts and how it proves itself stay local: a fleet config could otherwise
        // turn TLS off or swap the CA. So does the client id: one fleet document naming one id for
        // every unit would have them take each other's sessions over.
        "mqtt": .everyKeyExcept([
            "tls", "cafile", "certfile", "keyfile", "tls_version", "alpn", "username", "password_file", "allow_plaintext", "client_id",
        ]),
        "gps": .everyKey,
        "reporting": .everyKey,
        "job": .everyKey,
        "zones": .everyKey,
        "unit": .only(["seats", "language"]),
        "store": .everyKeyExcept(["path"]),
        "fleet": .only(["rollback_after_s"]),
        // Who may drive the taxi is the fleet's; so is what the taxi keeps to itself.
        "driver": .everyKey,
        "privacy": .everyKey,
        "ignition": .everyKey,
        // The inbox's capacity stays local: lowering it would drop kept messages.
        "messages": .only(["canned"]),
        "shift": .everyKey,
    ]

    public static let tlsVersions = ["tlsv1.2", "tlsv1.3"]

    private static func readTLS(_ section: inout SectionReader) -> TLS? {
        let enabled = section.bool("tls", default: false)
        let caFile = section.optionalString("cafile")
        let certFile = section.optionalString("certfile")
        let keyFile = section.optionalString("keyfile")
        let version = section.oneOf("tls_version", default: "tlsv1.2", allowed: tlsVersions)
        let alpn = section.optionalString("alpn")
        if let alpn, alpn.utf8.count > 255 || !alpn.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) {
            section.reject("alpn must be one protocol name of at most 255 printable ASCII characters, such as \"mqtt\"")
        }
        guard enabled else {
            if caFile != nil || certFile != nil || keyFile != nil {
                section.reject("cafile, certfile and keyfile need tls = true")
            }
            if alpn != nil { section.reject("alpn needs tls = true") }
            return nil
        }
        if (certFile == nil) != (keyFile == nil) {
            section.reject("certfile and keyfile go together: set both or neither")
        }
        guard let caFile else {
            section.reject("tls = true needs cafile, the CA that signed the broker's certificate (\"system\": the operating system's CAs)")
            return nil
        }
        return TLS(caFile: caFile == systemCAs ? nil : caFile, certFile: certFile, keyFile: keyFile, version: version, alpn: alpn)
    }

    /// `cafile = "system"`: the operating system's CA store, for brokers with a public CA.
    public static let systemCAs = "system"

    /// The broker is on this machine: `localhost`, 127.0.0.0/8 or ::1. Only then may the unit talk
    /// to it in the clear without `allow_plaintext`.
    public static func isLoopback(_ host: String) -> Bool {
        let name = host.lowercased()
        if name == "localhost" || name == "localhost." || name == "::1" || name == "[::1]" { return true }
        let octets = name.split(separator: ".", omittingEmptySubsequences: false)
        return octets.count == 4 && octets.first == "127"
            && octets.allSatisfy { $0.count <= 3 && UInt8($0) != nil }
    }

    /// Reads and validates a TOML file with its drop-ins (`LocalConfigSources`).
    public static func load(path: String) throws(ConfigError) -> UnitConfiguration {
        try UnitConfiguration(document: LocalConfigSources.load(path: path).value)
    }

    struct Problem: Error { var text: String }

    /// "host", "host:port", "[v6]" or "[v6]:port"; `defaultPort` when none is given.
    static func node(_ text: String, defaultPort: Int) -> Result<MQTT.Node, Problem> {
        var host = Substring(text)
        var portText: Substring?
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else { return .failure(Problem(text: "\"\(text)\" lacks its closing ']'")) }
            let rest = host[host.index(after: close)...]
            host = host[host.index(after: host.startIndex)..<close]
            if !rest.isEmpty {
                guard rest.hasPrefix(":") else { return .failure(Problem(text: "\"\(text)\" must be [address]:port")) }
                portText = rest.dropFirst()
            }
        } else if let colon = host.lastIndex(of: ":") {
            portText = host[host.index(after: colon)...]
            host = host[..<colon]
        }
        let allowed = host.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "." || $0 == "-" || $0 == ":" || $0 == "_") }
        guard !host.isEmpty, host.count <= 253, allowed else {
            return .failure(Problem(text: "\"\(text)\" is not host:port"))
        }
        guard let portText else { return .success(MQTT.Node(host: String(host), port: defaultPort)) }
        guard portText.count <= 5, let port = Int(portText), (1...65535).contains(port) else {
            return .failure(Problem(text: "\"\(text)\": the port must be 1 to 65535"))
        }
        return .success(MQTT.Node(host: String(host), port: port))
    }

    /// Only `{fleet}` and `{unit}` may be substituted; the rest is printable ASCII without spaces.
    static func clientIDProblem(_ template: String) -> String? {
        templateProblem("client_id", template)
    }

    /// A client id or login with `{fleet}` and `{unit}`; `forbidden` characters are refused too.
    static func templateProblem(_ key: String, _ template: String, forbidding forbidden: String = "") -> String? {
        var rest = template
        for placeholder in MQTT.clientIDPlaceholders { rest = rest.replacing(placeholder, with: "") }
        if rest.contains("{" as Character) || rest.contains("}" as Character) {
            return "\(key) may use only the placeholders {fleet} and {unit}, found \"\(template)\""
        }
        guard template.count <= 128, rest.allSatisfy({ $0.isASCII && !$0.isWhitespace && ($0.asciiValue ?? 0) >= 0x21 && $0 != "\u{7f}" }) else {
            return "\(key) must be at most 128 printable ASCII characters without spaces, found \"\(template)\""
        }
        if let character = rest.first(where: forbidden.contains) {
            return "\(key) may not contain '\(character)', found \"\(template)\""
        }
        return nil
    }

    /// Unit and fleet ids become topic levels, so MQTT wildcards and separators are not allowed.
    public static func isTopicSafe(_ text: String, allowing extra: Character? = nil) -> Bool {
        guard !text.isEmpty else { return false }
        if let extra, text.split(separator: extra, omittingEmptySubsequences: false).contains(where: \.isEmpty) {
            return false
        }
        return text.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" || $0 == extra) }
    }

    /// `[reporting]`: keys at the top apply to every state, a `[reporting.<state>]` table overrides
    /// them for that state; whatever neither sets keeps the state's built-in default.
    static func reportingPolicy(_ value: ConfigValue?, problems: inout [String]) -> ReportingPolicy {
        var section = SectionReader(path: "reporting", value: value, problems: &problems)
        let everyState = RuleOverrides(from: &section)
        var rules = ReportingPolicy.defaultRules
        for state in ReportingPolicy.stateNames {
            var rule = everyState.applied(to: rules[state]!)
            if section.has(state) {
                var stateSection = SectionReader(path: "reporting.\(state)", value: section.value(state), problems: &problems)
                rule = RuleOverrides(from: &stateSection).applied(to: rule)
                stateSection.finish(into: &problems)
            }
            rules[state] = rule
        }
        section.finish(into: &problems)
        return ReportingPolicy(rules: rules)
    }

    /// The reporting keys one table sets.
    struct RuleOverrides {
        var intervalS, distanceM, headingDeg, minSpeedMps: Double?
        var everyFix: Bool?

        init(from section: inout SectionReader) {
            func number(_ key: String, _ range: ClosedRange<Double>) -> Double? {
                section.has(key) ? section.number(key, default: .nan, in: range).nilIfNaN : nil
            }
            intervalS = number("interval_s", 0...86_400)
            distanceM = number("distance_m", 0...1_000_000)
            headingDeg = number("heading_deg", 0...180)
            minSpeedMps = number("min_speed_mps", 0...100)
            everyFix = section.has("every_fix") ? section.bool("every_fix", default: false) : nil
        }

        func applied(to rule: ReportingRule) -> ReportingRule {
            var rule = rule
            rule.intervalS = intervalS ?? rule.intervalS
            rule.distanceM = distanceM ?? rule.distanceM
            rule.headingDeg = headingDeg ?? rule.headingDeg
            rule.minSpeedMps = minSpeedMps ?? rule.minSpeedMps
            rule.everyFix = everyFix ?? rule.everyFix
            return rule
        }
    }

    /// `[[zones]]`: each an `id` and a `polygon` of at least three `[lat, lon]` pairs.
    static func zones(_ value: ConfigValue?, problems: inout [String]) -> [Zone] {
        guard let value else { return [] }
        guard case .array(let entries) = value else {
            problems.append("zones must be an array of tables ([[zones]]), found \(value.typeName)")
            return []
        }
        var zones: [Zone] = []
        var ids: Set<String> = []
        for (index, entry) in entries.enumerated() {
            var section = SectionReader(path: "zones[\(index)]", value: entry, problems: &problems)
            let id = section.requiredString("id")
            if !id.isEmpty, !ids.insert(id).inserted { section.reject("id \"\(id)\" is used by an earlier zone") }
            let polygon = readPolygon(section.value("polygon"), into: &section)
            section.finish(into: &problems)
            if !id.isEmpty, let polygon { zones.append(Zone(id: id, polygon: polygon)) }
        }
        return zones
    }

    private static func readPolygon(_ value: ConfigValue?, into section: inout SectionReader) -> [Zone.Vertex]? {
        guard case .array(let pairs)? = value else {
            section.reject("polygon must be an array of [lat, lon] pairs\(value == nil ? ", found none" : "")")
            return nil
        }
        var vertices: [Zone.Vertex] = []
        for (index, pair) in pairs.enumerated() {
            guard case .array(let numbers) = pair, numbers.count == 2,
                  let latitude = numbers[0].number, let longitude = numbers[1].number,
                  abs(latitude) <= 90, abs(longitude) <= 180 else {
                section.reject("polygon[\(index)] must be [lat, lon] in degrees (lat -90...90, lon -180...180)")
                return nil
            }
            vertices.append(Zone.Vertex(latitude: latitude, longitude: longitude))
        }
        guard vertices.count >= 3 else {
            section.reject("polygon needs at least 3 points, found \(vertices.count)")
            return nil
        }
        return vertices
    }

    /// `en`, `zu`, `pt-BR`: it names a file, so nothing else is allowed.
    static func isLanguageCode(_ text: String) -> Bool {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), let base = parts.first, (2...3).contains(base.count),
              base.allSatisfy({ $0.isASCII && $0.isLowercase }) else { return false }
        return parts.count == 1 || (2...8).contains(parts[1].count) && parts[1].allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) }
    }

    public var unitSettings: UnitSettings {
        var settings = UnitSettings(
            positions: PositionSettings(maxHorizontalErrorM: gps.maxEphM, reporting: reporting, zones: zones, zoneHysteresisM: gps.zoneHysteresisM,
                offDutyPositions: privacy.offDutyPositions),
            offerTimeout: .checkedSeconds(job.offerTimeoutS), arrivalRadiusM: job.arrivalRadiusM, noShowWait: .checkedSeconds(job.noShowWaitS),
            noShowRadiusM: job.noShowRadiusM, seats: unit.seats, reminderMin: job.reminderMin, soonClearMin: job.soonClearMin, requireLogin: driver.requireLogin,
            ignitionOff: ignition.policy, payments: job.payments, paymentRequired: job.paymentRequired, currency: job.currency,
            reservationLeadMin: job.reservationLeadMin, maxUpcoming: job.maxUpcoming, expectedJobMin: job.expectedJobMin)
        settings.shift = shift
        return settings
    }

    /// `{prefix}/{fleet}/{unit}/`
    public var unitTopicBase: String { "\(mqtt.topicPrefix)/\(unit.fleet)/\(unit.id)/" }
}

extension Double {
    /// A wrong value was reported and replaced by NaN: the setting keeps its default.
    fileprivate var nilIfNaN: Double? { isNaN ? nil : self }
}
