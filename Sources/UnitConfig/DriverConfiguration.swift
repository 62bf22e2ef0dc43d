#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import TaxiProtocol
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

        /// The salt and rounds: badges that share them are derived once per read.
        public var saltKey: String { "\(rounds)$\(Data(salt).base64EncodedString())" }

        public var text: String {
            "\(Self.scheme)$\(rounds)$\(Data(salt).base64EncodedString())$\(Data(hash).base64EncodedString())"
        }
    }

    /// On duty only with a driver logged in.
    public var requireLogin = false
    /// Driver id → credential: the fleet's list of who may drive this taxi.
    public var drivers: [String: Credential] = [:]
    /// A badge on the fleet's list: the badge number hashed like a PIN, and whose it is.
    public struct Badge: Sendable, Equatable {
        public var credential: Credential
        public var driver: String

        public init(credential: Credential, driver: String) {
            self.credential = credential
            self.driver = driver
        }
    }

    /// The fleet's badges, in the order of their hash text. Every read checks all of them.
    public var badges: [Badge] = []
    /// Wrong logins allowed before the first lock.
    public var freeTries = 3
    /// The first lock; each further wrong login doubles it, up to `longestLockS`.
    public var lockS: Double = 30
    public var longestLockS: Double = 3600

    /// The most drivers one taxi's list may name, and the most badges.
    public static let maximumDrivers = 1000
    /// The PBKDF2 rounds one badge read may cost, summed over the list's distinct salts (a read
    /// derives once per salt, `DriverRoster.identify`): about five PINs at the default rounds, so
    /// that a read does not hold up the unit. Badges hashed with one salt cost one derivation.
    public static let maximumBadgeRounds = 1_050_000

    /// What one badge read costs: each distinct (salt, rounds) is derived once.
    public static func badgeRounds(_ badges: [Badge]) -> Int {
        // At most 1000 badges of at most 1 000 000 rounds: no overflow.
        Dictionary(badges.map { ($0.credential.saltKey, $0.credential.rounds) }, uniquingKeysWith: { first, _ in first })
            .values.reduce(0, +)
    }

    public init() {}

    public var lockout: PINLockout {
        PINLockout(
            freeTries: freeTries, firstLock: .checkedSeconds(lockS), longest: .checkedSeconds(longestLockS))
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
        driver.badges = readBadges(section.table("badges") ?? [:], section: &section)
        section.finish(into: &problems)
        return driver
    }

    /// `badges = { "pbkdf2-sha256$…" = "<driver id>" }`. Problems never repeat a hash's text.
    private static func readBadges(_ listed: [String: ConfigValue], section: inout SectionReader) -> [Badge] {
        if listed.count > maximumDrivers { section.reject("badges lists \(listed.count) badges; at most \(maximumDrivers)") }
        var badges: [Badge] = []
        for (index, (text, value)) in listed.sorted(by: { $0.key < $1.key }).prefix(maximumDrivers).enumerated() {
            guard case .string(let id) = value, SessionInput.isDriverID(id) else {
                section.reject("badges: entry \(index + 1) must name a driver id (1-32 letters, digits, - or _)")
                continue
            }
            switch Credential.parse(text) {
            case .success(let credential): badges.append(Badge(credential: credential, driver: id))
            case .failure(let problem): section.reject("badges: the hash of driver \(id)'s badge: \(problem.description)")
            }
        }
        let rounds = badgeRounds(badges)
        if rounds > maximumBadgeRounds {
            section.reject(
                "badges: a read would cost \(rounds) PBKDF2 rounds (one derivation per distinct salt); at most \(maximumBadgeRounds): "
                    + "hash the badges with one salt (taxiunitctl hash-pin --badge --salt) or fewer rounds")
        }
        return badges
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

/// `[ignition]`: what an ignition input (`[input.ignition]`) changes on the unit.
public struct IgnitionConfiguration: Sendable, Equatable {
    public static let policies = ["ask", "off_duty", "ignore"]
    /// The ignition went off while the driver is available: `ask` the driver to go off duty, take
    /// the driver `off_duty` after `off_duty_after_min`, or `ignore` it.
    public var offWhileAvailable = "ask"
    public var offDutyAfterMin = 5.0

    public init() {}

    public var policy: IgnitionOffPolicy {
        switch offWhileAvailable {
        case "off_duty": .offDuty(after: .checkedSeconds(offDutyAfterMin * 60))
        case "ignore": .ignore
        default: .ask
        }
    }

    static func read(_ value: ConfigValue?, problems: inout [String]) -> IgnitionConfiguration {
        var section = SectionReader(path: "ignition", value: value, problems: &problems)
        var ignition = IgnitionConfiguration()
        ignition.offWhileAvailable = section.oneOf("off_while_available", default: "ask", allowed: policies)
        ignition.offDutyAfterMin = section.number("off_duty_after_min", default: 5, in: 0...1440)
        section.finish(into: &problems)
        return ignition
    }
}
