import Foundation
import TaxiProtocol

/// The dispatcher's side of docs/protocol.md, in the units' own wire types (TaxiProtocol), so the
/// reference dispatcher and the units cannot drift apart.

/// One unit message as the dispatcher sees it. Messages with an `id` (everything but `status`)
/// may arrive more than once; the dispatcher counts each (unit, `id`) once. The queued ones are
/// read as the `Envelope` the unit wrote them in.
public enum UnitReport: Sendable, Equatable {
    case status(StatusMessage)
    /// The last will, `{"online":false}`.
    /// The last will: `conn` names the connection it was set for (protocol 2).
    case offline(conn: Int64?)
    case event(id: String, Transition)
    /// A zone change on `event` (`"type":"zone"`).
    case zone(id: String, ZoneEventMessage)
    /// The ignition went on or off, on `event` (`"type":"ignition"`).
    case ignition(id: String, IgnitionEventMessage)
    /// The driver's shift started, ended, a break reset its driving, or a limit was reached, on
    /// `event` (`"type":"shift"`).
    case shift(id: String, ShiftEventMessage)
    /// The driver says the taxi is clear soon, on `event` (`"type":"soon_clear"`).
    case soonClear(id: String, SoonClearEventMessage)
    /// The driver asks to drop the job, on `event` (`"type":"cancel_request"`).
    case cancelRequest(id: String, CancelRequestEventMessage)
    /// A driver logged in or out, on `event` (`"type":"login"`, `"logout"`).
    case driverSession(id: String, DriverSessionEventMessage)
    /// The unit did not obey a `driver/logout`, on `event` (`"type":"logout_refused"`).
    case logoutRefused(id: String, LogoutRefusedEventMessage)
    case reply(id: String, JobReply)
    case sos(id: String, SOSAlarm)
    case position(ReceivedPosition)
    /// `pos/last`: the unit's newest fix, retained state like `status`; its id is the `pos` message's
    /// it repeats, so it is never deduplicated against `pos` (docs/protocol.md, "pos/last").
    case lastPosition(ReceivedPosition)
    /// A finished ride (`ride`).
    case ride(RideMessage)
    /// `msg/reply`: an answer, a driver's own message, or `invalid`.
    case messageReply(id: String, MessageReply)
    /// `msg/read`: the driver opened a message.
    case messageRead(id: String, MessageRead)
}

/// A `pos` message decoded, whichever of its forms it came in.
public struct ReceivedPosition: Sendable, Equatable {
    public var id: String
    /// Oldest first.
    public var points: [PositionPoint]
    public var backfill: Bool

    public init(id: String, points: [PositionPoint], backfill: Bool) {
        self.id = id
        self.points = points
        self.backfill = backfill
    }
}

/// What is not the dispatcher's to decode, or not a payload of protocol 1 or 2.
public struct UndecodablePayload: Error, CustomStringConvertible {
    public var description: String
}

extension UnitReport {
    /// The topics a dispatcher reads (the fleet configuration ones are not its business).
    public static let topicsRead: [UnitTopic] = [.status, .event, .jobReply, .sos, .pos, .posLast]

    /// `event` carries transitions (no `type`), zone changes (`"type":"zone"`), ignition changes
    /// (`"type":"ignition"`), shift events (`"type":"shift"`), soon-clear announcements (`"type":"soon_clear"`) and the driver's
    /// cancel requests (`"type":"cancel_request"`), logins and logouts (`"type":"login"`, `"logout"`)
    /// and refused logouts (`"type":"logout_refused"`).
    private struct EventKind: Decodable {
        var type: String?
    }

    /// A protocol 1 live position (`points` of objects): rows written before a unit was upgraded
    /// are sent as they were (docs/protocol.md, "Versions").
    private struct ProtocolOneLivePosition: Decodable {
        var id: String
        var points: [PositionPoint]
    }

    /// Tells the three `pos` forms apart by their shape: `p` (live), `backfill` (rows), `points` of
    /// objects (protocol 1).
    private struct PositionShape: Decodable {
        var p: [Int64?]?
        var backfill: Bool?
    }

    /// A unit message; nil for topics a dispatcher does not read.
    public static func decode(_ topic: UnitTopic, _ data: Data) throws -> UnitReport? {
        let decoder = JSONDecoder()
        switch topic {
        case .status:
            do {
                return .status(try decoder.decode(StatusMessage.self, from: data))
            } catch {
                guard let will = try? decoder.decode(OfflineStatusMessage.self, from: data), !will.online else { throw error }
                return .offline(conn: will.conn)
            }
        case .event:
            switch try decoder.decode(EventKind.self, from: data).type {
            case "zone"?:
                let change = try decoder.decode(ZoneEventMessage.self, from: data)
                return .zone(id: change.id, change)
            case "ignition"?:
                let change = try decoder.decode(IgnitionEventMessage.self, from: data)
                return .ignition(id: change.id, change)
            case "shift"?:
                let shift = try decoder.decode(ShiftEventMessage.self, from: data)
                return .shift(id: shift.id, shift)
            case "soon_clear"?:
                let soon = try decoder.decode(SoonClearEventMessage.self, from: data)
                return .soonClear(id: soon.id, soon)
            case "cancel_request"?:
                let request = try decoder.decode(CancelRequestEventMessage.self, from: data)
                return .cancelRequest(id: request.id, request)
            case "login"?, "logout"?:
                let session = try decoder.decode(DriverSessionEventMessage.self, from: data)
                return .driverSession(id: session.id, session)
            case "logout_refused"?:
                let refusal = try decoder.decode(LogoutRefusedEventMessage.self, from: data)
                return .logoutRefused(id: refusal.id, refusal)
            default:
                break
            }
            let event = try decoder.decode(Envelope<Transition>.self, from: data)
            return .event(id: event.id, event.body)
        case .jobReply:
            let reply = try decoder.decode(Envelope<JobReply>.self, from: data)
            return .reply(id: reply.id, reply.body)
        case .sos:
            let alarm = try decoder.decode(Envelope<SOSAlarm>.self, from: data)
            return .sos(id: alarm.id, alarm.body)
        case .pos: return .position(try decodePosition(data, decoder))
        case .posLast: return .lastPosition(try decodePosition(data, decoder))
        case .config, .cmd, .configAck, .cmdReply, .telemetry: return nil
        }
    }

    /// `msg/reply` or `msg/read`.
    public static func decode(_ topic: MessageTopic, _ data: Data) throws -> UnitReport {
        let decoder = JSONDecoder()
        switch topic {
        case .reply:
            let reply = try decoder.decode(Envelope<MessageReply>.self, from: data)
            return .messageReply(id: reply.id, reply.body)
        case .read:
            let read = try decoder.decode(Envelope<MessageRead>.self, from: data)
            return .messageRead(id: read.id, read.body)
        }
    }

    private static func decodePosition(_ data: Data, _ decoder: JSONDecoder) throws -> ReceivedPosition {
        let shape = try decoder.decode(PositionShape.self, from: data)
        if shape.p != nil {
            let live = try decoder.decode(LivePositionMessage.self, from: data)
            return ReceivedPosition(id: live.id, points: [live.point], backfill: false)
        }
        if shape.backfill == true {
            let batch = try decoder.decode(BackfillMessage.self, from: data)
            guard let points = PositionBatch.decode(batch.points) else { throw UndecodablePayload(description: "backfill rows that do not decode") }
            return ReceivedPosition(id: batch.id, points: points, backfill: true)
        }
        let old = try decoder.decode(ProtocolOneLivePosition.self, from: data)
        return ReceivedPosition(id: old.id, points: old.points, backfill: false)
    }
}
