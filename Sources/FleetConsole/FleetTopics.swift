import TaxiProtocol

/// The topics of one fleet (docs/protocol.md, "Topics"), named by the protocol's catalogue.
public struct FleetTopics: Sendable, Equatable {
    public var prefix: String
    public var fleet: String

    public init(prefix: String = "taxi", fleet: String) {
        self.prefix = prefix
        self.fleet = fleet
    }

    public var fleetConfig: String { ContractTopic.fleetConfig.topic(prefix: prefix, fleet: fleet, unit: "") }
    public func unit(_ unit: String, _ topic: ContractTopic) -> String { topic.topic(prefix: prefix, fleet: fleet, unit: unit) }
    /// `topic` of every unit of the fleet.
    public func everyUnit(_ topic: ContractTopic) -> String { unit("+", topic) }

    /// What the fleet's state is read from: retained, one message per unit and topic.
    public static let stateTopics: [ContractTopic] = [.status, .telemetry, .posLast]

    /// The unit and the topic after it, for a catalogued topic of this fleet's units.
    public func split(_ topic: String) -> (unit: String, topic: ContractTopic)? {
        let base = "\(prefix)/\(fleet)/"
        guard topic.hasPrefix(base) else { return nil }
        let rest = topic.dropFirst(base.count)
        guard let slash = rest.firstIndex(of: "/") else { return nil }
        let unit = String(rest[..<slash])
        guard !unit.isEmpty, let name = ContractTopic(rawValue: String(rest[rest.index(after: slash)...])), name.isUnitTopic else { return nil }
        return (unit, name)
    }
}
