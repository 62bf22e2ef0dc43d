import StrictJSON
import UnitConfig
import UnitCore

/// Whom the unit trusts to change it: from the local file, never from the fleet.
public struct FleetTrust: Sendable, Equatable {
    /// Keys for config documents (`[fleet] config_pubkeys`).
    public var publicKeys: [[UInt8]]
    /// Keys for commands (`[fleet] command_pubkeys`); empty: the config keys sign commands too.
    public var commandPublicKeys: [[UInt8]]
    public var requireSigned: Bool

    public init(publicKeys: [[UInt8]], commandPublicKeys: [[UInt8]] = [], requireSigned: Bool) {
        self.publicKeys = publicKeys
        self.commandPublicKeys = commandPublicKeys
        self.requireSigned = requireSigned
    }

    public init(_ configuration: UnitConfiguration) {
        self.init(
            publicKeys: configuration.fleet.configPubkeys, commandPublicKeys: configuration.fleet.commandPubkeys,
            requireSigned: configuration.fleet.requireSigned)
    }

    /// What a kind of message is checked against: a command key can then sign no config.
    func keys(for kind: FleetMessage.Kind) -> (keys: [[UInt8]], setting: String) {
        switch kind {
        case .config: (publicKeys, "config_pubkeys")
        case .command: commandPublicKeys.isEmpty ? (publicKeys, "config_pubkeys") : (commandPublicKeys, "command_pubkeys")
        }
    }
}

/// Why an inbound fleet message was refused; the `reason` field of acks and replies.
public enum RejectionReason: String, Sendable, Codable {
    /// Larger than `FleetMessage.maximumBytes`.
    case tooLarge = "too_large"
    /// Not a JSON object.
    case notJSON = "not_json"
    /// Unsigned while signatures are required, or a signature that does not verify.
    case signature
    /// Wrong types, ranges, unknown or local-only keys.
    case invalid
    /// A version older than the one the unit holds.
    case stale
    /// A config arrived while an [mqtt] change is still being tried.
    case busy
}

/// A refused message: the reason, one human line per problem, and what could be read of it.
public struct FleetRejection: Error, Sendable, Equatable {
    public var reason: RejectionReason
    public var errors: [String]

    public init(_ reason: RejectionReason, _ errors: [String]) {
        self.reason = reason
        self.errors = errors
    }
}

/// The checks every inbound fleet message passes first, in this order: size, JSON, signature.
public enum FleetMessage {
    /// Nothing the fleet sends needs more; a larger payload is refused before it is parsed.
    public static let maximumBytes = 64 * 1024

    public static func parse(_ payload: [UInt8]) -> Result<JSONDocument, FleetRejection> {
        guard payload.count <= maximumBytes else { return .failure(tooLarge(bytes: payload.count)) }
        let document: JSONDocument
        do {
            document = try JSONDocument.parse(payload)
        } catch {
            return .failure(FleetRejection(.notJSON, error.problems))
        }
        guard case .object = document else {
            return .failure(FleetRejection(.notJSON, ["the payload must be a JSON object"]))
        }
        return .success(document)
    }

    /// A payload of `bytes`, over `maximumBytes`: refused whether it was read or not.
    public static func tooLarge(bytes: Int) -> FleetRejection {
        FleetRejection(.tooLarge, ["payload is \(bytes) bytes, more than the limit of \(maximumBytes)"])
    }

    /// A message the unit died handling twice, set aside unread.
    public static let poisoned = FleetRejection(.invalid, ["set aside unread: the unit died twice while handling this message"])

    /// Config documents and commands are signed by keys of their own.
    public enum Kind: Sendable {
        case config
        case command
    }

    public static func authenticate(_ document: JSONDocument, topic: String, trust: FleetTrust, as kind: Kind) -> FleetRejection? {
        let (keys, setting) = trust.keys(for: kind)
        switch FleetSignature.check(document, topic: topic, trusting: keys, setting: setting) {
        case .valid:
            return nil
        case .missing:
            return trust.requireSigned ? FleetRejection(.signature, ["the document is not signed"]) : nil
        case .invalid(let why):
            return FleetRejection(.signature, [why])
        }
    }

    /// The top-level integer `key`, if there is one.
    static func integer(_ key: String, in document: JSONDocument) -> Int? {
        guard case .number(let literal)? = document[key] else { return nil }
        return Int(literal)
    }

    static func string(_ key: String, in document: JSONDocument) -> String? {
        guard case .string(let text)? = document[key] else { return nil }
        return text
    }

    /// Top-level members other than `allowed` and the signature.
    static func unknownMembers(of document: JSONDocument, allowed: Set<String>) -> [String] {
        guard case .object(let members) = document else { return [] }
        return members.map(\.key).filter { !allowed.contains($0) && $0 != FleetSignature.member }
            .map { "unknown key \($0)" }
    }
}
