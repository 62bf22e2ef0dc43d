import TaxiProtocol

/// A configuration document the unit accepted, exactly as received.
public struct AppliedConfigDocument: Sendable, Equatable, Codable {
    public var version: Int
    public var payload: [UInt8]
    /// The topic it came on, which its signature covers: it is verified again at every start.
    /// nil for documents stored before the topic was kept.
    public var topic: String?

    public init(version: Int, payload: [UInt8], topic: String? = nil) {
        self.version = version
        self.payload = payload
        self.topic = topic
    }
}

/// What the unit holds for one scope.
public struct ConfigScopeRecord: Sendable, Equatable, Codable {
    /// The highest version applied or rolled back: nothing at or below it is applied again, so a
    /// retained copy of a config that was rolled back cannot loop.
    public var seenVersion: Int
    /// The document in force, nil when the fleet never sent one or a rollback went back to none.
    public var applied: AppliedConfigDocument?
    /// Set while `applied` changes [mqtt] and has not reached a broker yet: what to go back to.
    public var probation: Probation?

    public struct Probation: Sendable, Equatable, Codable {
        public var lastGood: AppliedConfigDocument?
        /// When the trial began (unit clock) and how long it may run: a restart resumes it
        /// rather than granting a new window. nil for trials stored before these were kept.
        public var startedAt: UnitTime?
        public var windowS: Double?

        public init(lastGood: AppliedConfigDocument?, startedAt: UnitTime? = nil, windowS: Double? = nil) {
            self.lastGood = lastGood
            self.startedAt = startedAt
            self.windowS = windowS
        }
    }

    public init(seenVersion: Int = 0, applied: AppliedConfigDocument? = nil, probation: Probation? = nil) {
        self.seenVersion = seenVersion
        self.applied = applied
        self.probation = probation
    }
}
