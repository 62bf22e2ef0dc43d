import ArgumentParser
import FleetControl
import Foundation
import UnitConfig
import UnitCore

/// The fleet side of driver logins (docs/protocol.md, "Drivers").
extension TaxiUnitCtl {
    struct HashPIN: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "hash-pin",
            abstract: "Hash a driver's PIN for the fleet's [driver] drivers list.",
            discussion: """
                Reads the PIN (4 to 12 digits) from standard input, never from the command line where \
                other users could see it, and prints pbkdf2-sha256$<rounds>$<salt>$<hash> with a fresh \
                random salt: the value for the driver's id in [driver] drivers.
                """
        )
        @Option(name: .long, help: "PBKDF2 rounds, 1000...1000000.") var rounds = DriverRoster.defaultRounds

        func run() throws {
            guard DriverConfiguration.Credential.rounds.contains(rounds) else {
                throw ValidationErrorLine("--rounds must be between 1000 and 1000000")
            }
            let input = FileHandle.standardInput.readData(ofLength: 64)
            let pin = String(decoding: input, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            guard SessionInput.isPIN(pin) else { throw ValidationErrorLine("a PIN is 4 to 12 digits, on standard input") }
            guard let credential = DriverRoster.hash(pin: pin, rounds: rounds) else { throw ValidationErrorLine("cannot hash the PIN") }
            print(credential.text)
        }
    }
}
