import ArgumentParser
import Crypto
import FleetConsole
import FleetControl
import Foundation
import Platform
import StrictJSON
import UnitConfig
import UnitCore

struct GenKey: AsyncParsableCommand {
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

    func run() async throws {
        try await failing {
            let key = Curve25519.Signing.PrivateKey()
            do throws(SystemCallError) {
                try createPrivateFile(at: out, contents: Array(SigningKey.privateKeyText(key).utf8))
            } catch {
                let why = error.code == EEXIST ? "it exists; not overwriting a key" : error.message
                throw Failure("cannot create \(out): \(why)", exitCode: 1)
            }
            print(#"config_pubkeys = ["\#(SigningKey.publicKeyText(key))"]"#)
            return 0
        }
    }
}

struct SignConfig: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sign-config",
        abstract: "Sign a fleet config document or command for the topic it will be published on.",
        discussion: """
            Prints the document with its "signature" member, in canonical form, ready to publish. \
            The topic is part of what is signed, so a document signed for one unit is refused by another. \
            push and command sign what they send themselves; this is for publishing by other means.
            """
    )
    @Option(name: .long, help: "The private key file: from gen-key, or PEM (PKCS#8) from openssl genpkey -algorithm ed25519.") var key: String
    @Option(name: .long, help: "The topic it will be published on, e.g. taxi/north/config or taxi/north/T7/cmd.") var topic: String
    @Argument(help: "The JSON document; - reads standard input.") var doc: String

    func run() async throws {
        try await failing {
            let privateKey = try KeyOption.load(key)
            let bytes: Data
            if doc == "-" {
                bytes = FileHandle.standardInput.readDataToEndOfFile()
            } else if let contents = FileManager.default.contents(atPath: doc) {
                bytes = contents
            } else {
                throw Failure("cannot read \(doc)", exitCode: 1)
            }
            do {
                let signed = try FleetSignature.sign(try JSONDocument.parse(Array(bytes)), topic: topic, with: privateKey)
                print(signed.text)
            } catch let error as JSONSyntaxError {
                throw Failure("\(doc): \(error.message)", exitCode: 1)
            } catch let error as ConfigError {
                throw Failure("\(doc): \(error.problems.joined(separator: "; "))", exitCode: 1)
            }
            return 0
        }
    }
}
