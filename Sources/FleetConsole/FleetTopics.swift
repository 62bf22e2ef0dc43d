/// The topics of one fleet (docs/protocol.md, "Topics"): `{prefix}/{fleet}/{unit}/{name}`.
public struct FleetTopics: Sendable, Equatable {
    public var prefix: String
    public var fleet: String

    public init(prefix: String = "taxi", fleet: String) {
        self.prefix = prefix
        self.fleet = fleet
    }

    public var fleetConfig: String { "\(prefix)/\(fleet)/config" }
    public func unit(_ unit: String, _ name: String) -> String { "\(prefix)/\(fleet)/\(unit)/\(name)" }
    /// `name` of every unit of the fleet.
    public func everyUnit(_ name: String) -> String { "\(prefix)/\(fleet)/+/\(name)" }

    /// What the fleet's state is read from: retained, one message per unit and topic.
    public static let stateTopics = ["status", "telemetry", "pos/last"]

    /// The unit and the topic's name after it, for a topic of this fleet's units.
    public func split(_ topic: String) -> (unit: String, name: String)? {
        let base = "\(prefix)/\(fleet)/"
        guard topic.hasPrefix(base) else { return nil }
        let rest = topic.dropFirst(base.count)
        guard let slash = rest.firstIndex(of: "/") else { return nil }
        let unit = String(rest[..<slash])
        let name = String(rest[rest.index(after: slash)...])
        guard !unit.isEmpty, !name.isEmpty else { return nil }
        return (unit, name)
    }
}
