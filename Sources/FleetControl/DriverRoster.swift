import Crypto
import _CryptoExtras
import UnitConfig
import UnitCore

/// The fleet's driver list (`[driver] drivers`) checked against what a driver typed, and its
/// badge list (`[driver] badges`) against what a badge reader read.
///
/// PINs are hashed with PBKDF2-HMAC-SHA256 and a random per-driver salt: the one password KDF in
/// swift-crypto that every fleet back office can produce too (Python's `hashlib.pbkdf2_hmac`,
/// OpenSSL, passlib), so the list is written without our tools. HKDF is not for secrets a person
/// types (it is fast by design); scrypt would cost a small unit's memory on every login. A 4-12
/// digit PIN is a small space whatever the KDF: the hash keeps PINs out of plain sight in the
/// fleet's documents and the unit's store, the terminal's lockout (`PINLockout`) is what stops
/// guessing.
public enum DriverRoster {
    /// Rounds `hash(pin:)` uses by default: swift-crypto's (and OWASP's) floor for PBKDF2-SHA256.
    /// A fleet may write fewer (down to 1000) for slow units: checking runs in the engine's loop.
    public static let defaultRounds = 210_000

    public static func verify(driver id: String, pin: String, in drivers: [String: DriverConfiguration.Credential]) -> LoginVerdict {
        guard let credential = drivers[id] else {
            // As slow as a known id, so that timing does not tell which ids are on the list.
            if let decoy = drivers.values.first { _ = derive(pin: pin, salt: decoy.salt, rounds: decoy.rounds) }
            return .unknownDriver
        }
        guard let derived = derive(pin: pin, salt: credential.salt, rounds: credential.rounds) else { return .wrongPIN }
        // Compared in constant time.
        return safeCompare(derived, credential.hash) ? .accepted : .wrongPIN
    }

    /// Whose badge `number` is, or nil (not on the list, or on it for two drivers). Each badge has
    /// its own salt, so the number is derived once per distinct salt and rounds and compared with
    /// every hash, always all of them: a read costs the same whether or not the badge is known
    /// (`DriverConfiguration.maximumBadgeRounds` bounds it).
    public static func identify(badge number: String, in badges: [DriverConfiguration.Badge]) -> String? {
        var derived: [String: [UInt8]] = [:]
        var drivers: Set<String> = []
        for badge in badges {
            let key = badge.credential.saltKey
            if derived[key] == nil { derived[key] = derive(pin: number, salt: badge.credential.salt, rounds: badge.credential.rounds) ?? [] }
            if safeCompare(derived[key] ?? [], badge.credential.hash) { drivers.insert(badge.driver) }
        }
        return drivers.count == 1 ? drivers.first : nil
    }

    /// A credential for `pin` (or a badge number) with a fresh random salt, or `salt` to hash a
    /// fleet's badges with one salt (`taxiunitctl hash-pin`, tests).
    public static func hash(pin: String, rounds: Int = defaultRounds, salt given: [UInt8]? = nil) -> DriverConfiguration.Credential? {
        let salt = given ?? Array(SymmetricKey(size: .bits128).withUnsafeBytes { Array($0) })
        guard DriverConfiguration.Credential.saltBytes.contains(salt.count) else { return nil }
        guard let hash = derive(pin: pin, salt: salt, rounds: rounds) else { return nil }
        return DriverConfiguration.Credential(rounds: rounds, salt: salt, hash: hash)
    }

    static func derive(pin: String, salt: [UInt8], rounds: Int) -> [UInt8]? {
        guard DriverConfiguration.Credential.rounds.contains(rounds) else { return nil }
        // The range is the configuration's (checked above), not swift-crypto's 210 000 floor.
        let key = try? KDF.Insecure.PBKDF2.deriveKey(
            from: Array(pin.utf8), salt: salt, using: .sha256, outputByteCount: DriverConfiguration.Credential.hashBytes,
            unsafeUncheckedRounds: rounds)
        return key?.withUnsafeBytes { Array($0) }
    }

    private static func safeCompare(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for index in a.indices { difference |= a[index] ^ b[index] }
        return difference == 0
    }
}
