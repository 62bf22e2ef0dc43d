import DriverKeys
import Testing
import UnitConfig
import UnitCore

@Suite struct InputConfigurationTests {
    let unit = "[unit]\nid = \"T7\"\nfleet = \"north\"\n"

    /// The same readers as the rest of the configuration's tests, with a valid [unit] in front.
    let reader = UnitConfigurationTests()

    func parse(_ text: String) throws(ConfigError) -> UnitConfiguration { try reader.parse(unit + text) }

    func problems(_ text: String) -> [String] { reader.problems(unit + text) }

    @Test func noSectionsNoDevicesAndEnglish() throws {
        let config = try parse("")
        #expect(config.input.buttons == nil)
        #expect(config.input.serial == nil)
        #expect(config.unit.language == "en")
        #expect(config.unit.catalogues == "/usr/share/taxiunitd/lang")
    }

    @Test func defaultsForADeviceGivenByPathOnly() throws {
        let config = try parse("[input.buttons]\ndevice = \"/dev/input/event3\"\n[input.serial]\ndevice = \"/dev/ttyUSB0\"\n")
        let buttons = try #require(config.input.buttons)
        #expect(buttons.debounceMs == 30)
        #expect(buttons.sosHoldMs == 2000)
        #expect(buttons.keys.mapValues(\.text) == InputConfiguration.defaultButtonKeys)
        #expect(buttons.keys["KEY_F10"]?.action == .job(.sos), "parsed once, when the file is read")
        let serial = try #require(config.input.serial)
        #expect(serial.baud == 9600)
        #expect(serial.columns == 20 && serial.rows == 4)
        #expect(serial.charset == "ascii")
        #expect(serial.noiseGuardCharacters == 2)
        #expect(serial.keys.mapValues(\.text) == InputConfiguration.defaultSerialKeys)
        #expect(serial.keys["a"]?.action == .job(.accept) && serial.keys["r"]?.action == .job(.reject(reason: nil)))
        #expect(serial.keys["2"]?.action == .job(.passengersOnBoard(2)) && serial.keys["g"]?.action == .session(.nextLanguage))
    }

    @Test func aKeysTableReplacesTheDefaults() throws {
        let config = try parse("""
            [input.buttons]
            device = "/dev/input/event3"
            [input.buttons.keys]
            BTN_0 = "accept"
            260 = "sos"
            [input.serial]
            device = "/dev/ttyS1"
            baud = 19200
            [input.serial.keys]
            PF1 = "accept"
            x = "pause refuel"
            """)
        #expect(config.input.buttons?.keys.mapValues(\.text) == ["BTN_0": "accept", "260": "sos"])
        #expect(config.input.serial?.keys.mapValues(\.text) == ["PF1": "accept", "x": "pause refuel"])
        #expect(config.input.serial?.keys["x"]?.action == .job(.pause(.refuel)))
        #expect(config.input.serial?.baud == 19200)
    }

    @Test func everyProblemIsNamed() {
        let found = problems("""
            [input]
            mouse = 1
            [input.buttons]
            debounce_ms = 5000
            [input.buttons.keys]
            KEY_NOPE = "accept"
            KEY_F1 = "dance"
            KEY_F2 = 3
            [input.serial]
            device = "/dev/ttyS0"
            baud = 9601
            columns = 10
            charset = "ebcdic"
            [input.serial.keys]
            ab = "accept"
            """)
        #expect(found.count == 10)
        #expect(Set(found) == [
            "unknown key input.mouse",
            "input.buttons.debounce_ms must be between 0 and 1000, found 5000",
            "input.buttons.keys.KEY_F1: unknown input \"dance\"; known: duty, accept, reject, arrived, pob, clear, noshow, pause, resume, sos, seats, info, msg, reply, send, soon, drop, shift, jobs, bookings, login, logout, lang, alert",
            "input.buttons.keys.KEY_F2 must be a string, found integer",
            "input.buttons.keys.KEY_NOPE: unknown key; use a KEY_... name or a decimal code",
            "input.buttons.device is missing",
            "input.serial.columns must be between 16 and 132, found 10",
            "input.serial.charset must be one of ascii, utf-8, found \"ebcdic\"",
            "input.serial.keys.ab: unknown key; use one printable character, ENTER, UP, DOWN, LEFT, RIGHT or PF1-PF4",
            "input.serial.baud must be one of 1200, 2400, 4800, 9600, 19200, 38400, 57600, 115200, found 9601",
        ])
    }

    func languageProblems(_ code: String) -> [String] {
        reader.problems("[unit]\nid = \"T\"\nfleet = \"f\"\nlanguage = \"\(code)\"\n")
    }

    @Test func languageCodesNameAFileAndNothingElse() {
        for good in ["en", "it", "zu", "pt-BR", "xho"] {
            #expect(languageProblems(good) == [], "\(good)")
        }
        for bad in ["EN", "../etc/passwd", "e", "english", "en_US", ""] {
            #expect(languageProblems(bad).count == 1, "\(bad)")
        }
    }

    @Test func anIgnitionInputAndWhatItChanges() throws {
        let config = try parse("""
            [input.ignition]
            device = "/dev/input/event5"
            code = "SW_DOCK"
            invert = true
            [ignition]
            off_while_available = "off_duty"
            off_duty_after_min = 2.5
            """)
        #expect(config.input.ignition?.signal == IgnitionSignal(kind: .switch, code: 5, inverted: true))
        #expect(config.unitSettings.ignitionOff == .offDuty(after: .seconds(150)))
        #expect(try parse("").unitSettings.ignitionOff == .ask)
        let key = try parse("[input.ignition]\ndevice = \"/dev/input/event5\"\ntype = \"key\"\ncode = \"KEY_F12\"\n")
        #expect(key.input.ignition?.signal == IgnitionSignal(kind: .key, code: 88))
    }

    @Test func aWrongIgnitionInputIsRefusedWithItsReason() {
        #expect(problems("[input.ignition]\ndevice = \"/dev/input/event5\"\ncode = \"KEY_F12\"\n")
            == [#"input.ignition.code must name a switch (SW_DOCK, ...) or be its decimal code, found "KEY_F12""#])
        #expect(problems("[input.ignition]\ncode = \"SW_DOCK\"\n") == ["input.ignition.device is missing"])
        #expect(!problems("[ignition]\noff_while_available = \"sometimes\"\n").isEmpty)
    }
}

@Suite struct MeterConfigurationTests {
    let unit = "[unit]\nid = \"T7\"\nfleet = \"north\"\n"
    let reader = UnitConfigurationTests()

    func parse(_ text: String) throws(ConfigError) -> UnitConfiguration { try reader.parse(unit + text) }

    func problems(_ text: String) -> [String] { reader.problems(unit + text) }

    @Test func aMeterIsAnEvdevSignalOrASerialLine() throws {
        #expect(try parse("").input.meter == nil)
        let signal = try parse("[input.meter]\ndevice = \"/dev/input/event6\"\ncode = \"SW_LID\"\ninvert = true\n")
        #expect(signal.input.meter == .signal(device: "/dev/input/event6", signal: IgnitionSignal(kind: .switch, code: 0, inverted: true)))
        let serial = try parse("[input.meter]\nserial = \"/dev/ttyUSB1\"\n")
        #expect(serial.input.meter == .serial(port: "/dev/ttyUSB1", baud: 9600, meterProtocol: .text))
        let fast = try parse("[input.meter]\nserial = \"/dev/ttyUSB1\"\nbaud = 19200\nprotocol = \"text\"\n")
        #expect(fast.input.meter == .serial(port: "/dev/ttyUSB1", baud: 19200, meterProtocol: .text))
    }

    @Test func aWrongMeterIsRefusedWithItsReason() {
        #expect(problems("[input.meter]\n") == ["input.meter.device or serial is missing: an evdev hired/vacant signal or a meter's serial line"])
        #expect(problems("[input.meter]\ndevice = \"/dev/input/event6\"\nserial = \"/dev/ttyUSB1\"\n")
            == ["input.meter.device and serial exclude each other: an evdev hired/vacant signal or a meter's serial line, not both"])
        #expect(problems("[input.meter]\nserial = \"/dev/ttyUSB1\"\nprotocol = \"nmea\"\n").count == 1)
        #expect(problems("[input.meter]\nserial = \"/dev/ttyUSB1\"\nbaud = 1000\n")
            == ["input.meter.baud must be one of 1200, 2400, 4800, 9600, 19200, 38400, 57600, 115200, found 1000"])
        #expect(problems("[input.meter]\nserial = \"/dev/ttyUSB1\"\ncode = \"SW_LID\"\n").count == 1, "a signal's key on a serial meter is unknown")
    }
}
