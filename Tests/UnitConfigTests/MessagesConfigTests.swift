import Testing
import UnitConfig

/// `[messages]`: the driver's canned messages and how many messages the unit keeps.
@Suite struct MessagesConfigTests {
    let unit = "[unit]\nid = \"T1\"\nfleet = \"f\"\n"

    func problems(_ toml: String) -> [String] {
        do {
            _ = try UnitConfiguration(document: try ConfigValue.parseTOML(unit + toml))
            return []
        } catch {
            return error.problems
        }
    }

    @Test func defaultsAndOverrides() throws {
        let defaults = try UnitConfiguration(document: try ConfigValue.parseTOML(unit))
        #expect(defaults.messages.canned == ["Traffic", "Running late", "Call me"] && defaults.messages.keep == 50)
        let set = try UnitConfiguration(document: try ConfigValue.parseTOML(unit + "[messages]\ncanned = [\"Stuck\"]\nkeep = 5\n"))
        #expect(set.messages.canned == ["Stuck"] && set.messages.keep == 5)
        #expect(try UnitConfiguration(document: try ConfigValue.parseTOML(unit + "[messages]\ncanned = []\n")).messages.canned == [])
    }

    @Test func badValuesAreNamed() {
        #expect(problems("[messages]\nkeep = 0\n") == ["messages.keep must be between 1 and 200, found 0"])
        #expect(problems("[messages]\ncanned = [\"\"]\n") == ["messages.canned[0] must be 1 to 18 printable characters, found \"\""])
        #expect(problems("[messages]\ncanned = [\"a much too long canned text\"]\n")
            == ["messages.canned[0] must be 1 to 18 printable characters, found \"a much too long canned text\""])
        #expect(problems("[messages]\ncanned = [\"1\",\"2\",\"3\",\"4\",\"5\",\"6\",\"7\",\"8\",\"9\",\"10\"]\n") == ["messages.canned holds more than 9 texts"])
        #expect(problems("[messages]\ncanned = \"Traffic\"\n") == ["messages.canned must be an array of strings, found string"])
        #expect(problems("[messages]\nsilly = 1\n") == ["unknown key messages.silly"])
    }

    @Test func theFleetSetsTheCannedMessagesButNotTheCapacity() throws {
        let fleet = ConfigValue.table(["messages": .table(["canned": .array([.string("Road closed")])])])
        #expect(try UnitConfiguration.overlay([fleet], on: ConfigValue.parseTOML(unit)).messages.canned == ["Road closed"])
        let keep = ConfigValue.table(["messages": .table(["keep": .integer(5)])])
        #expect(throws: ConfigError(problems: ["messages.keep is not remotely settable"])) {
            try UnitConfiguration.overlay([keep], on: ConfigValue.parseTOML(unit))
        }
    }
}
