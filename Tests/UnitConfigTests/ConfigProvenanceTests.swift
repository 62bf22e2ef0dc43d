import Foundation
import Testing
import UnitConfig

/// `taxiunitctl config`: the local files, then the fleet's documents, each setting naming what set it last.
@Suite struct ConfigProvenanceTests {
    @Test func fleetDocumentsOverlayTheFilesAndNameThemselves() throws {
        let directory = NSTemporaryDirectory() + "taxiunitd-provenance-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory + "/conf.d", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let main = directory + "/taxiunitd.toml"
        try "[unit]\nfleet = \"demo\"\n[mqtt]\nhost = \"b\"\n[reporting]\ninterval_s = 10\n".write(toFile: main, atomically: true, encoding: .utf8)
        try "[unit]\nid = \"T042\"\n".write(toFile: directory + "/conf.d/50-unit.toml", atomically: true, encoding: .utf8)
        let local = try LocalConfigSources.load(path: main)
        let fleet = ConfigProvenance.Layer(
            scope: "fleet", version: 3, settings: .table(["reporting": .table(["interval_s": .integer(5), "min_distance_m": .double(2.5)])]))
        let unit = ConfigProvenance.Layer(scope: "unit", version: 1, settings: .table(["reporting": .table(["interval_s": .integer(7)])]))

        let settings = ConfigProvenance.effective(local: local, layers: [fleet, unit])
        #expect(settings == [
            EffectiveSetting(key: "mqtt.host", value: "\"b\"", origin: main),
            EffectiveSetting(key: "reporting.interval_s", value: "7", origin: "unit document version 1"),
            EffectiveSetting(key: "reporting.min_distance_m", value: "2.5", origin: "fleet document version 3"),
            EffectiveSetting(key: "unit.fleet", value: "\"demo\"", origin: main),
            EffectiveSetting(key: "unit.id", value: "\"T042\"", origin: directory + "/conf.d/50-unit.toml"),
        ])
        #expect(ConfigProvenance.effective(local: local, layers: []).first { $0.key == "reporting.interval_s" }?.origin == main)
    }

    @Test func telemetryIsValidated() throws {
        func problems(_ toml: String) -> [String] {
            do {
                _ = try UnitConfiguration(document: try ConfigValue.parseTOML("[unit]\nid = \"T1\"\nfleet = \"f\"\n" + toml))
                return []
            } catch {
                return error.problems
            }
        }
        let defaults = try UnitConfiguration(document: try ConfigValue.parseTOML("[unit]\nid = \"T1\"\nfleet = \"f\"\n"))
        #expect(defaults.telemetry.intervalS == 60 && defaults.telemetry.textfile == nil)
        #expect(problems("[telemetry]\ninterval_s = 0\ntextfile = \"/var/lib/node_exporter/textfile_collector/taxiunitd.prom\"\n").isEmpty)
        #expect(problems("[telemetry]\ninterval_s = 0.5\n") == ["telemetry.interval_s must be 0 (off) or at least 1"])
        #expect(problems("[telemetry]\ntextfile = \"taxiunitd.txt\"\n").count == 1)
        #expect(problems("[telemetry]\nfoo = 1\n").count == 1)
    }
}
