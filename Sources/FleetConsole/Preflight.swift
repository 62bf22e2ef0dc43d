import Crypto
import FleetControl
import StrictJSON
import TaxiProtocol
import UnitConfig
import UnitCore

/// A settings file for a push: TOML (as the unit's own file) or JSON (the document's `settings`).
public enum SettingsFile {
    /// `name` decides the format: `.json` is JSON, anything else TOML.
    public static func parse(_ bytes: [UInt8], name: String) throws(ConfigError) -> JSONDocument {
        if name.hasSuffix(".json") {
            let document: JSONDocument
            do {
                document = try JSONDocument.parse(bytes)
            } catch {
                throw ConfigError(problems: ["\(name): \(error.message)"])
            }
            guard case .object = document else { throw ConfigError(problems: ["\(name): settings must be a JSON object"]) }
            return document
        }
        do {
            return JSONDocument(try ConfigValue.parseTOML(String(decoding: bytes, as: UTF8.self)))
        } catch {
            throw ConfigError(problems: error.problems.map { "\(name): \($0)" })
        }
    }
}

/// Signs what the fleet sends and puts it through the unit's own checks before anything is
/// published: a document or command the unit would refuse never leaves the office.
public enum Preflight {
    /// The signed config document for `topic`, as a unit whose local file is `base` would take it:
    /// `FleetConfigMachine`, the unit's own decision, must apply it. `base` is laid under the
    /// document (the fleet's image file, or nothing: the defaults), with this key trusted and the
    /// unit's identity set: `unit` for a unit's document, else the base's (or a stand-in).
    public static func configDocument(
        settings: JSONDocument, version: Int, scope: ConfigScope, topic: String, unit: String?, fleet: String,
        base: ConfigValue, key: Curve25519.Signing.PrivateKey
    ) throws(ConfigError) -> [UInt8] {
        let unsigned = JSONDocument.object([("settings", settings), ("version", .int(version))])
        let signed: JSONDocument
        do {
            signed = try FleetSignature.sign(unsigned, topic: topic, with: key)
        } catch let error as ConfigError {
            throw error
        } catch {
            throw ConfigError(problems: ["cannot sign: \(error)"])
        }
        let payload = signed.canonicalBytes
        var machine = try FleetConfigMachine(local: unitFile(base: base, unit: unit, fleet: fleet, key: key), restoring: [:])
        for action in machine.handle(.received(scope, topic: topic, payload: payload, retained: false, at: 0)) {
            switch action {
            case .commit(_, _, let ack?), .acknowledge(let ack):
                if ack.result != .applied {
                    throw ConfigError(problems: ack.errors.isEmpty ? ["refused: \(ack.reason ?? ack.result.rawValue)"] : ack.errors)
                }
            case .commit, .use, .startRollbackTimer, .cancelRollbackTimer, .ignore:
                break
            }
        }
        return payload
    }

    /// The signed command for `topic`, admitted by the unit's own `CommandGate` at `now` (ms).
    public static func command(
        _ members: [(key: String, value: JSONDocument)], topic: String, now: Int64, key: Curve25519.Signing.PrivateKey
    ) throws(ConfigError) -> [UInt8] {
        let signed: JSONDocument
        do {
            signed = try FleetSignature.sign(.object(members), topic: topic, with: key)
        } catch let error as ConfigError {
            throw error
        } catch {
            throw ConfigError(problems: ["cannot sign: \(error)"])
        }
        let payload = signed.canonicalBytes
        var gate = CommandGate(trust: FleetTrust(publicKeys: [Array(key.publicKey.rawRepresentation)], requireSigned: true))
        switch gate.admit(payload, topic: topic, now: UnitTime(milliseconds: now)) {
        case .execute:
            return payload
        case .refuse(let refusal):
            throw ConfigError(problems: refusal.errors.isEmpty ? ["refused: \(refusal.result.rawValue)"] : refusal.errors)
        case .ignore(let id):
            throw ConfigError(problems: ["command \(id) would be ignored"])
        }
    }

    /// The unit's local file for the check: `base`, its identity filled in, trusting `key` alone.
    static func unitFile(base: ConfigValue, unit: String?, fleet: String, key: Curve25519.Signing.PrivateKey) -> ConfigValue {
        var baseID: String?
        if case .table(let sections) = base, case .table(let existing)? = sections["unit"], case .string(let id)? = existing["id"], !id.isEmpty {
            baseID = id
        }
        return base.overlaid(by: .table([
            "unit": .table(["fleet": .string(fleet), "id": .string(unit ?? baseID ?? "any-unit")]),
            "fleet": .table([
                "config_pubkeys": .array([.string(SigningKey.publicKeyText(key))]),
                "command_pubkeys": .array([]),
                "require_signed": .bool(true),
            ]),
        ]))
    }
}
