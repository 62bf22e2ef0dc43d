/// Which document a fleet setting came from. The unit's own document overrides the fleet's.
public enum ConfigScope: String, Sendable, Codable, CaseIterable {
    case fleet
    case unit
}

/// A configuration document the unit accepted, exactly as received.
public struct AppliedConfigDocument: Sendable, Equatable, Codable {
    public var version: Int
    public var payload: [UInt8]

    public init(version: Int, payload: [UInt8]) {
        self.version = version
        self.payload = payload
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

        public init(lastGood: AppliedConfigDocument?) {
            self.lastGood = lastGood
        }
    }

    public init(seenVersion: Int = 0, applied: AppliedConfigDocument? = nil, probation: Probation? = nil) {
        self.seenVersion = seenVersion
        self.applied = applied
        self.probation = probation
    }
}
