import FleetControl
import Foundation
import Testing
import UnitConfig
import UnitCore

@Suite struct BadgeRosterTests {
    static let unit = "[unit]\nid = \"T7\"\nfleet = \"north\"\n"

    static func badge(_ number: String, _ driver: String, salt: [UInt8]? = nil) throws -> DriverConfiguration.Badge {
        DriverConfiguration.Badge(credential: try #require(DriverRoster.hash(pin: number, rounds: 1000, salt: salt)), driver: driver)
    }

    @Test func aKnownBadgeNamesItsDriverAndNothingElseDoes() throws {
        let badges = [try Self.badge("0004279", "42"), try Self.badge("AB12", "7")]
        #expect(DriverRoster.identify(badge: "0004279", in: badges) == "42")
        #expect(DriverRoster.identify(badge: "AB12", in: badges) == "7")
        #expect(DriverRoster.identify(badge: "004279", in: badges) == nil)
        #expect(DriverRoster.identify(badge: "0004279", in: []) == nil)
    }

    @Test func badgesSharingASaltAreDerivedOnceAndOneBadgeForTwoDriversNamesNeither() throws {
        let salt = Array("taxiunit-salt-16".utf8)
        let badges = [try Self.badge("111", "42", salt: salt), try Self.badge("222", "7", salt: salt)]
        #expect(badges[0].credential.saltKey == badges[1].credential.saltKey)
        #expect(DriverConfiguration.badgeRounds(badges) == 1000)
        #expect(DriverConfiguration.badgeRounds(badges + [try Self.badge("333", "8")]) == 2000)
        #expect(DriverRoster.identify(badge: "222", in: badges) == "7")
        #expect(DriverRoster.identify(badge: "111", in: badges + [try Self.badge("111", "9")]) == nil)
        #expect(DriverRoster.identify(badge: "111", in: badges + [try Self.badge("111", "42")]) == "42")
    }

    @Test func theBadgeListIsReadFromDriverAndChecked() throws {
        let good = try #require(DriverRoster.hash(pin: "0004279", rounds: 1000)).text
        let config = try UnitConfiguration(document: ConfigValue.parseTOML(Self.unit + """
            [driver]
            badges = { "\(good)" = "42" }
            """))
        #expect(config.driver.badges.map(\.driver) == ["42"])
        #expect(DriverRoster.identify(badge: "0004279", in: config.driver.badges) == "42")
        // Six badges at 210 000 rounds with salts of their own cost more than a read may.
        var costly: [String] = []
        for index in 0..<6 { costly.append("\"\(try #require(DriverRoster.hash(pin: "\(index)", rounds: 210_000)).text)\" = \"d\(index)\"") }
        do {
            _ = try UnitConfiguration(document: ConfigValue.parseTOML(Self.unit + """
                [driver]
                badges = { "\(good)" = "4 2", "pbkdf2-sha256$1000$c2FsdA==$AAAA" = "7", \(costly.joined(separator: ", ")) }
                """))
            Issue.record("accepted")
        } catch {
            let problems = error.problems.joined(separator: "\n")
            for expected in ["must name a driver id (1-32 letters", "driver.badges: the hash of driver 7's badge: salt must be",
                             "driver.badges: a read would cost 1260000 PBKDF2 rounds"] {
                #expect(problems.contains(expected), "\(expected) in \(problems)")
            }
            #expect(!problems.contains("$1000$"), "a problem does not repeat a hash")
        }
    }

    @Test func theBadgeSectionIsReadAndAPINNeedsATerminal() throws {
        let config = try UnitConfiguration(document: ConfigValue.parseTOML(Self.unit + """
            [input.badge]
            device = "/dev/input/by-id/usb-reader-event-kbd"
            """))
        #expect(config.input.badge?.device == "/dev/input/by-id/usb-reader-event-kbd")
        #expect(config.input.badge?.pin == false)
        do {
            _ = try UnitConfiguration(document: ConfigValue.parseTOML(Self.unit + "[input.badge]\npin = true\ncolour = 1\n"))
            Issue.record("accepted")
        } catch {
            let problems = error.problems.joined(separator: "\n")
            for expected in ["input.badge.device is missing", "input.badge.pin = true needs [input.serial]", "unknown key input.badge.colour"] {
                #expect(problems.contains(expected), "\(expected) in \(problems)")
            }
        }
    }
}
