import Foundation
import UnitCore

/// `[driver]`: who may drive this taxi, and how wrong PINs are slowed down.
public struct DriverConfiguration: Sendable, Equatable {
    /// One driver's PIN as the fleet stores it: PBKDF2-HMAC-SHA256 over the PIN's UTF-8 with a
    /// per-driver random salt (`FleetControl.DriverRoster` checks and makes them).
    public struct Credential: Sendable, Equatable {
        public var rounds: Int
        public var salt: [UInt8]
        public var hash: [UInt8]

        public init(rounds: Int, salt: [UInt8], hash: [UInt8]) {
            self.rounds = rounds
            self.salt = salt
            self.hash = hash
        }

        public static let scheme = "pbkdf2-sha256"
        public static let rounds = 1_000...1_000_000
        public static let saltBytes = 16...64
        public static let hashBytes = 32

        /// `pbkdf2-sha256$<rounds>$<salt, base64>$<hash, base64>` (the layout of passlib's and
        /// Django's PBKDF2 strings), or why it is not one.
        public static func parse(_ text: String) -> Result<Credential, Problem> {
            guard text.utf8.count <= 256 else { return .failure(Problem(description: "longer than 256 bytes")) }
            let parts = text.split(separator: "$", omittingEmptySubsequences: false)
            guard parts.count == 4, parts[0] == scheme else { return .failure(Problem(description: "must be \(scheme)$<rounds>$<salt base64>$<hash base64>")) }
            guard let count = Int(parts[1]), Self.rounds.contains(count) else {
                return .failure(Problem(description: "rounds must be a whole number in \(Self.rounds.lowerBound)...\(Self.rounds.upperBound)"))
            }
            guard let salt = Data(base64Encoded: String(parts[2])), saltBytes.contains(salt.count) else {
                return .failure(Problem(description: "salt must be \(saltBytes.lowerBound) to \(saltBytes.upperBound) bytes in base64"))
            }
            guard let hash = Data(base64Encoded: String(parts[3])), hash.count == hashBytes else {
                return .failure(Problem(description: "hash must be \(hashBytes) bytes in base64"))
            }
            return .success(Credential(rounds: count, salt: Array(salt), hash: Array(hash)))
        }

        public struct Problem: Error, Sendable, Equatable, CustomStringConvertible {
            public var description: String
        }

        public var text: String {
            "\(Self.scheme)$\(rounds)$\(Data(salt).base64EncodedString())$\(Data(hash).base64EncodedString())"
        }
    }

    /// On duty only with a driver logged in.
    public var requireLogin = false
    /// Driver id → credential: the fleet's list of who may drive this taxi.
    public var drivers: [String: Credential] = [:]
    /// Wrong logins allowed before the first lock.
    public var freeTries = 3
    /// The first lock; each further wrong login doubles it, up to `longestLockS`.
    public var lockS: Double = 30
    public var longestLockS: Double = 3600

    /// The most drivers one taxi's list may name.
    public static let maximumDrivers = 1000

    public init() {}

    public var lockout: PINLockout {
        PINLockout(
            freeTries: freeTries, firstLockMs: Int64(millisecondsOf: lockS) ?? 30_000, longestMs: Int64(millisecondsOf: longestLockS) ?? 3_600_000)
    }

    static func read(_ value: ConfigValue?, problems: inout [String]) -> DriverConfiguration {
        var section = SectionReader(path: "driver", value: value, problems: &problems)
        var driver = DriverConfiguration()
        driver.requireLogin = section.bool("require_login", default: false)
        driver.freeTries = section.integer("free_tries", default: 3, in: 1...20)
        driver.lockS = section.number("lock_s", default: 30, in: 1...3600)
        driver.longestLockS = section.number("longest_lock_s", default: 3600, in: 1...86400)
        if driver.longestLockS < driver.lockS { section.reject("longest_lock_s must be at least lock_s") }
        let listed = section.table("drivers") ?? [:]
        if listed.count > maximumDrivers { section.reject("drivers lists \(listed.count) drivers; at most \(maximumDrivers)") }
        for (id, value) in listed.sorted(by: { $0.key < $1.key }).prefix(maximumDrivers) {
            let name = SessionInput.isDriverID(id) ? id : LogExcerpt.of(id, limit: 40)
            guard SessionInput.isDriverID(id) else {
                section.reject("drivers: \"\(name)\" is not a driver id (1-32 letters, digits, - or _)")
                continue
            }
            guard case .string(let text) = value else {
                section.reject("drivers.\(id) must be a string, found \(value.typeName)")
                continue
            }
            switch Credential.parse(text) {
            case .success(let credential): driver.drivers[id] = credential
            case .failure(let problem): section.reject("drivers.\(id): \(problem.description)")
            }
        }
        section.finish(into: &problems)
        return driver
    }
}

/// `[privacy]`: what the unit keeps to itself.
public struct PrivacyConfiguration: Sendable, Equatable {
    /// false: no position leaves the unit (nor is stored) while off duty, except to answer a
    /// signed `report` command or with an SOS.
    public var offDutyPositions = true

    public init() {}

    static func read(_ value: ConfigValue?, problems: inout [String]) -> PrivacyConfiguration {
        var section = SectionReader(path: "privacy", value: value, problems: &problems)
        var privacy = PrivacyConfiguration()
        privacy.offDutyPositions = section.bool("off_duty_positions", default: true)
        section.finish(into: &problems)
        return privacy
    }
}
