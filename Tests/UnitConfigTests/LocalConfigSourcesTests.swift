import Foundation
import Testing
import UnitConfig

/// The main file and conf.d drop-ins, merged in name order, with the unit id and credentials resolved.
@Suite struct LocalConfigSourcesTests {
    let directory: String

    init() throws {
        directory = NSTemporaryDirectory() + "taxiunitd-sources-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory + "/conf.d", withIntermediateDirectories: true)
    }

    func write(_ name: String, _ text: String) throws {
        try text.write(toFile: directory + "/" + name, atomically: true, encoding: .utf8)
    }

    func machine(host: String? = "taxi-t042.fleet.example", machineID: String? = "0123456789abcdef0123456789abcdef\n", credentials: String? = nil)
        -> LocalConfigSources.Machine
    {
        .init(hostName: { host }, machineID: { machineID }, credentialsDirectory: credentials)
    }

    func string(_ value: ConfigValue, _ section: String, _ key: String) -> String? {
        guard case .table(let root) = value, case .table(let table)? = root[section], case .string(let text)? = table[key] else { return nil }
        return text
    }

    @Test func dropInsOverlayTheMainFileInNameOrderAndEachSettingNamesItsFile() throws {
        try write("taxiunitd.toml", "[unit]\nfleet = \"demo\"\nseats = 4\n[mqtt]\nhost = \"127.0.0.1\"\nport = 1883\n")
        try write("conf.d/20-unit.toml", "[unit]\nid = \"T042\"\n[mqtt]\nport = 8883\n")
        try write("conf.d/10-fleet.toml", "[unit]\nfleet = \"north\"\n[mqtt]\nhost = \"broker.north.example\"\nport = 1884\n")
        try write("conf.d/README", "not a drop-in")
        try write("conf.d/.30-hidden.toml", "[unit]\nid = \"NOPE\"\n")
        let sources = try LocalConfigSources.load(path: directory + "/taxiunitd.toml", machine: machine())
        #expect(string(sources.value, "unit", "id") == "T042")
        #expect(string(sources.value, "unit", "fleet") == "north")
        #expect(string(sources.value, "mqtt", "host") == "broker.north.example")
        #expect(sources.value == sources.value.overlaid(by: .table(["mqtt": .table(["port": .integer(8883)])])))
        #expect(sources.files == [directory + "/taxiunitd.toml", directory + "/conf.d/10-fleet.toml", directory + "/conf.d/20-unit.toml"])
        #expect(sources.origins["unit.seats"] == directory + "/taxiunitd.toml")
        #expect(sources.origins["unit.fleet"] == directory + "/conf.d/10-fleet.toml")
        #expect(sources.origins["mqtt.port"] == directory + "/conf.d/20-unit.toml")
        #expect(sources.origins["unit.id"] == directory + "/conf.d/20-unit.toml")
    }

    @Test func theUnitIDMayComeFromTheHostNameOrTheMachineID() throws {
        try write("taxiunitd.toml", "[unit]\nid = \"hostname\"\nfleet = \"demo\"\n")
        let byHost = try LocalConfigSources.load(path: directory + "/taxiunitd.toml", machine: machine())
        #expect(string(byHost.value, "unit", "id") == "taxi-t042")
        #expect(byHost.origins["unit.id"] == directory + "/taxiunitd.toml (hostname)")

        try write("conf.d/50-id.toml", "[unit]\nid = \"machine-id\"\n")
        let byMachine = try LocalConfigSources.load(path: directory + "/taxiunitd.toml", machine: machine())
        #expect(string(byMachine.value, "unit", "id") == "0123456789abcdef0123456789abcdef")

        // A host name that cannot be a topic level is refused, never used.
        #expect(throws: ConfigError.self) {
            try LocalConfigSources.load(path: directory + "/taxiunitd.toml", machine: machine(machineID: nil))
        }
        try write("conf.d/50-id.toml", "[unit]\nid = \"hostname\"\n")
        let refused = #expect(throws: ConfigError.self) {
            try LocalConfigSources.load(path: directory + "/taxiunitd.toml", machine: machine(host: "taxi/#"))
        }
        #expect(refused?.problems.first?.contains("not a usable unit id") == true)
    }

    @Test func aCredentialNamesAFileInTheCredentialsDirectory() throws {
        try write("taxiunitd.toml", "[unit]\nid = \"T1\"\nfleet = \"demo\"\n[mqtt]\nusername = \"T1\"\npassword_file = \"credential:mqtt-password\"\n")
        let sources = try LocalConfigSources.load(path: directory + "/taxiunitd.toml", machine: machine(credentials: "/run/credentials/taxiunitd.service"))
        #expect(string(sources.value, "mqtt", "password_file") == "/run/credentials/taxiunitd.service/mqtt-password")
        #expect(sources.origins["mqtt.password_file"] == directory + "/taxiunitd.toml (credential)")
        // The OwnTracks feed's secrets too: its account is a second login of the unit's.
        try write("conf.d/2.toml", "[owntracks]\nenabled = true\npassword_file = \"credential:feed-password\"\n")
        let withFeed = try LocalConfigSources.load(path: directory + "/taxiunitd.toml", machine: machine(credentials: "/run/credentials/taxiunitd.service"))
        #expect(string(withFeed.value, "owntracks", "password_file") == "/run/credentials/taxiunitd.service/feed-password")
        try FileManager.default.removeItem(atPath: directory + "/conf.d/2.toml")

        let outsideSystemd = #expect(throws: ConfigError.self) {
            try LocalConfigSources.load(path: directory + "/taxiunitd.toml", machine: machine())
        }
        #expect(outsideSystemd?.problems.first?.contains("CREDENTIALS_DIRECTORY") == true)
        try write("conf.d/1.toml", "[mqtt]\npassword_file = \"credential:../etc/shadow\"\n")
        #expect(throws: ConfigError.self) {
            try LocalConfigSources.load(path: directory + "/taxiunitd.toml", machine: machine(credentials: "/run/credentials/x"))
        }
    }

    @Test func everyBrokenFileIsReportedWithItsName() throws {
        try write("taxiunitd.toml", "[unit]\nid = \"T1\"\n")
        try write("conf.d/10-a.toml", "[unit\n")
        try write("conf.d/20-b.toml", "seats = = 3\n")
        let error = #expect(throws: ConfigError.self) {
            try LocalConfigSources.load(path: directory + "/taxiunitd.toml", machine: machine())
        }
        #expect(error?.problems.count == 2)
        #expect(error?.problems.first?.hasPrefix(directory + "/conf.d/10-a.toml: syntax error") == true)
    }
}
