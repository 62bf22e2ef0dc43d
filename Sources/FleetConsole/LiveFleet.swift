import StrictJSON
import UnitCore

/// A zone as the fleet's document sets it (`[[zones]]`: `id` and `polygon` of `[lat, lon]`).
public struct FleetZone: Sendable, Equatable {
    public var id: String
    public var polygon: [(lat: Double, lon: Double)]

    public static func == (lhs: FleetZone, rhs: FleetZone) -> Bool {
        lhs.id == rhs.id && lhs.polygon.elementsEqual(rhs.polygon) { $0.lat == $1.lat && $0.lon == $1.lon }
    }

    /// The zones of a settings object; entries that are not a zone are left out (the units refuse
    /// such a document anyway).
    public static func zones(inSettings settings: JSONDocument?) -> [FleetZone] {
        guard case .array(let entries)? = settings?["zones"] else { return [] }
        return entries.compactMap { entry in
            guard let id = entry.string("id"), case .array(let points)? = entry["polygon"] else { return nil }
            let polygon = points.compactMap { point -> (lat: Double, lon: Double)? in
                guard case .array(let pair) = point, pair.count == 2,
                      case .number(let lat) = pair[0], case .number(let lon) = pair[1],
                      let latitude = Double(lat), let longitude = Double(lon)
                else { return nil }
                return (latitude, longitude)
            }
            return polygon.count >= 3 ? FleetZone(id: id, polygon: polygon) : nil
        }
    }
}

/// What the live fleet page shows, kept up to date message by message: every unit, the zones of
/// the fleet's retained document, and the rollout of that document (the last push): the acks of
/// its version and how many units hold it.
public struct LiveFleet: Sendable, Equatable {
    public private(set) var state: FleetState
    public private(set) var zones: [FleetZone]
    /// The version of the fleet's retained document.
    public private(set) var fleetVersion: Int?
    /// The fleet-scope acks of `fleetVersion`, by unit.
    public private(set) var acks: [String: UnitAnswer] = [:]
    /// Grows with every change, so a page is sent a new snapshot only when there is one.
    public private(set) var revision = 0

    /// Zones for the map when the fleet's document has none (e.g. the fleet image's file).
    public init(topics: FleetTopics, zones: [FleetZone] = []) {
        state = FleetState(topics: topics)
        self.zones = zones
    }

    public var topics: FleetTopics { state.topics }

    /// What to subscribe to.
    public var subscriptions: [String] {
        (FleetTopics.stateTopics + [.pos, .configAck]).map(topics.everyUnit) + [topics.fleetConfig]
    }

    /// Takes one message; returns whether anything shown changed.
    @discardableResult
    public mutating func take(topic: String, payload: [UInt8]) -> Bool {
        if topic == topics.fleetConfig {
            guard let document = try? JSONDocument.parse(payload), let version = document.int("version") else { return false }
            let documentZones = FleetZone.zones(inSettings: document["settings"])
            if version != fleetVersion { acks = [:] }
            fleetVersion = version
            if !documentZones.isEmpty { zones = documentZones }
        } else if let (unit, name) = topics.split(topic), name == .configAck {
            guard let message = try? JSONDocument.parse(payload), message.string("scope") == "fleet",
                  let version = message.int("version"), let result = message.string("result")
            else { return false }
            // An ack newer than the retained document the page saw: that push is the last one.
            if version > fleetVersion ?? 0 {
                fleetVersion = version
                acks = [:]
            }
            guard version == fleetVersion else { return false }
            acks[unit] = UnitAnswer(unit: unit, result: result, reason: message.string("reason"), errors: message.strings("errors"), message: message)
        } else if state.take(topic: topic, payload: payload) == nil {
            return false
        }
        revision += 1
        return true
    }

    /// Everything the page draws, as one JSON object.
    public func snapshot(now: Int64) -> JSONDocument {
        let rows = StatusQuery().rows(of: state, now: now)
        var results: [String: Int] = [:]
        for answer in acks.values { results[answer.result, default: 0] += 1 }
        // A unit's retained status names its versions only when it was last published, so an ack
        // seen here counts too.
        let holding = fleetVersion.map { version in
            Set(state.units.values.filter { $0.configVersions["fleet"] == version }.map(\.unit))
                .union(acks.values.filter { $0.result == "applied" }.map(\.unit))
                .subtracting(acks.values.filter { $0.result == "rolled_back" }.map(\.unit))
                .count
        }
        let rollout = JSONDocument.members([
            ("version", fleetVersion.map(JSONDocument.int)),
            ("holding", holding.map(JSONDocument.int)),
            ("units", .int(state.units.count)),
            ("results", .object(results.sorted { $0.key < $1.key }.map { (key: $0.key, value: .int($0.value)) })),
            ("refusals", .array(acks.values.filter { !$0.succeeded }.sorted { $0.unit < $1.unit }.map(\.message))),
        ])
        return .members([
            ("fleet", .string(topics.fleet)),
            ("now", .int(Int(now))),
            ("units", StatusTable.json(rows, now: now)),
            ("zones", .array(zones.map { zone in
                .object([
                    (key: "id", value: .string(zone.id)),
                    (key: "polygon", value: .array(zone.polygon.map { .array([.number(literal: "\($0.lat)"), .number(literal: "\($0.lon)")]) })),
                ])
            })),
            ("rollout", rollout),
        ])
    }
}
