import ControlSocket
import Testing

/// `taxiunitctl health`'s verdict, from a status answer alone.
@Suite struct HealthCheckTests {
    func status(
        fixAgeS: Double? = 1, gpsd: Bool = true, runningForS: Double? = 600, broker: Bool = true, downForS: Double? = nil,
        lastError: String? = nil, depth: Int = 0, volatileStore: String? = nil
    ) -> ControlStatus {
        ControlStatus(
            unit: "T1", state: "available", gps: .init(connected: gpsd, lastFixAgeS: fixAgeS, lastFixTime: nil),
            broker: .init(connected: broker, since: nil, lastError: lastError, downForS: downForS),
            outbox: .init(depth: depth, inFlight: 0, alarm: 0, reply: 0, event: 0, position: depth, positionsThinned: 0, positionsDropped: 0),
            storedPositions: 0, runningForS: runningForS, volatileStore: volatileStore)
    }

    let thresholds = HealthThresholds(noFixS: 60, brokerDownS: 120, outboxDepth: 1000)

    @Test func aWorkingUnitHasNoProblems() {
        #expect(HealthCheck.problems(status(), thresholds: thresholds).isEmpty)
        // Just started: no fix and no broker yet is no problem until the thresholds pass.
        #expect(HealthCheck.problems(status(fixAgeS: nil, runningForS: 30, broker: false, downForS: 30), thresholds: thresholds).isEmpty)
        #expect(HealthCheck.problems(status(fixAgeS: 59.9, broker: false, downForS: 119.9, depth: 1000), thresholds: thresholds).isEmpty)
    }

    @Test func eachProblemIsOneLine() {
        let problems = HealthCheck.problems(
            status(fixAgeS: 75.6, gpsd: false, broker: false, downForS: 300.2, lastError: "connection refused", depth: 1001,
                   volatileStore: "/tmp/v.sqlite"),
            thresholds: thresholds)
        #expect(problems == [
            "gps: no fix for 75 s (gpsd not connected)",
            "broker: down for 300 s: connection refused",
            "store: the store could not be opened; running on the volatile fallback /tmp/v.sqlite, lost on restart",
            "outbox: 1001 messages waiting (more than 1000)",
        ])
    }

    @Test func neverAFixCountsFromTheStart() {
        #expect(HealthCheck.problems(status(fixAgeS: nil, runningForS: 61), thresholds: thresholds)
            == ["gps: no fix since the start 61 s ago (gpsd connected)"])
    }

    @Test func theThresholdsAreTheCallers() {
        let strict = HealthThresholds(noFixS: 0.5, brokerDownS: 0, outboxDepth: 0)
        #expect(HealthCheck.problems(status(fixAgeS: 1, broker: false, downForS: 0, depth: 1), thresholds: strict).count == 3)
        // A connected broker is never down, whatever a stale `downForS` says.
        #expect(HealthCheck.problems(status(fixAgeS: 0.1, broker: true, downForS: 999), thresholds: strict).isEmpty)
    }

    /// The store's disk: a failing write and a full filesystem are each one line; a store that has
    /// room and writes says nothing.
    @Test func theStoresDiskIsReported() {
        var full = status()
        full.store = .init(
            bytes: 2_560 * 1024, limitBytes: 2_600 * 1024, filesystemFreeBytes: 0, filesystemFull: true,
            writeError: "SQLite error 13: database or disk is full", inMemory: 3)
        #expect(HealthCheck.problems(full, thresholds: thresholds) == [
            "store: cannot write (SQLite error 13: database or disk is full); 3 messages kept in memory, lost on restart",
            "store: its filesystem is full (0 KiB free); the store keeps within 2600 KiB, positions give way first",
        ])
        var fine = status()
        fine.store = .init(bytes: 2_560 * 1024, limitBytes: 64 * 1024 * 1024, filesystemFreeBytes: nil, filesystemFull: false, writeError: nil, inMemory: 0)
        #expect(HealthCheck.problems(fine, thresholds: thresholds).isEmpty)
    }
}
