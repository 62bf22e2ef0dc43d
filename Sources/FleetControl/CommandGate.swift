import StrictJSON
import TaxiProtocol
import UnitConfig
import UnitCore

/// A command from the fleet on `{prefix}/{fleet}/{unit}/cmd` that passed every check.
public struct FleetCommand: Sendable, Equatable {
    public enum Action: Sendable, Equatable {
        /// Publish the current position now.
        case report
        /// Publish a full status dump in the reply.
        case status
        /// Delete stored positions older than this many days.
        case purge(days: Int)
        /// Drop the broker connection and connect again.
        case reconnect
    }

    public var id: String
    public var name: String
    public var action: Action
    /// Unit clock, ms since the Unix epoch.
    public var expiresAt: UnitTime

    public init(id: String, name: String, action: Action, expiresAt: UnitTime) {
        self.id = id
        self.name = name
        self.action = action
        self.expiresAt = expiresAt
    }
}

/// The `cmd/reply` for a command that is not executed.
public struct CommandRefusal: Sendable, Equatable {
    public enum Result: String, Sendable, Codable {
        case rejected
        case expired
        case unknown
    }

    /// Omitted when the command's id could not be read.
    public var id: String?
    public var name: String?
    public var result: Result
    public var reason: String?
    public var errors: [String]
}

public enum CommandDecision: Sendable, Equatable {
    /// Remember the id until it expires, execute, reply `ok` (or `failed`). Only executed commands
    /// are remembered: a replayed refusal just gets the same answer again.
    case execute(FleetCommand)
    case refuse(CommandRefusal)
    /// A command id already executed: a replay, which does nothing, not even a second reply.
    case ignore(id: String)
}

/// Admits fleet commands: size, JSON, signature, expiry, replay. Pure: the shell keeps the executed
/// ids in SQLite and gives them back here.
public struct CommandGate: Sendable {
    public let trust: FleetTrust
    /// Executed command ids and when they expire; kept until then, because after it an old command
    /// is refused as expired anyway.
    public private(set) var executed: [String: UnitTime]

    /// A command valid longer than this is refused, which bounds how many ids the unit must keep.
    public static let longestValidity: Duration = .seconds(24 * 3600)
    public static let maximumIDLength = 128
    public static let known = ["report", "status", "purge", "reconnect"]

    public init(trust: FleetTrust, executed: [String: UnitTime] = [:]) {
        self.trust = trust
        self.executed = executed
    }

    /// Decides about one message; `now` is the unit's clock. An admitted command's id is
    /// remembered here at once.
    public mutating func admit(_ payload: [UInt8], topic: String, now: UnitTime) -> CommandDecision {
        executed = executed.filter { $0.value > now }
        let document: JSONDocument
        switch FleetMessage.parse(payload) {
        case .success(let parsed): document = parsed
        case .failure(let rejection): return .refuse(Self.refusal(id: nil, name: nil, .rejected, rejection))
        }
        let id = FleetMessage.string("id", in: document)
        let name = FleetMessage.string("cmd", in: document)
        if let rejection = FleetMessage.authenticate(document, topic: topic, trust: trust, as: .command) {
            return .refuse(Self.refusal(id: id, name: name, .rejected, rejection))
        }
        guard let id, !id.isEmpty, id.utf8.count <= Self.maximumIDLength else {
            let problem = "id must be a non-empty string of at most \(Self.maximumIDLength) bytes"
            return .refuse(Self.refusal(id: nil, name: name, .rejected, FleetRejection(.invalid, [problem])))
        }
        if executed[id] != nil { return .ignore(id: id) }
        guard let expiresAt = FleetMessage.integer("expires_at", in: document).map({ UnitTime(milliseconds: Int64($0)) }) else {
            return .refuse(Self.refusal(id: id, name: name, .rejected, FleetRejection(.invalid, ["expires_at must be an integer (ms since the Unix epoch)"])))
        }
        if expiresAt <= now {
            return .refuse(CommandRefusal(id: id, name: name, result: .expired, reason: nil, errors: ["expired at \(expiresAt), unit clock \(now)"]))
        }
        if expiresAt - now > Self.longestValidity {
            return .refuse(Self.refusal(id: id, name: name, .rejected, FleetRejection(.invalid, ["expires_at is more than 24 h ahead of the unit clock \(now)"])))
        }
        guard let name else {
            return .refuse(Self.refusal(id: id, name: nil, .rejected, FleetRejection(.invalid, ["cmd must be a string"])))
        }
        var allowed: Set<String> = ["id", "cmd", "expires_at"]
        let action: FleetCommand.Action
        switch name {
        case "report": action = .report
        case "status": action = .status
        case "reconnect": action = .reconnect
        case "purge":
            allowed.insert("days")
            guard let days = FleetMessage.integer("days", in: document), (0...36500).contains(days) else {
                return .refuse(Self.refusal(id: id, name: name, .rejected, FleetRejection(.invalid, ["days must be an integer between 0 and 36500"])))
            }
            action = .purge(days: days)
        default:
            return .refuse(CommandRefusal(id: id, name: name, result: .unknown, reason: nil, errors: ["unknown command \"\(name)\"; known: \(Self.known.joined(separator: ", "))"]))
        }
        let unknown = FleetMessage.unknownMembers(of: document, allowed: allowed)
        guard unknown.isEmpty else {
            return .refuse(Self.refusal(id: id, name: name, .rejected, FleetRejection(.invalid, unknown)))
        }
        executed[id] = expiresAt
        return .execute(FleetCommand(id: id, name: name, action: action, expiresAt: expiresAt))
    }

    /// A command refused unread (over the size limit, or set aside as poison).
    public static func refuseUnread(_ rejection: FleetRejection) -> CommandDecision {
        .refuse(refusal(id: nil, name: nil, .rejected, rejection))
    }

    private static func refusal(id: String?, name: String?, _ result: CommandRefusal.Result, _ rejection: FleetRejection) -> CommandRefusal {
        CommandRefusal(id: id, name: name, result: result, reason: rejection.reason.rawValue, errors: rejection.errors)
    }
}
