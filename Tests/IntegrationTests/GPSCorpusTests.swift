import ControlSocket
import Foundation
import LocalCache
import TaxiProtocol
import TestHarness
import Testing
import UnitCore

/// Real receivers' logs through real gpsd (gpsfake) into the daemon, compared with what gpsd itself
/// says to another client (gpspipe) about the same replay.
@Suite(.serialized) struct GPSCorpusTests {
    /// Replays at once: a replay takes about 0.3 s of CPU in 3 s, mostly waiting (gpsfake sleeps
    /// 1.4 s before it feeds, the unit and gpspipe wait for gpsd).
    static let parallelReplays = 12
    /// Seconds between sentences: fast, yet gpsd sees whole cycles.
    static let cycleS = 0.002

    struct Outcome: Sendable {
        let log: String
        let problems: [String]
        let fixes: Int
    }

    @Test(.timeLimit(.minutes(5)))
    func everyLogStoresExactlyTheValidFixesGpsdReports() async throws {
        let logs = try Corpus.allLogs()
        #expect(logs.count >= 100, "the corpus at \(Corpus.gpsdLogs) looks incomplete")
        let started = ContinuousClock.now
        // Longest replays first, so that no long one starts near the end with the other slots idle.
        let bySize = try logs.sorted { try Corpus.size(of: $0) > Corpus.size(of: $1) }
        let outcomes = await withTaskGroup(of: Outcome.self, returning: [Outcome].self) { group in
            var pending = bySize[...]
            var outcomes: [Outcome] = []
            for _ in 0..<Self.parallelReplays {
                guard let log = pending.popFirst() else { break }
                group.addTask { await Self.replay(log) }
            }
            for await outcome in group {
                outcomes.append(outcome)
                if let log = pending.popFirst() { group.addTask { await Self.replay(log) } }
            }
            return outcomes
        }
        for outcome in outcomes.sorted(by: { $0.log < $1.log }) {
            for problem in outcome.problems { Issue.record("\(outcome.log): \(problem)") }
        }
        let withFixes = outcomes.filter { $0.fixes > 0 }
        print("gps corpus: \(outcomes.count) logs, \(withFixes.count) with valid fixes, \(withFixes.map(\.fixes).reduce(0, +)) fixes, \(ContinuousClock.now - started)")
        #expect(outcomes.count == logs.count)
        // The comparison means something only if much of the corpus has fixes: 91 logs do with the GPS
        // clock, 53 with a synchronised 2026 clock (older logs fall to the rollover guard).
        #expect(withFixes.count >= 40)
    }

    /// A replay that could not begin: nothing was fed yet, so nothing of the unit was judged.
    struct ReplayDidNotStart: Error, CustomStringConvertible {
        let description: String
    }

    /// A replay whose start failed is tried once more from scratch (a new gpsfake, gpsd and unit):
    /// once, on a loaded 2-core CI machine, gpspipe had no answer to its WATCH within 10 s, and once,
    /// beside `stress-ng --cpu 2`, the unit was not watching gpsd after 20 s. The first failure is
    /// printed with what the unit, gpspipe and gpsfake had said, so it stays visible.
    static func replay(_ log: String) async -> Outcome {
        var problems: [String] = []
        var fixes = 0
        do {
            do {
                fixes = try await replay(log, problems: &problems)
            } catch let notStarted as ReplayDidNotStart {
                print("\(log): the replay did not start, trying once more: \(notStarted)")
                fixes = try await replay(log, problems: &problems)
            }
        } catch {
            problems.append("\(error)")
        }
        return Outcome(log: log, problems: problems, fixes: fixes)
    }

    /// Returns how many valid fixes the replay had.
    static func replay(_ log: String, problems: inout [String]) async throws -> Int {
        let scratch = try ScratchDirectory("corpus")
        let fake = try await FakeGPS.held(log: Corpus.log(log), in: scratch, cycleS: cycleS)
        defer { fake.process.signal(SIGKILL) }
        // No broker: positions are stored and wait in the outbox, which is all this test looks at.
        // The production default clock: GPS time unless the kernel says the system clock is synchronised.
        let unit = try UnitUnderTest(mqttPort: try Loopback.freePort(), gpsdPort: fake.port, in: scratch, trustSystemClock: false)
        defer { unit.process?.signal(SIGKILL) }
        try await unit.start()
        let before: ControlStatus
        do {
            before = try await unit.waitForStatus("the unit watching gpsd", timeoutS: 30) { $0.gps.connected }
        } catch {
            throw ReplayDidNotStart(description: """
                \(error)
                taxiunitd: \(unit.log.suffix(1500))
                gpsfake: \(fake.process.log.suffix(1500))
                """)
        }
        let pipeOutput = scratch.file("gpspipe.json")
        let gpspipe = try ChildProcess("gpspipe", ["-w", "127.0.0.1:\(fake.port)"], logPath: pipeOutput)
        defer { gpspipe.signal(SIGKILL) }
        // gpsd answers gpspipe's WATCH after handling the unit's, which was sent earlier.
        do {
            try await waitUntil("gpspipe watching", timeoutS: 30) { gpspipe.log.contains(#""class":"WATCH""#) }
        } catch {
            throw ReplayDidNotStart(description: """
                \(error)
                gpspipe (\(gpspipe.isRunning ? "running" : "exited")): \(gpspipe.log.suffix(500))
                gpsfake: \(fake.process.log.suffix(1500))
                """)
        }
        fake.releaseFeed()

        // gpsd tells its watchers when the log has ended; gpsd then goes, and the unit and gpspipe
        // read to the end of what it sent.
        try await waitUntil("the replay to end", timeoutS: 120, detail: { "files in \(scratch.path)" }) {
            gpspipe.log.contains(#""activated":0"#)
        }
        fake.process.signal(SIGKILL)
        try await waitUntil("gpspipe to finish", timeoutS: 10) { !gpspipe.isRunning }
        // The disconnect reaches the engine after every report read before it, so the store is final.
        let after = try await unit.waitForStatus("the unit noticing gpsd gone") { !$0.gps.connected }
        if !(unit.process?.isRunning ?? false) { problems.append("taxiunitd exited:\n\(unit.log.suffix(3000))") }
        try await offThePool { unit.stop() }

        let expected = expectedFixes(gpspipeOutput: gpspipe.log, systemSynchronised: before.clock == ClockSource.system.rawValue)
        let stored = try LocalCache(path: unit.storePath).storedFixes()
        if stored.count != after.storedPositions { problems.append("status said \(after.storedPositions) positions, the store has \(stored.count)") }
        if stored.count != expected.count {
            problems.append("stored \(stored.count) fixes, gpsd reported \(expected.count) valid ones")
        }
        for (index, (mine, gpsds)) in zip(stored, expected).enumerated() where !mine.isSamePosition(as: gpsds) {
            problems.append("fix \(index): stored \(mine), gpsd reported \(gpsds)")
            break
        }
        return expected.count
    }

    /// gpsd's TPVs as gpspipe printed them, parsed without libgps, judged by the unit's rule with the
    /// unit's clock model (the clock only matters for the rollover and future guards, which have
    /// margins of days).
    static func expectedFixes(gpspipeOutput: String, systemSynchronised: Bool) -> [Fix] {
        var validator = FixValidator()
        var clock = UnitClock()
        var fixes: [Fix] = []
        for line in gpspipeOutput.split(whereSeparator: \.isNewline) where line.contains(#""class":"TPV""#) {
            guard let sample = GPSSample(gpsdJSON: line) else { continue }
            let now = ClockSample(system: UnitTime(seconds: Date().timeIntervalSince1970), systemSynchronised: systemSynchronised, monotonic: .checkedSeconds(0))
            if case .success(let fix) = validator.validate(sample, clock: clock.reading(at: now)) {
                clock.fixAccepted(fixTime: UnitTime(seconds: sample.time), at: now)
                fixes.append(fix)
            }
        }
        return fixes
    }

    // MARK: gpsd restarts

    @Test func fixesResumeWithinThreeSecondsOfGpsdComingBack() async throws {
        let scratch = try ScratchDirectory()
        let log = Corpus.log(Corpus.steadyLog)
        let first = try await offThePool { try FakeGPS(log: log, in: scratch, cycleS: 0.02) }
        defer { first.process.signal(SIGKILL) }
        let unit = try UnitUnderTest(mqttPort: try Loopback.freePort(), gpsdPort: first.port, in: scratch)
        try await unit.start()
        let daemon = try #require(unit.process)
        defer { daemon.signal(SIGKILL) }
        try await unit.waitForStatus("fixes from the first gpsd") { $0.storedPositions >= 5 }

        try await offThePool { first.process.killHard() }
        let outage = try await unit.waitForStatus("gpsd loss noticed", timeoutS: 5) { !$0.gps.connected }
        try await Task.sleep(for: .seconds(2))
        let stillDown = try unit.status()
        #expect(!stillDown.gps.connected)
        #expect(stillDown.storedPositions == outage.storedPositions)

        let second = try await offThePool { try FakeGPS(log: log, in: scratch, cycleS: 0.02, port: first.port) }
        defer { second.process.signal(SIGKILL) }
        let back = ContinuousClock.now
        let resumed = try await unit.waitForStatus("fixes from the restarted gpsd", timeoutS: 3) {
            $0.gps.connected && $0.storedPositions > outage.storedPositions
        }
        print("fixes resumed \(ContinuousClock.now - back) after gpsd came back")
        #expect(resumed.gps.lastFixAgeS.map { $0 < 3 } == true)
        #expect(daemon.isRunning, "the daemon must ride out gpsd restarts")
        try await offThePool { unit.stop() }
        #expect(daemon.exitCode == 0)
    }
}

extension Fix {
    /// gpsd prints 9 decimals; libgps and Foundation may round the last one differently.
    func isSamePosition(as other: Fix) -> Bool {
        time == other.time && abs(latitude - other.latitude) < 1e-8 && abs(longitude - other.longitude) < 1e-8
            && accuracy.isClose(to: other.accuracy) && speed.isClose(to: other.speed) && track.isClose(to: other.track)
    }
}

extension Optional where Wrapped == Double {
    func isClose(to other: Double?) -> Bool {
        switch (self, other) {
        case (nil, nil): true
        case let (a?, b?): abs(a - b) <= 1e-6 * max(1, abs(a))
        default: false
        }
    }
}

extension GPSSample {
    /// A TPV as gpsd's JSON, read with Foundation; absent values are NaN as in libgps.
    init?(gpsdJSON line: Substring) {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any] else { return nil }
        func number(_ key: String) -> Double { (object[key] as? NSNumber)?.doubleValue ?? .nan }
        let time = (object["time"] as? String).flatMap(Self.parseTime) ?? 0
        self.init(
            mode: (object["mode"] as? NSNumber)?.intValue ?? 0, time: time, latitude: number("lat"), longitude: number("lon"),
            speed: number("speed"), track: number("track"), horizontalError: number("eph"))
    }

    /// "2025-01-23T14:34:53.280Z", with or without fractional seconds.
    static func parseTime(_ text: String) -> Double? {
        let whole = Date.ISO8601FormatStyle()
        let fractional = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
        return ((try? fractional.parse(text)) ?? (try? whole.parse(text)))?.timeIntervalSince1970
    }
}
