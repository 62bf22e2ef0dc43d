import Foundation
import JournalLog
import Logging
import Testing

final class Lines: @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [String] = []
    func append(_ line: String) { lock.withLock { lines.append(line) } }
    var all: [String] { lock.withLock { lines } }
}

struct JournalLogHandlerTests {
    func logger(level: Logger.Level = .trace, into lines: Lines) -> Logger {
        let output = JournalOutput { lines.append($0) }
        return Logger(label: "taxiunitd") { JournalLogHandler(label: $0, level: level, output: output) }
    }

    @Test func everyLevelGetsItsSyslogPriority() {
        let lines = Lines()
        let log = logger(into: lines)
        log.trace("t")
        log.debug("d")
        log.info("i")
        log.notice("n")
        log.warning("w")
        log.error("e")
        log.critical("c")
        #expect(lines.all == [
            "<7>taxiunitd: t\n", "<7>taxiunitd: d\n", "<6>taxiunitd: i\n", "<5>taxiunitd: n\n",
            "<4>taxiunitd: w\n", "<3>taxiunitd: e\n", "<2>taxiunitd: c\n",
        ])
    }

    @Test func metadataIsSortedAndNewlinesCannotSplitAnEntry() {
        let lines = Lines()
        logger(into: lines).warning("cannot connect\nto broker", metadata: ["reason": "refused", "broker": "b:1883"])
        #expect(lines.all == ["<4>taxiunitd: cannot connect to broker broker=b:1883 reason=refused\n"])
    }

    @Test func levelFilters() {
        let lines = Lines()
        let log = logger(level: .warning, into: lines)
        log.info("hidden")
        log.warning("shown")
        #expect(lines.all == ["<4>taxiunitd: shown\n"])
    }

    @Test func identicalWarningsAreRateLimitedButInfoIsNot() {
        let lines = Lines()
        let log = logger(into: lines)
        for _ in 0..<5 {
            log.warning("cannot connect to broker", metadata: ["reason": "Connection refused"])
            log.info("connected to gpsd")
        }
        log.warning("cannot connect to broker", metadata: ["reason": "Host unreachable"])
        #expect(lines.all.filter { $0.hasPrefix("<4>") } == [
            "<4>taxiunitd: cannot connect to broker reason=Connection refused\n",
            "<4>taxiunitd: cannot connect to broker reason=Host unreachable\n",
        ])
        #expect(lines.all.filter { $0.hasPrefix("<6>") }.count == 5)
    }

    @Test func theLineAfterTheWindowCarriesTheCount() async throws {
        let lines = Lines()
        let output = JournalOutput(repeatWindow: .milliseconds(100)) { lines.append($0) }
        let log = Logger(label: "taxiunitd") { JournalLogHandler(label: $0, level: .info, output: output) }
        for _ in 0..<3 { log.error("gpsd down") }
        try await Task.sleep(for: .milliseconds(150))
        log.error("gpsd down")
        #expect(lines.all == ["<3>taxiunitd: gpsd down\n", "<3>taxiunitd: gpsd down (2 identical lines suppressed since the last one)\n"])
    }
}

/// `taxiunitctl log-level`: handlers made without a level follow the output's, also later.
@Suite struct JournalLevelTests {
    @Test func handlersFollowTheOutputsLevelUnlessGivenTheirOwn() {
        let lines = Lines()
        let output = JournalOutput(level: .info) { lines.append($0) }
        let following = Logger(label: "a") { JournalLogHandler(label: $0, output: output) }
        let fixed = Logger(label: "b") { JournalLogHandler(label: $0, level: .warning, output: output) }
        following.debug("hidden")
        output.level = .debug
        following.debug("shown")
        fixed.info("fixed stays at warning")
        output.level = .error
        following.warning("hidden too")
        #expect(lines.all == ["<7>a: shown\n"])
    }
}
