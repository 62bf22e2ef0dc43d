import ArgumentParser
import Crypto
import FleetConsole
import Foundation
import MQTTLink
import UnitConfig

/// The options every subcommand that talks to the broker shares; a config file may give them
/// instead, and what the command line says wins.
struct BrokerOptions: ParsableArguments {
    @Option(name: .long, help: "A TOML file naming the broker, the account, the fleet and the key (see docs/fleet.md); default $TAXIFLEET_CONFIG.")
    var config: String?
    @Option(name: .long, help: "The broker's host (default 127.0.0.1).") var host: String?
    @Option(name: .long, help: "The broker's port (default 8883 with TLS, 1883 without).") var port: Int?
    @Flag(name: .long, inversion: .prefixedNo, help: "TLS to the broker; required off this machine unless allow_plaintext is set in the config file.")
    var tls: Bool?
    @Option(name: .long, help: "The CA of the broker's certificate (PEM), or \"system\" for the operating system's.") var cafile: String?
    @Option(name: .long, help: "Our client certificate (PEM).") var certfile: String?
    @Option(name: .long, help: "Our client key (PEM), private to its owner.") var keyfile: String?
    @Option(name: .long, help: "The broker login (default fleet when a password file is given).") var username: String?
    @Option(name: .customLong("password-file"), help: "A file holding the login's password, private to its owner.") var passwordFile: String?
    @Option(name: .long, help: "The fleet's id, as in the units' [unit] fleet.") var fleet: String?
    @Option(name: .customLong("topic-prefix"), help: "The units' [mqtt] topic_prefix (default taxi).") var topicPrefix: String?

    /// The settings of the config file's `[broker]` and `[fleet]` tables under the options.
    func resolved() throws -> BrokerSettings {
        let file = try ConsoleFile.load(config ?? ProcessInfo.processInfo.environment["TAXIFLEET_CONFIG"])
        let tls = tls ?? file.bool("broker", "tls") ?? false
        let host = host ?? file.string("broker", "host") ?? "127.0.0.1"
        let port = port ?? file.int("broker", "port") ?? (tls ? 8883 : 1883)
        guard let fleet = fleet ?? file.string("fleet", "id") else {
            throw Failure("no fleet: give --fleet or [fleet] id in the config file", exitCode: Failure.usage)
        }
        let prefix = topicPrefix ?? file.string("fleet", "topic_prefix") ?? "taxi"
        for (what, id) in [("fleet", fleet), ("topic prefix", prefix)] where !UnitConfiguration.isTopicSafe(id) {
            throw Failure("the \(what) may use only letters, digits, '-' and '_', found \"\(id)\"", exitCode: Failure.usage)
        }
        guard tls || UnitConfiguration.isLoopback(host) || file.bool("broker", "allow_plaintext") == true else {
            throw Failure("the broker \(host) is not this machine: use --tls (or allow_plaintext = true in [broker])", exitCode: Failure.usage)
        }
        var credentials: MQTTCredentials?
        let passwordFile = passwordFile ?? file.string("broker", "password_file")
        if let username = username ?? file.string("broker", "username") ?? (passwordFile == nil ? nil : "fleet") {
            do {
                credentials = MQTTCredentials(username: username, password: try passwordFile.map { path throws(ConfigError) in try SecretFile.read(path, role: "password_file") })
            } catch {
                throw Failure(error.problems.joined(separator: "; "), exitCode: Failure.usage)
            }
        }
        let keyfile = keyfile ?? file.string("broker", "keyfile")
        if let keyfile {
            do { try SecretFile.checkPrivate(keyfile, role: "keyfile") } catch { throw Failure(error.problems.joined(separator: "; "), exitCode: Failure.usage) }
        }
        let cafile = cafile ?? file.string("broker", "cafile")
        let endpoint = MQTTEndpoint(
            host: host, port: port, keepaliveS: 30, clientID: "taxifleet-\(UInt32.random(in: .min ... .max))", cleanSession: true,
            tls: tls
                ? MQTTTLS(
                    caFile: cafile == UnitConfiguration.systemCAs ? nil : cafile,
                    certFile: certfile ?? file.string("broker", "certfile"), keyFile: keyfile, version: "tlsv1.2")
                : nil,
            credentials: credentials, receiveMaximum: 1000)
        return BrokerSettings(endpoint: endpoint, topics: FleetTopics(prefix: prefix, fleet: fleet), file: file)
    }
}

struct BrokerSettings {
    let endpoint: MQTTEndpoint
    let topics: FleetTopics
    let file: ConsoleFile
}

/// The signing key: `--key`, or `[fleet] key` of the config file.
struct KeyOption: ParsableArguments {
    @Option(name: .long, help: "The fleet's private key: from taxifleet gen-key, or PEM (PKCS#8) from openssl genpkey -algorithm ed25519.")
    var key: String?

    func load(_ file: ConsoleFile) throws -> Curve25519.Signing.PrivateKey {
        guard let path = key ?? file.string("fleet", "key") else {
            throw Failure("no signing key: give --key or [fleet] key in the config file", exitCode: Failure.usage)
        }
        return try Self.load(path)
    }

    static func load(_ path: String) throws -> Curve25519.Signing.PrivateKey {
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw Failure("cannot read \(path): \(error.localizedDescription)", exitCode: Failure.usage)
        }
        guard let key = SigningKey.parse(text) else {
            throw Failure("\(path) is not an Ed25519 private key from taxifleet gen-key or openssl genpkey -algorithm ed25519", exitCode: Failure.usage)
        }
        return key
    }
}

/// The options of the subcommands that wait for the units' answers.
struct AnswerOptions: ParsableArguments {
    @Option(name: .long, help: "A unit to address (repeatable); none: every unit of the fleet.") var unit: [String] = []
    @Option(name: .long, help: "Seconds to wait for the units' answers.") var wait: Double = 30
    @Flag(name: .long, help: "Print one JSON object at the end, for scripts.") var json = false

    func validate() throws {
        guard wait > 0, wait <= 86_400 else { throw ValidationError("--wait must be between 0 and 86400 seconds") }
        for unit in unit where !UnitConfiguration.isTopicSafe(unit) {
            throw ValidationError("a unit id may use only letters, digits, '-' and '_', found \"\(unit)\"")
        }
    }
}

/// The config file: `[broker]` (host, port, tls, cafile, certfile, keyfile, username,
/// password_file, allow_plaintext) and `[fleet]` (id, topic_prefix, key). Unknown keys are errors,
/// so a misspelt setting is not silently ignored.
struct ConsoleFile {
    static let known: [String: Set<String>] = [
        "broker": ["host", "port", "tls", "cafile", "certfile", "keyfile", "username", "password_file", "allow_plaintext"],
        "fleet": ["id", "topic_prefix", "key"],
    ]
    let tables: [String: [String: ConfigValue]]

    static func load(_ path: String?) throws -> ConsoleFile {
        guard let path else { return ConsoleFile(tables: [:]) }
        let value: ConfigValue
        do {
            value = try ConfigValue.loadTOML(path: path)
        } catch {
            throw Failure(error.problems.map { "\(path): \($0)" }.joined(separator: "; "), exitCode: Failure.usage)
        }
        guard case .table(let sections) = value else { return ConsoleFile(tables: [:]) }
        var tables: [String: [String: ConfigValue]] = [:]
        var problems: [String] = []
        for (name, section) in sections {
            guard let keys = known[name], case .table(let entries) = section else {
                problems.append("unknown section [\(name)]")
                continue
            }
            problems += entries.keys.filter { !keys.contains($0) }.sorted().map { "unknown key \(name).\($0)" }
            tables[name] = entries
        }
        guard problems.isEmpty else { throw Failure("\(path): " + problems.joined(separator: "; "), exitCode: Failure.usage) }
        return ConsoleFile(tables: tables)
    }

    func string(_ section: String, _ key: String) -> String? {
        if case .string(let text)? = tables[section]?[key] { text } else { nil }
    }

    func int(_ section: String, _ key: String) -> Int? {
        if case .integer(let number)? = tables[section]?[key] { number } else { nil }
    }

    func bool(_ section: String, _ key: String) -> Bool? {
        if case .bool(let flag)? = tables[section]?[key] { flag } else { nil }
    }
}
