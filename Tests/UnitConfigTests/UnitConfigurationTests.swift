import Foundation
import TaxiProtocol
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

    @Test func theShippedDefaultFileIsValidWithAUnitIDDropIn() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let shipped = root.appendingPathComponent("etc/taxiunitd.toml").path
        #expect(throws: ConfigError(problems: ["unit.id is missing"])) { try UnitConfiguration.load(path: shipped) }
        let directory = NSTemporaryDirectory() + "taxiunitd-shipped-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory + "/conf.d", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: shipped, toPath: directory + "/taxiunitd.toml")
        try "[unit]\nid = \"T042\"\n".write(toFile: directory + "/conf.d/unit.toml", atomically: true, encoding: .utf8)
        let config = try UnitConfiguration.load(path: directory + "/taxiunitd.toml")
        #expect(config.unit.id == "T042")
        #expect(config.unit.fleet == "demo")
        #expect(config.mqtt.topicPrefix == "taxi")
        #expect(config.reporting == ReportingPolicy())
        #expect(config.gps.maxEphM == 50 && config.gps.zoneHysteresisM == 30 && !config.gps.trustSystemClock)
        #expect(config.zones.isEmpty)
        #expect(config.telemetry.intervalS == 60 && config.telemetry.textfile == nil)
    }

    @Test func minimalFileGetsDefaults() throws {
        let config = try parse("[unit]\nid = \"T7\"\nfleet = \"north\"\n")
        #expect(config.gpsd.port == 2947)
        #expect(config.mqtt.port == 1883)
        #expect(config.mqtt.keepaliveS == 30)
        #expect(config.unitTopicBase == "taxi/north/T7/")
        #expect(config.unit.seats == 4)
        #expect(config.unitSettings == UnitSettings(positions: PositionSettings(), offerTimeout: .seconds(60), arrivalRadiusM: 20, noShowWait: .seconds(300), noShowRadiusM: 100, seats: 4))
    }

    @Test func theOwnTracksFeedIsOffByDefaultAndChecked() throws {
        let plain = try parse("[unit]\nid = \"T-042\"\nfleet = \"north\"\n")
        #expect(!plain.ownTracks.enabled && plain.ownTracks.tid == "42" && plain.ownTracks.topic == "owntracks/{fleet}/{unit}")
        let set = try parse("[unit]\nid = \"T7\"\nfleet = \"n\"\n[owntracks]\nenabled = true\ntid = \"AB\"\ntopic = \"ot/{unit}\"\n")
        #expect(set.ownTracks.enabled && set.ownTracks.tid == "AB" && set.ownTracks.topic == "ot/{unit}")
        let bad = problems("[unit]\nid = \"T7\"\nfleet = \"n\"\n[owntracks]\nenabled = true\ntid = \"ABC\"\ntopic = \"owntracks/+/{unit}\"\n")
        #expect(bad.count == 2 && bad.allSatisfy { $0.hasPrefix("owntracks.") }, "\(bad)")
        #expect(OwnTracksLocation.topic("owntracks/{fleet}/{unit}", fleet: "north", unit: "T7") == "owntracks/north/T7")
    }

    @Test func theOwnTracksFeedLogsInAsItsOwnAccount() throws {
        let unit = "[unit]\nid = \"T7\"\nfleet = \"north\"\n"
        let plain = try parse(unit + "[owntracks]\nenabled = true\n")
        #expect(plain.ownTracks.username(fleet: "north", unit: "T7") == "north/T7")
        // The default topic is owntracks/ and the default username: what `pattern write owntracks/%u` allows.
        #expect(OwnTracksLocation.topic(plain.ownTracks.topic, fleet: "north", unit: "T7") == "owntracks/" + plain.ownTracks.username(fleet: "north", unit: "T7"))
        let named = try parse(unit + "[owntracks]\nenabled = true\nusername = \"ot-{unit}\"\n")
        #expect(named.ownTracks.username(fleet: "north", unit: "T7") == "ot-T7")
        let tls = "[mqtt]\nhost = \"broker.example\"\ntls = true\ncafile = \"system\"\ncertfile = \"/c.pem\"\nkeyfile = \"/k.pem\"\n"
        let withOwnCertificate = try parse(unit + tls + "[owntracks]\nenabled = true\ncertfile = \"/f.pem\"\nkeyfile = \"/fk.pem\"\n")
        #expect(withOwnCertificate.ownTracks.certFile == "/f.pem" && withOwnCertificate.ownTracks.keyFile == "/fk.pem")
        // Off, the feed needs nothing.
        _ = try parse(unit + tls)
        #expect(problems(unit + tls + "[owntracks]\nenabled = true\n") == [
            "owntracks.certfile and keyfile are needed when [mqtt] has a client certificate: the feed's own, for its own account",
        ])
        #expect(problems(unit + "[mqtt]\nusername = \"T7\"\n[owntracks]\nenabled = true\nusername = \"{unit}\"\n") == [
            "owntracks.username must not be [mqtt] username: the feed's connection would take the unit's session over",
        ])
        #expect(problems(unit + "[owntracks]\nusername = \"#{unit}\"\n") == ["owntracks.username may not contain '#', found \"#{unit}\""])
        #expect(problems(unit + "[owntracks]\nusername = \"{id}\"\n") == ["owntracks.username may use only the placeholders {fleet} and {unit}, found \"{id}\""])
        #expect(problems(unit + "[owntracks]\ncertfile = \"/f.pem\"\n") == [
            "owntracks.certfile and keyfile go together: set both or neither", "owntracks.certfile and keyfile need [mqtt] tls = true",
        ])
        // The fleet cannot set it: the feed's login is the unit's own.
        #expect(UnitConfiguration.remotelySettable["owntracks"] == nil)
    }

    @Test func jobRulesAndSeatsAreReadAndChecked() throws {
        let config = try parse("[unit]\nid = \"T7\"\nfleet = \"n\"\nseats = 7\n[job]\noffer_timeout_s = 2\narrival_radius_m = 35\nno_show_wait_s = 0\nno_show_radius_m = 50\nreminder_min = 0\n")
        #expect(config.unit.seats == 7)
        #expect(config.unitSettings == UnitSettings(
            positions: PositionSettings(), offerTimeout: .seconds(2), arrivalRadiusM: 35, noShowWait: .zero, noShowRadiusM: 50, seats: 7, reminderMin: 0))
        let bad = problems("[unit]\nid = \"T7\"\nfleet = \"n\"\nseats = 0\n[job]\noffer_timeout_s = 0\nlate = 1\nreminder_min = 1441\n")
        #expect(bad.count == 4)
        #expect(bad.contains { $0.hasPrefix("job.reminder_min") })
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

@Suite struct PositionConfigurationTests {
    let unit = "[unit]\nid = \"T7\"\nfleet = \"north\"\n"
    let base = UnitConfigurationTests()

    /// `text` below a valid [unit] section.
    func parse(_ text: String) throws(ConfigError) -> UnitConfiguration { try base.parse(unit + text) }

    func problems(_ text: String) -> [String] { base.problems(unit + text) }

    @Test func reportingKeysApplyToEveryStateAndStateTablesOverrideThem() throws {
        let config = try parse("""
            [reporting]
            interval_s = 10
            min_speed_mps = 4
            [reporting.available]
            distance_m = 250
            [reporting.panic]
            every_fix = false
            interval_s = 2
            """)
        let defaults = ReportingPolicy.defaultRules
        #expect(config.reporting.rule(for: "off_duty") == ReportingRule(intervalS: 10, distanceM: 500, minSpeedMps: 4))
        #expect(config.reporting.rule(for: "available") == ReportingRule(intervalS: 10, distanceM: 250, headingDeg: 30, minSpeedMps: 4))
        #expect(config.reporting.rule(for: "panic") == ReportingRule(intervalS: 2, minSpeedMps: 4, everyFix: false))
        #expect(config.reporting.rule(for: "on_board").headingDeg == defaults["on_board"]?.headingDeg)
        #expect(config.unitSettings.positions.reporting == config.reporting)
    }

    @Test func badReportingValuesAndUnknownStatesAreNamed() {
        #expect(problems("[reporting]\ninterval_s = -1\n[reporting.driving]\ninterval_s = 1\n[reporting.on_board]\nheading_deg = 200\n") == [
            "reporting.on_board.heading_deg must be between 0.0 and 180.0, found 200.0",
            "reporting.interval_s must be between 0.0 and 86400.0, found -1.0",
            "unknown key reporting.driving",
        ])
    }

    @Test func gpsSettingsReachTheCore() throws {
        let config = try parse("[gps]\nmax_eph_m = 20\nzone_hysteresis_m = 0\n")
        #expect(config.unitSettings.positions.maxHorizontalErrorM == 20)
        #expect(config.unitSettings.positions.zoneHysteresisM == 0)
        #expect(problems("[gps]\nmax_eph_m = 0\n") == ["gps.max_eph_m must be between 1.0 and 100000.0, found 0.0"])
    }

    @Test func zonesAreReadInOrder() throws {
        let config = try parse("""
            [[zones]]
            id = "station"
            polygon = [[46.2935, 7.881], [46.2935, 7.885], [46.296, 7.885]]
            [[zones]]
            id = "airport"
            polygon = [[1, 2], [1, 3], [2, 3], [2, 2]]
            """)
        #expect(config.zones.map(\.id) == ["station", "airport"])
        #expect(config.zones[0].polygon[1] == Zone.Vertex(latitude: 46.2935, longitude: 7.885))
        #expect(config.zones[1].polygon.count == 4)
        #expect(config.unitSettings.positions.zones == config.zones)
    }

    @Test func badZonesAreNamed() {
        #expect(problems("""
            [[zones]]
            id = "a"
            polygon = [[1, 2], [1, 3]]
            [[zones]]
            id = "a"
            polygon = [[1, 2], [1, 3], [95, 3]]
            [[zones]]
            polygon = [[1, 2], [1, 3], [2, 3]]
            colour = "red"
            [[zones]]
            id = "c"
            """) == [
                "zones[0].polygon needs at least 3 points, found 2",
                "zones[1].id \"a\" is used by an earlier zone",
                "zones[1].polygon[2] must be [lat, lon] in degrees (lat -90...90, lon -180...180)",
                "zones[2].id is missing",
                "unknown key zones[2].colour",
                "zones[3].polygon must be an array of [lat, lon] pairs, found none",
            ])
        #expect(throws: ConfigError(problems: ["zones must be an array of tables ([[zones]]), found integer"])) {
            try UnitConfiguration(document: ConfigValue.parseTOML("zones = 3\n" + unit))
        }
    }
}
