import FleetControl
import Foundation
import Testing
import UnitConfig
import UnitCore

@Suite struct DriverRosterTests {
    @Test func aHashedPINVerifiesAndNothingElseDoes() throws {
        let credential = try #require(DriverRoster.hash(pin: "1234", rounds: 1000))
        let drivers = ["42": credential]
        #expect(DriverRoster.verify(driver: "42", pin: "1234", in: drivers) == .accepted)
        #expect(DriverRoster.verify(driver: "42", pin: "1235", in: drivers) == .wrongPIN)
        #expect(DriverRoster.verify(driver: "43", pin: "1234", in: drivers) == .unknownDriver)
        // The string form round-trips, and the salt is fresh every time.
        #expect(DriverConfiguration.Credential.parse(credential.text) == .success(credential))
        #expect(try #require(DriverRoster.hash(pin: "1234", rounds: 1000)).salt != credential.salt)
    }

    /// A vector from Python: hashlib.pbkdf2_hmac("sha256", b"1234", b"taxiunit-salt-16", 1000).
    @Test func theHashIsStandardPBKDF2HMACSHA256() throws {
        let text = "pbkdf2-sha256$1000$dGF4aXVuaXQtc2FsdC0xNg==$DOg8/zo4yx5GiDvGsQSO5jT63nZ6WAhGyHCpZJvNCig="
        let credential = try DriverConfiguration.Credential.parse(text).get()
        #expect(DriverRoster.verify(driver: "42", pin: "1234", in: ["42": credential]) == .accepted)
    }

    @Test(arguments: [
        "pbkdf2-sha256$1000$c2FsdA==$AAAA", "pbkdf2-sha1$1000$dGF4aXVuaXQtc2FsdC0xNg==$" + String(repeating: "A", count: 44),
        "pbkdf2-sha256$999$dGF4aXVuaXQtc2FsdC0xNg==$" + String(repeating: "A", count: 44),
        "pbkdf2-sha256$99999999999999999999$dGF4aXVuaXQtc2FsdC0xNg==$" + String(repeating: "A", count: 44),
        "pbkdf2-sha256$1000$!!$" + String(repeating: "A", count: 44), "", "$$$", String(repeating: "$", count: 300),
    ])
    func hostileCredentialsAreRefused(text: String) {
        guard case .failure = DriverConfiguration.Credential.parse(text) else { Issue.record("\(text) accepted"); return }
    }

    @Test func theDriverSectionIsCheckedWhole() throws {
        let good = try #require(DriverRoster.hash(pin: "1234", rounds: 1000)).text
        let unit = "[unit]\nid = \"T7\"\nfleet = \"north\"\n"
        let config = try UnitConfiguration(document: ConfigValue.parseTOML(unit + """
            [driver]
            require_login = true
            free_tries = 5
            drivers = { "42" = "\(good)" }
            [privacy]
            off_duty_positions = false
            """))
        #expect(config.driver.requireLogin)
        #expect(config.driver.drivers.keys.sorted() == ["42"])
        #expect(config.driver.lockout.freeTries == 5)
        #expect(!config.privacy.offDutyPositions)
        #expect(config.unitSettings.requireLogin)
        #expect(!config.unitSettings.positions.offDutyPositions)
        do {
            _ = try UnitConfiguration(document: ConfigValue.parseTOML(unit + """
                [driver]
                free_tries = 0
                lock_s = 100
                longest_lock_s = 10
                drivers = { "4 2" = "\(good)", "43" = 7, "44" = "plain1234" }
                [privacy]
                off_duty_positions = "no"
                """))
            Issue.record("accepted")
        } catch {
            let problems = error.problems.joined(separator: "\n")
            for expected in ["driver.free_tries", "driver.longest_lock_s", "\"4 2\" is not a driver id", "drivers.43 must be a string",
                             "drivers.44: must be pbkdf2-sha256", "privacy.off_duty_positions"] {
                #expect(problems.contains(expected), "\(expected) in \(problems)")
            }
        }
    }
}
