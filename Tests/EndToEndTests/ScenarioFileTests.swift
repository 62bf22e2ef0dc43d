import Foundation
import TestHarness
import Testing

/// dispatchsim reads a scenario someone typed: a time out of range is a clear error, not a trap.
@Suite struct ScenarioFileTests {
    /// dispatchsim's output and exit code for `scenario`, with one zone, "z". Port 1: the scenario
    /// is read before any connection is tried.
    static func run(scenario text: String) throws -> (output: String, exitCode: Int32) {
        let scratch = try ScratchDirectory()
        let scenario = scratch.file("scenario.toml")
        try text.write(toFile: scenario, atomically: true, encoding: .utf8)
        let zones = scratch.file("zones.toml")
        try DispatchSimUnderTest.zonesTOML([("z", DispatchSimUnderTest.square(around: 46.9, 7.4))])
            .write(toFile: zones, atomically: true, encoding: .utf8)
        return try runCommand(Corpus.binary("dispatchsim"), ["--zones", zones, "--scenario", scenario, "--port", "1"])
    }

    @Test(arguments: [
        ("at_s = 1e300", "request #1: needs id, at_s"),
        ("at_s = -5", "request #1: needs id, at_s"),
        ("at_s = 10\nmeeting_at_s = 1e19", "request #1: meeting_at_s must be"),
    ])
    func anOutOfRangeTimeIsRefusedWithItsPlace(line: String, expected: String) throws {
        let (output, exitCode) = try Self.run(scenario: "[[request]]\nid = \"r1\"\npickup = [46.9, 7.4]\n\(line)\n")
        #expect(exitCode == 1, "\(output)")
        #expect(output.contains(expected), "\(output)")
    }

    @Test(arguments: ["prebook_every = 4", "prebook_every = 0\nprebook_ahead_s = 3600", "prebook_every = 4\nprebook_ahead_s = -1"])
    func aPreBookingShareWithoutAUsableLeadIsRefused(lines: String) throws {
        let (output, exitCode) = try Self.run(scenario: "[[generate]]\nzone = \"z\"\nevery_s = 60\n\(lines)\n")
        #expect(exitCode == 1, "\(output)")
        #expect(output.contains("generate #1: prebook_every (> 0) needs prebook_ahead_s"), "\(output)")
    }

    @Test(arguments: ["until_s = -1", "until_s = \"soon\"", "until_s = 1e300"])
    func aGeneratorEndThatIsNoTimeIsRefused(line: String) throws {
        let (output, exitCode) = try Self.run(scenario: "[[generate]]\nzone = \"z\"\nevery_s = 60\n\(line)\n")
        #expect(exitCode == 1, "\(output)")
        #expect(output.contains("generate #1: until_s must be"), "\(output)")
    }

    @Test func aCancelOutOfRangeIsRefused() throws {
        let (output, exitCode) = try Self.run(scenario: "[[cancel]]\nrequest = \"r1\"\nat_s = inf\n")
        #expect(exitCode == 1, "\(output)")
        #expect(output.contains("cancel #1: needs request and at_s"), "\(output)")
    }

    @Test(arguments: [
        ("at_s = 5", "broadcast #1: needs text and at_s"),
        ("at_s = 5\ntext = \"\"", "broadcast #1: text must not be empty"),
        ("at_s = 5\ntext = \"Hi\"\nzone = \"a/b\"", "broadcast #1: zone \"a/b\" cannot name a topic"),
        ("at_s = 5\ntext = \"Hi\"\npriority = \"loud\"", "broadcast #1: priority must be normal or urgent"),
        ("at_s = 5\ntext = \"Hi\"\nzone = \"nowhere\"", "names zone nowhere, which --zones does not have"),
    ])
    func aBroadcastThatCannotBeSentIsRefusedWithItsPlace(lines: String, expected: String) throws {
        let (output, exitCode) = try Self.run(scenario: "[[broadcast]]\n\(lines)\n")
        #expect(exitCode == 1, "\(output)")
        #expect(output.contains(expected), "\(output)")
    }
}
