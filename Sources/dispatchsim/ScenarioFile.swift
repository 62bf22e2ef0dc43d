import DispatchCore
import Foundation
import TaxiProtocol
import UnitConfig
import UnitCore

/// A scenario in TOML (see `scenarios/README.md`): the dispatcher's settings, explicit requests,
/// withdrawals and random generators. Times are seconds from the start of the run.
struct ScenarioFile {
    var settings = DispatchSettings()
    var inputs: [ScheduledInput] = []
    var demands: [ZoneDemand] = []
    /// Messages for every driver of the fleet or of a zone, in time order.
    var broadcasts: [ScheduledBroadcast] = []
    var durationS: Double?

    init() {}

    static func load(path: String, startMs: Int64) throws -> ScenarioFile {
        try ScenarioFile(document: parse(path: path), startMs: startMs)
    }

    /// `startMs` turns a reservation's `meeting_at_s` into a wall-clock meeting time.
    init(document: ConfigValue, startMs: Int64) throws {
        var problems: [String] = []
        let root = document.table
        if let dispatch = root["dispatch"]?.table {
            settings.respondWithinS = dispatch["respond_within_s"]?.integer ?? settings.respondWithinS
            settings.replyGraceS = dispatch["reply_grace_s"]?.integer ?? settings.replyGraceS
            settings.reservationLeadS = dispatch["reservation_lead_s"]?.integer ?? settings.reservationLeadS
            settings.preBookingLeadS = dispatch["prebook_lead_s"]?.integer ?? settings.preBookingLeadS
            settings.preBookingOfflineS = dispatch["prebook_offline_s"]?.integer ?? settings.preBookingOfflineS
            durationS = dispatch["duration_s"]?.number
        }
        for (index, entry) in (root["request"]?.array ?? []).enumerated() {
            let where_ = "request #\(index + 1)"
            let table = entry.table
            guard let id = table["id"]?.string, let atMs = table["at_s"].flatMap(Self.scheduleMs),
                  case .array(let pair)? = table["pickup"], pair.count == 2,
                  let lat = pair[0].number, let lon = pair[1].number else {
                problems.append("\(where_): needs id, at_s (0 to \(Self.longestRunS) s) and pickup = [lat, lon]")
                continue
            }
            var meetingTime: Int64?
            if let meeting = table["meeting_at_s"] {
                guard let meetingMs = Self.scheduleMs(meeting) else {
                    problems.append("\(where_): meeting_at_s must be 0 to \(Self.longestRunS) s")
                    continue
                }
                meetingTime = startMs.saturatingAdd(meetingMs)
            }
            let request = PassengerRequest(
                id: id, pickup: Coordinate(lat: lat, lon: lon), address: table["address"]?.string,
                passengers: table["passengers"]?.integer ?? 1, meetingTime: meetingTime,
                sharesRideOf: table["shares"]?.string, note: table["note"]?.string, dropoff: Self.dropoff(table),
                passenger: Self.passenger(table), fare: table["fare"]?.integer.map(Int64.init), currency: table["currency"]?.string)
            inputs.append(ScheduledInput(atMs: atMs, input: .request(request)))
        }
        for (index, entry) in (root["cancel"]?.array ?? []).enumerated() {
            guard let id = entry.table["request"]?.string, let atMs = entry.table["at_s"].flatMap(Self.scheduleMs) else {
                problems.append("cancel #\(index + 1): needs request and at_s (0 to \(Self.longestRunS) s)")
                continue
            }
            inputs.append(ScheduledInput(atMs: atMs, input: .withdraw(request: id)))
        }
        for (index, entry) in (root["generate"]?.array ?? []).enumerated() {
            let table = entry.table
            let first = table["first_at_s"]?.number ?? 0
            let until = table["until_s"]?.number
            if table["until_s"] != nil, !(until.map { $0 >= 0 && $0 <= Double(Self.longestRunS) } ?? false) {
                problems.append("generate #\(index + 1): until_s must be 0 to \(Self.longestRunS) s")
                continue
            }
            var preBookings: PreBookingShare?
            if let every = table["prebook_every"]?.integer {
                guard every > 0, let ahead = table["prebook_ahead_s"]?.number, ahead > 0, ahead <= Double(Self.longestRunS) else {
                    problems.append("generate #\(index + 1): prebook_every (> 0) needs prebook_ahead_s (1 to \(Self.longestRunS) s)")
                    continue
                }
                preBookings = PreBookingShare(every: every, aheadS: ahead)
            }
            switch (table["zone"]?.string, table["every_s"]?.number, table["per_minute"]?.number) {
            case (let zone?, let every?, nil) where every > 0:
                demands.append(ZoneDemand(zone: zone, rate: .every(seconds: every), firstAtS: first, untilS: until, preBookings: preBookings))
            case (let zone?, nil, let rate?) where rate > 0:
                demands.append(ZoneDemand(zone: zone, rate: .poisson(perMinute: rate), firstAtS: first, untilS: until, preBookings: preBookings))
            default:
                problems.append("generate #\(index + 1): needs zone and one of every_s or per_minute (> 0)")
            }
        }
        for (index, entry) in (root["broadcast"]?.array ?? []).enumerated() {
            let where_ = "broadcast #\(index + 1)"
            let table = entry.table
            guard let text = table["text"]?.string, let atMs = table["at_s"].flatMap(Self.scheduleMs) else {
                problems.append("\(where_): needs text and at_s (0 to \(Self.longestRunS) s)")
                continue
            }
            var priority: MessagePriority?
            if let name = table["priority"]?.string {
                guard let known = MessagePriority(rawValue: name) else {
                    problems.append("\(where_): priority must be normal or urgent")
                    continue
                }
                priority = known
            }
            let replies = table["replies"]?.array.map { $0.compactMap(\.string) }
            let message = TextMessage(id: table["id"]?.string ?? "broadcast-\(index + 1)", text: text, replies: replies, priority: priority)
            if let zone = table["zone"]?.string, !ContractTopic.isBroadcastZone(zone) {
                problems.append("\(where_): zone \"\(zone)\" cannot name a topic (it holds '/', '+' or '#')")
            } else if let reason = InboundMessage.checkID(message.id, field: "id") ?? InboundMessage.check(message, now: 0) {
                problems.append("\(where_): \(reason)")
            } else {
                broadcasts.append(ScheduledBroadcast(atMs: atMs, zone: table["zone"]?.string, message: message))
            }
        }
        broadcasts.sort { $0.atMs < $1.atMs }
        guard problems.isEmpty else { throw ConfigError(problems: problems) }
    }

    /// A year: far beyond any run, and far from `Int64`'s range once in milliseconds.
    static let longestRunS = 366 * 24 * 3600

    /// A scenario time in milliseconds from the start, or nil when it is not a number in
    /// 0...`longestRunS` seconds (a typo such as `at_s = 1e300` must not trap).
    private static func scheduleMs(_ value: ConfigValue) -> Int64? {
        guard let seconds = value.number, seconds >= 0, seconds <= Double(Self.longestRunS) else { return nil }
        return Int64(millisecondsOf: seconds)
    }

    /// `dropoff = [lat, lon]` with an optional `dropoff_address`.
    private static func dropoff(_ table: [String: ConfigValue]) -> Place? {
        guard case .array(let pair)? = table["dropoff"], pair.count == 2, let lat = pair[0].number, let lon = pair[1].number else { return nil }
        return Place(lat: lat, lon: lon, address: table["dropoff_address"]?.string)
    }

    /// `passenger_name`, `passenger_phone`, `pickup_code`: any of them.
    private static func passenger(_ table: [String: ConfigValue]) -> Passenger? {
        let passenger = Passenger(
            name: table["passenger_name"]?.string, phone: table["passenger_phone"]?.string, pickupCode: table["pickup_code"]?.string)
        return passenger == Passenger() ? nil : passenger
    }

    /// `[[zones]]` from any TOML file (a unit's configuration or a fleet's zone list): id and
    /// polygon = [[lat, lon], ...], at least three vertices.
    static func zones(path: String) throws -> ZoneMap {
        var problems: [String] = []
        var zones: [DispatchCore.Zone] = []
        for (index, entry) in (try parse(path: path).table["zones"]?.array ?? []).enumerated() {
            let vertices = (entry.table["polygon"]?.array ?? []).compactMap { vertex -> Coordinate? in
                guard case .array(let pair) = vertex, pair.count == 2, let lat = pair[0].number, let lon = pair[1].number else { return nil }
                return Coordinate(lat: lat, lon: lon)
            }
            guard let id = entry.table["id"]?.string, vertices.count >= 3,
                  vertices.count == entry.table["polygon"]?.array?.count else {
                problems.append("zones #\(index + 1): needs id and polygon = [[lat, lon], ...] with at least 3 points")
                continue
            }
            zones.append(DispatchCore.Zone(id: id, polygon: vertices))
        }
        if zones.isEmpty && problems.isEmpty { problems.append("no [[zones]] found") }
        guard problems.isEmpty else { throw ConfigError(problems: problems.map { "\(path): \($0)" }) }
        return ZoneMap(zones: zones)
    }

    private static func parse(path: String) throws -> ConfigValue {
        do {
            return try ConfigValue.parseTOML(String(contentsOfFile: path, encoding: .utf8))
        } catch let error as ConfigError {
            throw ConfigError(problems: error.problems.map { "\(path): \($0)" })
        }
    }
}

/// A `[[broadcast]]`: `message` at `atMs` from the start, on the fleet's topic or `zone`'s.
struct ScheduledBroadcast {
    var atMs: Int64
    var zone: String?
    var message: TextMessage
}

extension ConfigValue {
    var table: [String: ConfigValue] {
        if case .table(let entries) = self { return entries }
        return [:]
    }

    var array: [ConfigValue]? {
        if case .array(let items) = self { return items }
        return nil
    }

    var string: String? {
        if case .string(let text) = self { return text }
        return nil
    }

    var integer: Int? {
        if case .integer(let number) = self { return number }
        return nil
    }

    var number: Double? {
        switch self {
        case .integer(let number): Double(number)
        case .double(let number): number
        default: nil
        }
    }
}
