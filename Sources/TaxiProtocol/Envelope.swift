/// What every message the unit queues for the broker carries beside its body: the unit's id, the
/// topic's `seq`, a unique `id` (the receivers' dedup key) and the driver logged in, at the same
/// level as the body's own fields (`{"unit","seq","id","driver",...body}`). The retained state
/// documents (`status`, `telemetry`, `pos/last`) and the compact live `pos` are not queued and
/// carry none of it.
///
/// A body's fields read through the envelope (`ride.job`), so a message reads as one value.
@dynamicMemberLookup
public struct Envelope<Body: Sendable>: Sendable {
    public var unit: String
    public var seq: Int64
    public var id: String
    /// The driver logged in when the message was made; omitted with nobody logged in.
    public var driver: String?
    public var body: Body

    public init(_ body: Body, unit: String, seq: Int64, id: String, driver: String? = nil) {
        self.body = body
        self.unit = unit
        self.seq = seq
        self.id = id
        self.driver = driver
    }

    public subscript<Value>(dynamicMember field: WritableKeyPath<Body, Value>) -> Value {
        get { body[keyPath: field] }
        set { body[keyPath: field] = newValue }
    }

    public subscript<Value>(dynamicMember field: KeyPath<Body, Value>) -> Value {
        body[keyPath: field]
    }

    enum CodingKeys: String, CodingKey {
        case unit, seq, id, driver
    }
}

extension Envelope: Equatable where Body: Equatable {}

extension Envelope: Encodable where Body: Encodable {
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(unit, forKey: .unit)
        try container.encode(seq, forKey: .seq)
        try container.encode(id, forKey: .id)
        try container.encodeIfPresent(driver, forKey: .driver)
        try body.encode(to: encoder)
    }
}

/// How a receiver (dispatchsim, the tests) reads a unit message.
extension Envelope: Decodable where Body: Decodable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        unit = try container.decode(String.self, forKey: .unit)
        seq = try container.decode(Int64.self, forKey: .seq)
        id = try container.decode(String.self, forKey: .id)
        driver = try container.decodeIfPresent(String.self, forKey: .driver)
        body = try Body(from: decoder)
    }
}
