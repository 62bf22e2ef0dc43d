import Crypto
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import UnitCore
import X509

/// The Ed25519 public keys a unit trusts (`[fleet] config_pubkeys`, `command_pubkeys`), as the fleet
/// writes them: 32 raw bytes in base64 (`taxifleet gen-key`), or a SubjectPublicKeyInfo, in PEM or
/// as the base64 of its DER (`openssl genpkey -algorithm ed25519` then `openssl pkey -pubout`).
public enum FleetPublicKey {
    /// Nothing longer is a key in any of the accepted forms; refused before it is decoded.
    static let maximumLength = 1024

    /// The key's 32 raw bytes, or why the text is not a usable key.
    public static func parse(_ text: String) -> Result<[UInt8], KeyProblem> {
        guard text.utf8.count <= maximumLength else { return .failure(.unreadable) }
        let trimmed = text.trimmingWhitespace()
        let raw: [UInt8]
        if trimmed.hasPrefix("-----BEGIN") {
            guard let key = try? Certificate.PublicKey(pemEncoded: trimmed) else { return .failure(.unreadable) }
            guard let ed25519 = Curve25519.Signing.PublicKey(key) else { return .failure(.notEd25519) }
            raw = Array(ed25519.rawRepresentation)
        } else if let bytes = Data(base64Encoded: trimmed), bytes.count == 32 {
            raw = Array(bytes)
        } else if let bytes = Data(base64Encoded: trimmed), let key = try? Certificate.PublicKey(derEncoded: Array(bytes)) {
            guard let ed25519 = Curve25519.Signing.PublicKey(key) else { return .failure(.notEd25519) }
            raw = Array(ed25519.rawRepresentation)
        } else {
            return .failure(.unreadable)
        }
        return isWeak(raw) ? .failure(.weak) : .success(raw)
    }

    public enum KeyProblem: Error, Sendable, Equatable {
        case unreadable
        case notEd25519
        /// A point of small order: a signature made without any private key verifies under it.
        case weak
    }

    /// The encodings of the eight points of small order, canonical or not (libsodium's blocklist,
    /// `ge25519_has_small_order`), compared without the sign bit of x. Under such a key an
    /// all-but-trivial signature verifies for any message, so it would trust everyone.
    public static let smallOrder: [[UInt8]] = [
        // 0 (order 4)
        [UInt8](repeating: 0, count: 32),
        // 1 (order 1)
        [1] + [UInt8](repeating: 0, count: 31),
        // order 8
        [0x26, 0xE8, 0x95, 0x8F, 0xC2, 0xB2, 0x27, 0xB0, 0x45, 0xC3, 0xF4, 0x89, 0xF2, 0xEF, 0x98, 0xF0,
         0xD5, 0xDF, 0xAC, 0x05, 0xD3, 0xC6, 0x33, 0x39, 0xB1, 0x38, 0x02, 0x88, 0x6D, 0x53, 0xFC, 0x05],
        // order 8
        [0xC7, 0x17, 0x6A, 0x70, 0x3D, 0x4D, 0xD8, 0x4F, 0xBA, 0x3C, 0x0B, 0x76, 0x0D, 0x10, 0x67, 0x0F,
         0x2A, 0x20, 0x53, 0xFA, 0x2C, 0x39, 0xCC, 0xC6, 0x4E, 0xC7, 0xFD, 0x77, 0x92, 0xAC, 0x03, 0x7A],
        // p - 1 (order 2)
        [0xEC] + [UInt8](repeating: 0xFF, count: 30) + [0x7F],
        // p, a non-canonical 0 (order 4)
        [0xED] + [UInt8](repeating: 0xFF, count: 30) + [0x7F],
        // p + 1, a non-canonical 1 (order 1)
        [0xEE] + [UInt8](repeating: 0xFF, count: 30) + [0x7F],
    ]

    public static func isWeak(_ raw: [UInt8]) -> Bool {
        guard raw.count == 32 else { return true }
        var signless = raw
        signless[31] &= 0x7F
        return smallOrder.contains(signless)
    }
}
