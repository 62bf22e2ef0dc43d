import Testing
import UnitConfig

/// [mqtt] protocol, session_expiry_s, max_publish_rate, client_id and hosts.
@Suite struct MQTTTransportConfigTests {
    let unit = "[unit]\nid = \"T1\"\nfleet = \"north\"\n"

    func config(_ mqtt: String) throws -> UnitConfiguration {
        try UnitConfiguration(document: ConfigValue.parseTOML(unit + "[mqtt]\n" + mqtt))
    }

    func problems(_ mqtt: String) -> [String] {
        do {
            _ = try UnitConfiguration(document: ConfigValue.parseTOML(unit + "[mqtt]\n" + mqtt))
            return []
        } catch {
            return error.problems
        }
    }

    @Test func defaults() throws {
        let mqtt = try config("").mqtt
        #expect(mqtt.protocolVersion == "5")
        #expect(mqtt.sessionExpiryS == 86_400)
        #expect(mqtt.maxPublishRate == 0)
        #expect(mqtt.clientID(fleet: "north", unit: "T1") == "taxiunitd-north-T1")
        #expect(mqtt.nodes == [.init(host: "127.0.0.1", port: 1883)])
    }

    @Test func everyKeySet() throws {
        let mqtt = try config("""
            protocol = "3.1.1"
            session_expiry_s = 4294967295
            max_publish_rate = 100
            client_id = "cab/{unit}@{fleet}"
            hosts = ["127.0.0.1:1884", "localhost", "[::1]:8883"]
            port = 1885
            """).mqtt
        #expect(mqtt.protocolVersion == "3.1.1")
        #expect(mqtt.sessionExpiryS == 4_294_967_295)
        #expect(mqtt.maxPublishRate == 100)
        #expect(mqtt.clientID(fleet: "north", unit: "T1") == "cab/T1@north")
        #expect(mqtt.nodes == [.init(host: "127.0.0.1", port: 1884), .init(host: "localhost", port: 1885), .init(host: "::1", port: 8883)])
        #expect(mqtt.host == "127.0.0.1" && mqtt.port == 1884)
        #expect(mqtt.nodes.map(\.description) == ["127.0.0.1:1884", "localhost:1885", "[::1]:8883"])
    }

    @Test func outOfRangeAndMalformedValuesAreRefusedWithTheirKey() {
        let cases: [(String, String)] = [
            (#"protocol = "4""#, "mqtt.protocol"),
            ("session_expiry_s = 4294967296", "mqtt.session_expiry_s"),
            ("session_expiry_s = -1", "mqtt.session_expiry_s"),
            ("max_publish_rate = -1", "mqtt.max_publish_rate"),
            ("max_publish_rate = 100001", "mqtt.max_publish_rate"),
            (#"client_id = "taxi-{vehicle}""#, "{fleet} and {unit}"),
            (#"client_id = "taxi {unit}""#, "printable ASCII"),
            (#"client_id = """#, "mqtt.client_id"),
            (#"hosts = []"#, "1 to 16"),
            (#"hosts = ["a:0"]"#, "port must be 1 to 65535"),
            (#"hosts = ["a:99999"]"#, "port must be 1 to 65535"),
            (#"hosts = ["a b:1883"]"#, "not host:port"),
            (#"hosts = ["[::1"]"#, "closing ']'"),
            (#"hosts = [":1883"]"#, "not host:port"),
            ("hosts = [1883]", "mqtt.hosts[0]"),
        ]
        for (toml, expected) in cases {
            let found = problems(toml)
            #expect(found.contains { $0.contains(expected) }, "\(toml): \(found)")
        }
    }

    /// A fleet document may list nodes over a local file's host: the list replaces it.
    @Test func hostsReplacesHost() throws {
        let mqtt = try config("host = \"broker.example\"\nhosts = [\"127.0.0.1:1884\", \"localhost:1885\"]").mqtt
        #expect(mqtt.nodes.map(\.description) == ["127.0.0.1:1884", "localhost:1885"])
        #expect(mqtt.host == "127.0.0.1")
    }

    /// Plaintext is refused for every node off this machine, not only the first.
    @Test func everyNodeNeedsTLSUnlessLoopback() {
        let found = problems(#"hosts = ["127.0.0.1:1883", "broker-2.example:1883"]"#)
        #expect(found.contains { $0.contains("broker-2.example") && $0.contains("tls") })
        #expect(problems("hosts = [\"127.0.0.1:1883\", \"broker-2.example:1883\"]\nallow_plaintext = true").isEmpty)
    }
}

extension MQTTTransportConfigTests {
    /// A fleet document may move units to a cluster and set the protocol, but not name their client id.
    @Test func aFleetDocumentSetsHostsButNotTheClientID() throws {
        let local = try ConfigValue.parseTOML(unit + "[mqtt]\nhost = \"127.0.0.1\"\n")
        let moved = try UnitConfiguration.overlay(
            [.table(["mqtt": .table(["hosts": .array([.string("127.0.0.1:1884"), .string("localhost:1885")]), "protocol": .string("3.1.1")])])],
            on: local)
        #expect(moved.mqtt.nodes.map(\.description) == ["127.0.0.1:1884", "localhost:1885"] && moved.mqtt.protocolVersion == "3.1.1")
        #expect(throws: ConfigError(problems: ["mqtt.client_id is not remotely settable"])) {
            try UnitConfiguration.overlay([.table(["mqtt": .table(["client_id": .string("same-for-all")])])], on: local)
        }
    }
}
