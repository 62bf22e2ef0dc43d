import UnitCore
import ArgumentParser
import Crypto
import FleetControl
import Foundation
import UnitConfig

/// The fleet side of signed configuration and commands (docs/protocol.md, "Signatures").
extension TaxiUnitCtl {
    struct GenKey: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "gen-key",
            abstract: "Make an Ed25519 key pair for signing fleet configs and commands.",
            discussion: """
                Writes the private key (base64, one line, mode 0600) to --out and prints the public key \
                for the units' [fleet] config_pubkeys.
                """
        )
        @Option(name: .long, help: "Where to write the private key; an existing file is not overwritten.") var out: String

        func run() throws {
            guard !FileManager.default.fileExists(atPath: out) else { throw ValidationErrorLine("\(out) exists; not overwriting a key") }
            let key = Curve25519.Signing.PrivateKey()
            let line = key.rawRepresentation.base64EncodedString() + "\n"
            guard FileManager.default.createFile(atPath: out, contents: Data(line.utf8), attributes: [.posixPermissions: 0o600]) else {
                throw ValidationErrorLine("cannot write \(out)")
            }
            print(#"config_pubkeys = ["\#(key.publicKey.rawRepresentation.base64EncodedString())"]"#)
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
        @Option(name: .long, help: "The private key file from gen-key.") var key: String
        @Option(name: .long, help: "The topic it will be published on, e.g. taxi/north/config or taxi/north/T7/cmd.") var topic: String
        @Argument(help: "The JSON document; - reads standard input.") var doc: String

        func run() throws {
            let keyText: String
            do {
                keyText = try String(contentsOfFile: key, encoding: .utf8)
            } catch {
                throw ValidationErrorLine("cannot read \(key): \(error.localizedDescription)")
            }
            guard let raw = Data(base64Encoded: keyText.trimmingCharacters(in: .whitespacesAndNewlines)),
                  let privateKey = try? Curve25519.Signing.PrivateKey(rawRepresentation: raw) else {
                throw ValidationErrorLine("\(key) is not a private key from taxiunitctl gen-key")
            }
            let bytes: Data
            if doc == "-" {
                bytes = FileHandle.standardInput.readDataToEndOfFile()
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
    }
}
