import Foundation
import Testing
import UnitConfig
import UnitCore

@Suite struct RemoteOverlayTests {
    let local = "[unit]\nid = \"T7\"\nfleet = \"north\"\n[reporting]\ninterval_s = 5\n[mqtt]\ntls = true\ncafile = \"system\"\n"

    @Test func tablesMergeKeyByKeyAndEverythingElseIsReplaced() {
        let base = ConfigValue.table(["a": .table(["x": .integer(1), "y": .integer(2)]), "list": .array([.integer(1), .integer(2)])])
        let top = ConfigValue.table(["a": .table(["y": .integer(3)]), "list": .array([.integer(9)])])
        #expect(base.overlaid(by: top) == .table(["a": .table(["x": .integer(1), "y": .integer(3)]), "list": .array([.integer(9)])]))
    }

    @Test func laterLayersWinAndTheLocalFileFillsTheRest() throws {
        let fleet = ConfigValue.table(["reporting": .table(["interval_s": .integer(10)]), "mqtt": .table(["host": .string("b")])])
        let unit = ConfigValue.table(["reporting": .table(["interval_s": .double(2.5)])])
        let merged = try UnitConfiguration.overlay([fleet, unit], on: ConfigValue.parseTOML(local))
        #expect(ReportingPolicy.stateNames.allSatisfy { merged.reporting.rule(for: $0).intervalS == 2.5 })
        #expect(merged.mqtt.host == "b")
        #expect(merged.unit.id == "T7")
    }

    @Test func localOnlySettingsAreNamedWithTheValidatorsOwnProblems() throws {
        let remote = ConfigValue.table([
            "store": .table(["path": .string("/tmp/x")]),
            "fleet": .table(["config_pubkeys": .array([]), "rollback_after_s": .integer(0)]),
        ])
        #expect(throws: ConfigError(problems: [
            "fleet.config_pubkeys is not remotely settable",
            "store.path is not remotely settable",
            "fleet.rollback_after_s must be between 1.0 and 86400.0, found 0.0",
        ])) { try UnitConfiguration.overlay([remote], on: ConfigValue.parseTOML(local)) }
    }

    @Test func theFleetSectionDefaultsToRequiringSignatures() throws {
        let config = try UnitConfiguration(document: ConfigValue.parseTOML(local))
        #expect(config.fleet.configPubkeys.isEmpty)
        #expect(config.fleet.requireSigned)
        #expect(config.fleet.rollbackAfterS == 120)
    }

    @Test func publicKeysMustBe32BytesOfBase64() throws {
        // RFC 8032, 7.1, test 1.
        let key = "11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo="
        let config = try UnitConfiguration(document: ConfigValue.parseTOML(local + "[fleet]\nconfig_pubkeys = [\"\(key)\"]\n"))
        #expect(config.fleet.configPubkeys == [Array(Data(base64Encoded: key)!)])
        #expect(throws: ConfigError(problems: [#"fleet.config_pubkeys entries must be Ed25519 public keys (32 bytes in base64, or PEM), found "abc""#])) {
            try UnitConfiguration(document: ConfigValue.parseTOML(local + "[fleet]\nconfig_pubkeys = [\"abc\"]\n"))
        }
        #expect(throws: ConfigError(problems: ["fleet.config_pubkeys[0] must be a string, found integer"])) {
            try UnitConfiguration(document: ConfigValue.parseTOML(local + "[fleet]\nconfig_pubkeys = [1]\n"))
        }
    }
}
