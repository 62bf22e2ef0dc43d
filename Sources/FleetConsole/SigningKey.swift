import Crypto
import Foundation
import SwiftASN1

/// The fleet's private Ed25519 key as `taxifleet gen-key` writes it, or as openssl writes one.
public enum SigningKey {
    /// 32 raw bytes in base64, or a PEM PKCS#8 `PRIVATE KEY` whose algorithm is Ed25519.
    public static func parse(_ text: String) -> Curve25519.Signing.PrivateKey? {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard trimmed.hasPrefix("-----BEGIN") else {
            return Data(base64Encoded: trimmed).flatMap { try? Curve25519.Signing.PrivateKey(rawRepresentation: $0) }
        }
        guard let pem = try? PEMDocument(pemString: trimmed), pem.discriminator == "PRIVATE KEY" else { return nil }
        return try? ed25519(pkcs8: pem.derBytes)
    }

    /// The public half as the units' `[fleet] config_pubkeys` take it: the 32 bytes in base64.
    public static func publicKeyText(_ key: Curve25519.Signing.PrivateKey) -> String {
        key.publicKey.rawRepresentation.base64EncodedString()
    }

    /// The private key as `gen-key` writes it: base64, one line.
    public static func privateKeyText(_ key: Curve25519.Signing.PrivateKey) -> String {
        key.rawRepresentation.base64EncodedString() + "\n"
    }

    /// RFC 8410: PrivateKeyInfo { version, AlgorithmIdentifier { id-Ed25519 }, OCTET STRING { OCTET STRING key } }.
    static func ed25519(pkcs8 der: [UInt8]) throws -> Curve25519.Signing.PrivateKey {
        let idEd25519: ASN1ObjectIdentifier = [1, 3, 101, 112]
        return try DER.sequence(try DER.parse(der), identifier: .sequence) { nodes in
            _ = try Int(derEncoded: &nodes)
            let algorithm = try DER.sequence(of: ASN1ObjectIdentifier.self, identifier: .sequence, nodes: &nodes)
            guard algorithm == [idEd25519] else { throw ASN1Error.invalidASN1Object(reason: "not an Ed25519 key") }
            let wrapped = try ASN1OctetString(derEncoded: &nodes)
            let raw = try ASN1OctetString(derEncoded: wrapped.bytes)
            // Optional attributes and public key may follow (PKCS#8 v2); they are not needed.
            while nodes.next() != nil {}
            return try Curve25519.Signing.PrivateKey(rawRepresentation: raw.bytes)
        }
    }
}
