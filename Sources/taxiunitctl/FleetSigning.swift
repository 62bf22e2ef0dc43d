import UnitCore
import ArgumentParser
import Crypto
import FleetControl
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import Platform
import SwiftASN1
import UnitConfig

/// The fleet side of signed configuration and commands (docs/protocol.md, "Signatures").
extension TaxiUnitCtl {
    struct GenKey: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "gen-key",
            abstract: "Make an Ed25519 key pair for signing fleet configs and commands.",
            discussion: """
                Writes the private key (base64, one line) to --out, created with mode 0600 in one step and \
                never over an existing file, and prints the public key for the units' [fleet] config_pubkeys \
                (or command_pubkeys, for a key that signs commands only).
                """
        )
        @Option(name: .long, help: "Where to write the private key; an existing file is not overwritten.") var out: String

        func run() throws {
            let key = Curve25519.Signing.PrivateKey()
            try Self.createPrivate(out, contents: Array((key.rawRepresentation.base64EncodedString() + "\n").utf8))
            print(#"config_pubkeys = ["\#(key.publicKey.rawRepresentation.base64EncodedString())"]"#)
        }

        /// An existing file or link is an error, never overwritten or followed; the mode is 0600 from
        /// the start, so no moment exists in which others could open the key.
        static func createPrivate(_ path: String, contents: [UInt8]) throws {
            do throws(SystemCallError) {
                try createPrivateFile(at: path, contents: contents)
            } catch {
                let why = error.code == EEXIST ? "it exists; not overwriting a key" : error.message
                throw ValidationErrorLine("cannot create \(path): \(why)")
            }
        }
    }

    struct SignConfig: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "sign-config",
            abstract: "Sign a fleet config document or command for the topic it will be published on.",
            discussion: """
                Prints the document with its "signature" member, in canonical form, ready to publish. \
                The topic is part of what is signed, so a document signed for one unit is refused by another.
                """
        )
        @Option(name: .long, help: "The private key file: from gen-key, or PEM (PKCS#8) from openssl genpkey -algorithm ed25519.") var key: String
        @Option(name: .long, help: "The topic it will be published on, e.g. taxi/north/config or taxi/north/T7/cmd.") var topic: String
        @Argument(help: "The JSON document; - reads standard input.") var doc: String

        func run() throws {
            let keyText: String
            do {
                keyText = try String(contentsOfFile: key, encoding: .utf8)
            } catch {
                throw ValidationErrorLine("cannot read \(key): \(describeFileError(error))")
            }
            guard let privateKey = Self.privateKey(keyText) else {
                throw ValidationErrorLine("\(key) is not an Ed25519 private key from taxiunitctl gen-key or openssl genpkey -algorithm ed25519")
            }
            let bytes: Data
            if doc == "-" {
                bytes = Data(readStandardInput(limit: Int.max))
            } else if let contents = FileManager.default.contents(atPath: doc) {
                bytes = contents
            } else {
                throw ValidationErrorLine("cannot read \(doc)")
            }
            do {
                let document = try JSONDocument.parse(Array(bytes))
                let signed = try FleetSignature.sign(document, topic: topic, with: privateKey)
                print(String(decoding: signed.canonicalBytes, as: UTF8.self))
            } catch let error as JSONSyntaxError {
                throw ValidationErrorLine("\(doc): \(error.message)")
            } catch let error as ConfigError {
                throw ValidationErrorLine("\(doc): \(error.problems.joined(separator: "; "))")
            }
        }

        /// 32 raw bytes in base64, or a PEM PKCS#8 `PRIVATE KEY` whose algorithm is Ed25519.
        static func privateKey(_ text: String) -> Curve25519.Signing.PrivateKey? {
            let trimmed = text.trimmingWhitespace()
            guard trimmed.hasPrefix("-----BEGIN") else {
                return Data(base64Encoded: trimmed).flatMap { try? Curve25519.Signing.PrivateKey(rawRepresentation: $0) }
            }
            guard let pem = try? PEMDocument(pemString: trimmed), pem.discriminator == "PRIVATE KEY" else { return nil }
            return try? Self.ed25519(pkcs8: pem.derBytes)
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
}
