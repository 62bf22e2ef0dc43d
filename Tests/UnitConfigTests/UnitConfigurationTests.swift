import Foundation
import Testing
import UnitConfig
import UnitCore

@Suite struct UnitConfigurationTests {
    func parse(_ text: String) throws(ConfigError) -> UnitConfiguration {
        try UnitConfiguration(document: ConfigValue.parseTOML(text))
    }

    func problems(_ text: String) -> [String] {
        do {
            _ = try parse(text)
            return []
        } catch {
            return error.problems
        }
    }

    @Test func theShippedDefaultFileIsValid() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let config = try UnitConfiguration.load(path: root.appendingPathComponent("etc/taxiunitd.toml").path)
        #expect(config.unit.fleet == "demo")
        #expect(config.mqtt.topicPrefix == "taxi")
        #expect(config.reporting.intervalS == 5)
    }

    @Test func minimalFileGetsDefaults() throws {
        let config = try parse("[unit]\nid = \"T7\"\nfleet = \"north\"\n")
        #expect(config.gpsd.port == 2947)
        #expect(config.mqtt.port == 1883)
        #expect(config.mqtt.keepaliveS == 30)
        #expect(config.unitTopicBase == "taxi/north/T7/")
        #expect(config.unit.seats == 4)
        #expect(config.unitSettings == UnitSettings(reportingIntervalS: 5, offerTimeoutS: 60, arrivalRadiusM: 20, noShowWaitS: 300, noShowRadiusM: 100, seats: 4))
    }

    @Test func jobRulesAndSeatsAreReadAndChecked() throws {
        let config = try parse("[unit]\nid = \"T7\"\nfleet = \"n\"\nseats = 7\n[job]\noffer_timeout_s = 2\narrival_radius_m = 35\nno_show_wait_s = 0\nno_show_radius_m = 50\n")
        #expect(config.unit.seats == 7)
        #expect(config.unitSettings == UnitSettings(reportingIntervalS: 5, offerTimeoutS: 2, arrivalRadiusM: 35, noShowWaitS: 0, noShowRadiusM: 50, seats: 7))
        let bad = problems("[unit]\nid = \"T7\"\nfleet = \"n\"\nseats = 0\n[job]\noffer_timeout_s = 0\nlate = 1\n")
        #expect(bad.count == 3)
        #expect(bad.contains("unknown key job.late"))
        #expect(bad.contains { $0.hasPrefix("unit.seats") })
        #expect(bad.contains { $0.hasPrefix("job.offer_timeout_s") })
    }

    @Test func unknownKeysAndSectionsAreNamed() {
        #expect(problems("[unit]\nid = \"a\"\nfleet = \"b\"\ncolour = \"red\"\n[gpsd]\nhots = \"x\"\n[extra]\n") == [
            "unknown section [extra]", "unknown key unit.colour", "unknown key gpsd.hots",
        ])
    }

    @Test func wrongTypesAreNamed() {
        #expect(problems("[unit]\nid = \"a\"\nfleet = \"b\"\n[mqtt]\nport = \"1883\"\n") == ["mqtt.port must be an integer, found string"])
        #expect(problems("[unit]\nid = 7\nfleet = \"b\"\n") == ["unit.id must be a string, found integer"])
    }

    @Test func missingUnitIdIsNamed() {
        #expect(problems("[unit]\nfleet = \"b\"\n") == ["unit.id is missing"])
        #expect(problems("") == ["unit.id is missing", "unit.fleet is missing"])
    }

    @Test func valuesOutOfRangeAreNamed() {
        #expect(problems("[unit]\nid = \"a\"\nfleet = \"b\"\n[gpsd]\nport = 70000\n") == ["gpsd.port must be between 1 and 65535, found 70000"])
    }

    @Test func topicWildcardsAreRefused() {
        #expect(problems("[unit]\nid = \"a/#\"\nfleet = \"b\"\n") == ["unit.id may use only letters, digits, '-' and '_', found \"a/#\""])
        #expect(problems("[unit]\nid = \"a\"\nfleet = \"b\"\n[mqtt]\ntopic_prefix = \"x//y\"\n").count == 1)
    }

    @Test func syntaxErrorsNameTheLine() {
        let found = problems("[unit]\nid = \"a\"\nfleet = \n")
        #expect(found.count == 1)
        #expect(found.first?.contains("line 3") == true)
    }

    @Test func aMissingFileIsOneClearLine() {
        do {
            _ = try UnitConfiguration.load(path: "/nonexistent/taxiunitd.toml")
            Issue.record("loading a missing file succeeded")
        } catch {
            #expect(error.problems.count == 1)
            #expect(error.problems[0].hasPrefix("cannot read /nonexistent/taxiunitd.toml"))
        }
    }
}
