import Testing
import UnitConfig

@Suite struct MQTTSecurityConfigTests {
    let unit = "[unit]\nid = \"T1\"\nfleet = \"f\"\n"

    func problems(_ mqtt: String) -> [String] {
        do {
            _ = try UnitConfiguration(document: ConfigValue.parseTOML(unit + "[mqtt]\n" + mqtt))
            return []
        } catch {
            return error.problems
        }
    }

    @Test func tlsIsOffByDefault() throws {
        let config = try UnitConfiguration(document: ConfigValue.parseTOML(unit))
        #expect(config.mqtt.tls == nil)
        #expect(config.mqtt.username == nil)
        #expect(config.mqtt.passwordFile == nil)
    }

    @Test func fullTLSWithClientCertificate() throws {
        let config = try UnitConfiguration(document: ConfigValue.parseTOML(unit + """
            [mqtt]
            tls = true
            cafile = "/etc/taxiunitd/ca.crt"
            certfile = "/etc/taxiunitd/unit.crt"
            keyfile = "/etc/taxiunitd/unit.key"
            tls_version = "tlsv1.3"
            username = "T1"
            password_file = "/etc/taxiunitd/mqtt.password"
            """))
        let tls = try #require(config.mqtt.tls)
        #expect(tls.caFile == "/etc/taxiunitd/ca.crt")
        #expect(tls.certFile == "/etc/taxiunitd/unit.crt")
        #expect(tls.keyFile == "/etc/taxiunitd/unit.key")
        #expect(tls.version == "tlsv1.3")
        #expect(config.mqtt.username == "T1")
        #expect(config.mqtt.passwordFile == "/etc/taxiunitd/mqtt.password")
    }

    @Test func tlsNeedsACAFile() {
        #expect(problems("tls = true\n") == [#"mqtt.tls = true needs cafile, the CA that signed the broker's certificate ("system": the operating system's CAs)"#])
    }

    @Test func certificateAndKeyGoTogether() {
        #expect(problems("tls = true\ncafile = \"ca\"\ncertfile = \"c\"\n") == ["mqtt.certfile and keyfile go together: set both or neither"])
    }

    @Test func filesWithoutTLSAreAMistake() {
        #expect(problems("cafile = \"ca\"\n") == ["mqtt.cafile, certfile and keyfile need tls = true"])
    }

    @Test func onlyModernTLSVersions() {
        #expect(problems("tls = true\ncafile = \"ca\"\ntls_version = \"tlsv1\"\n").count == 1)
    }

    @Test func aPasswordNeedsAUser() {
        #expect(problems("password_file = \"/p\"\n") == ["mqtt.password_file needs a username"])
    }
}
