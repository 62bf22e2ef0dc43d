import UnitCore
import Crypto
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import StrictJSON
import UnitConfig

/// Ed25519 signatures over fleet documents (docs/protocol.md, "Signatures").
///
/// The signed bytes are the MQTT topic the document is meant for, one LF byte, then the canonical
/// bytes of the document without its top-level `signature` member. Binding the topic means a
/// document signed for one unit cannot be replayed to another, and a config cannot pass as a command.
public enum FleetSignature {
    public static let member = "signature"

    public enum Check: Sendable, Equatable {
        case valid
        case missing
        case invalid(String)
    }

    public static func signedBytes(of document: JSONDocument, topic: String) -> [UInt8] {
        Array(topic.utf8) + [0x0A] + document.removing(member).canonicalBytes
    }

    /// `setting` names where `keys` come from, for the unit's answer.
    public static func check(_ document: JSONDocument, topic: String, trusting keys: [[UInt8]], setting: String) -> Check {
        guard let field = document[member] else { return .missing }
        guard case .string(let text) = field, let signature = Data(base64Encoded: text), signature.count == 64 else {
            return .invalid("signature must be a 64-byte Ed25519 signature in base64")
        }
        guard !keys.isEmpty else { return .invalid("no [fleet] \(setting) are configured on this unit") }
        let message = signedBytes(of: document, topic: topic)
        for raw in keys {
            guard let key = try? Curve25519.Signing.PublicKey(rawRepresentation: raw) else { continue }
            if key.isValidSignature(signature, for: message) { return .valid }
        }
        return .invalid("signature does not match any of the configured keys")
    }

    /// The document with a `signature` member added (replacing any old one).
    public static func sign(_ document: JSONDocument, topic: String, with key: Curve25519.Signing.PrivateKey) throws -> JSONDocument {
        guard case .object(let members) = document.removing(member) else {
            throw ConfigError(problems: ["only a JSON object can be signed"])
        }
        let signature = try key.signature(for: signedBytes(of: document, topic: topic))
        return .object(members + [(member, .string(signature.base64EncodedString()))])
    }
}
