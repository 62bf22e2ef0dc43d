import ArgumentParser
import FleetControl
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import UnitConfig
import UnitCore

/// The fleet side of driver logins (docs/protocol.md, "Drivers").
extension TaxiUnitCtl {
    struct HashPIN: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "hash-pin",
            abstract: "Hash a driver's PIN for [driver] drivers, or a badge number for [driver] badges.",
            discussion: """
                Reads the PIN (4 to 12 digits) from standard input, never from the command line where \
                other users could see it, and prints pbkdf2-sha256$<rounds>$<salt>$<hash> with a fresh \
                random salt: the value for the driver's id in [driver] drivers. With --badge it reads a \
                badge number (1 to 32 digits and letters, as the reader types it) and prints the key for \
                [driver] badges; --salt gives every badge of a list the same salt, so that a read costs \
                one derivation (the salt of an existing hash: its third $-field).
                """
        )
        @Option(name: .long, help: "PBKDF2 rounds, 1000...1000000.") var rounds = DriverRoster.defaultRounds
        @Flag(name: .long, help: "Hash a badge number instead of a PIN.") var badge = false
        @Option(name: .long, help: "The salt, base64 of 16 to 64 bytes (default: a fresh random one).") var salt: String?

        func run() throws {
            guard DriverConfiguration.Credential.rounds.contains(rounds) else {
                throw ValidationErrorLine("--rounds must be between 1000 and 1000000")
            }
            var saltBytes: [UInt8]?
            if let salt {
                guard let decoded = Data(base64Encoded: salt), DriverConfiguration.Credential.saltBytes.contains(decoded.count) else {
                    throw ValidationErrorLine("--salt must be 16 to 64 bytes in base64")
                }
                saltBytes = Array(decoded)
            }
            var secret = Self.readSecret(prompt: badge ? "badge number: " : "PIN: ").trimmingWhitespace()
            if badge {
                // The reader types upper-case letters.
                secret = secret.uppercased()
                guard SessionInput.isBadgeNumber(secret) else {
                    throw ValidationErrorLine("a badge number is 1 to 32 digits or letters, on standard input")
                }
            } else {
                guard SessionInput.isPIN(secret) else { throw ValidationErrorLine("a PIN is 4 to 12 digits, on standard input") }
            }
            guard let credential = DriverRoster.hash(pin: secret, rounds: rounds, salt: saltBytes) else { throw ValidationErrorLine("cannot hash it") }
            print(credential.text)
        }

        /// Standard input's first line; on a terminal after a prompt, with echo off, so that the
        /// PIN is not shown on the screen (restored however the read ends).
        static func readSecret(prompt: String) -> String {
            var saved = termios()
            guard isatty(STDIN_FILENO) == 1, tcgetattr(STDIN_FILENO, &saved) == 0 else {
                return String(decoding: readStandardInput(limit: 64), as: UTF8.self)
            }
            var quiet = saved
            quiet.c_lflag &= ~tcflag_t(ECHO)
            // Echo off before the prompt: what is typed after it is neither shown nor flushed away.
            _ = tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet)
            printToStandardError(prompt, terminator: "")
            defer {
                _ = tcsetattr(STDIN_FILENO, TCSADRAIN, &saved)
                printToStandardError("")
            }
            return readLine(strippingNewline: true) ?? ""
        }
    }
}
