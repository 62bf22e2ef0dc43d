/// The driver's announcement, while on board, that the taxi will be clear soon: the dispatcher may
/// plan the next job around it.
public struct SoonClear: Sendable, Equatable {
    public var job: String
    /// Clear in this many minutes, as the driver said.
    public var minutes: Int

    public init(job: String, minutes: Int) {
        self.job = job
        self.minutes = minutes
    }
}

/// `event` with `"type":"soon_clear"` (docs/protocol.md, "Soon clear").
public struct SoonClearEventMessage: Sendable, Equatable, Codable {
    public var type = "soon_clear"
    public var unit: String
    public var seq: Int64
    public var id: String
    /// Unit clock, ms since the Unix epoch, when the driver said it.
    public var t: Int64
    public var job: String
    public var clearInMin: Int
    /// The driver logged in; omitted with nobody logged in.
    public var driver: String?

    enum CodingKeys: String, CodingKey {
        case type, unit, seq, id, t, job, driver
        case clearInMin = "clear_in_min"
    }

    public init(unit: String, seq: Int64, id: String, t: Int64, soonClear: SoonClear, driver: String? = nil) {
        self.unit = unit
        self.seq = seq
        self.id = id
        self.t = t
        job = soonClear.job
        clearInMin = soonClear.minutes
        self.driver = driver
    }
}
