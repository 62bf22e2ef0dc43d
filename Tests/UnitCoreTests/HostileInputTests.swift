import Foundation
import TaxiProtocol
import Testing
import UnitCore

/// The inputs that once crashed a unit, and the limits that now stop them where they enter.
@Suite struct HostileInputTests {
    let now = Scenario.t0

    func decode(_ topic: InboundTopic, _ json: String) -> Result<InboundMessage, InboundProblem> {
        InboundMessage.decode(topic: topic, payload: Array(json.utf8), now: now)
    }

    func reason(_ topic: InboundTopic, _ json: String) -> String? {
        if case .failure(let problem) = decode(topic, json) { return problem.reason }
        return nil
    }

    @Test func theOffersThatTrappedTheMachineAreAnsweredInvalid() {
        let pickup = #""pickup":{"lat":46.5,"lon":7.5}"#
        #expect(reason(.jobOffer, #"{"job":"J1",\#(pickup),"respond_within_s":1e300}"#) == "respond_within_s must be from 1 to 3600")
        #expect(reason(.jobOffer, #"{"job":"J1",\#(pickup),"respond_within_s":9223371000000000}"#) == "respond_within_s must be from 1 to 3600")
        #expect(reason(.jobOffer, #"{"job":"J1",\#(pickup),"t":9223372036854775807}"#) == "t is more than a year from the unit clock")
        #expect(reason(.jobOffer, #"{"job":"J1",\#(pickup),"meeting_time":-9223372036854775808}"#) == "meeting_time is more than a year from the unit clock")
        #expect(reason(.jobUpdate, #"{"job":"J1","add_pickup":{"lat":1,"lon":2,"passengers":9223372036854775807}}"#) == "add_pickup.passengers must be from 1 to 99")
        #expect(reason(.jobOffer, #"{"job":"J1",\#(pickup),"passengers":1e300}"#) != nil)
        // Every refusal keeps the job id, so the dispatcher is answered `invalid`.
        if case .failure(let problem) = decode(.jobOffer, #"{"job":"J1",\#(pickup),"respond_within_s":1e300}"#) { #expect(problem.job == "J1") }
    }

    @Test func sizesAreLimitedPerTopicBeforeParsing() {
        let note = String(repeating: "x", count: 17_000)
        #expect(reason(.jobOffer, #"{"job":"J1","pickup":{"lat":1,"lon":2},"note":"\#(note)"}"#)?.hasSuffix("over the 16384-byte limit") == true)
        #expect(reason(.sosAck, #"{"note":"\#(String(repeating: "y", count: 1100))"}"#)?.hasSuffix("over the 1024-byte limit") == true)
        #expect(reason(.jobOffer, #"{"job":"J1","pickup":{"lat":1,"lon":2},"note":"\#(String(repeating: "n", count: 501))"}"#) == "note is longer than 500 bytes")
        #expect(reason(.jobOffer, #"{"job":"\#(String(repeating: "j", count: 129))","pickup":{"lat":1,"lon":2}}"#) == "job is longer than 128 bytes")
    }

    @Test func onlyStrictJSONIsRead() {
        #expect(reason(.jobOffer, #"{"job":"J1","job":"J2","pickup":{"lat":1,"lon":2}}"#)?.contains("duplicate") == true)
        #expect(reason(.jobOffer, #"{"job":"J1","pickup":{"lat":NaN,"lon":2}}"#)?.hasPrefix("payload is not strict JSON") == true)
        #expect(reason(.jobOffer, String(repeating: "[", count: 40) + String(repeating: "]", count: 40))?.hasPrefix("payload is not strict JSON") == true)
        #expect(InboundMessage.decode(topic: .jobCancel, payload: [0x7B, 0x22, 0xFF, 0x22, 0x3A, 0x31, 0x7D], now: now) != .success(.cancel(JobCancel(job: ""))))
        if case .success = InboundMessage.decode(topic: .jobCancel, payload: [0xFE, 0xFF, 0, 0x7B, 0, 0x7D], now: now) { Issue.record("UTF-16 accepted") }
        #expect(reason(.jobCancel, "{\"job\":\"J\\u0000\"}") == "job contains control characters")
        #expect(reason(.jobCancel, #"{"job":"J1","reason":"line\nbreak"}"#) == "reason contains control characters")
    }

    @Test func anAckForAnEarlierAlarmLeavesTheOpenOneOpen() {
        var machine = Scenario.machine(in: .available)
        _ = machine.handle(.driver(.sos, at: now))
        machine.alarmStored(messageID: "first")
        _ = machine.handle(.driver(.sos, at: now + .milliseconds(1000)))
        machine.alarmStored(messageID: "second")
        let stale = machine.handle(.inbound(.sosAck(SOSAck(id: "first")), receivedAt: now + .milliseconds(2000)))
        #expect(machine.snapshot.panic != nil)
        #expect(!(stale.snapshot != nil))
        _ = machine.handle(.inbound(.sosAck(SOSAck(id: "second")), receivedAt: now + .milliseconds(3000)))
        #expect(machine.snapshot.panic == nil)

        // Without an id, or before the alarm's id is known, an ack keeps its old meaning.
        _ = machine.handle(.driver(.sos, at: now + .milliseconds(4000)))
        _ = machine.handle(.inbound(.sosAck(SOSAck()), receivedAt: now + .milliseconds(5000)))
        #expect(machine.snapshot.panic == nil)
        _ = machine.handle(.driver(.sos, at: now + .milliseconds(6000)))
        _ = machine.handle(.inbound(.sosAck(SOSAck(id: "anything")), receivedAt: now + .milliseconds(7000)))
        #expect(machine.snapshot.panic == nil)
    }

    @Test func aSnapshotFromTheStoreWithExtremeTimesCannotTrapTheMachine() {
        let job = Job(id: "J1", pickup: Scenario.pickup, passengers: Int.max, meetingTime: .min)
        for state in [DriverState.offered(PendingOffer(job: job, receivedAt: .min, deadline: .max)), .atPickup(job, arrivedAt: .min), .onBoard(job, since: RideStart(time: .max, fix: nil))] {
            var machine = UnitStateMachine(restoring: UnitSnapshot(state: state))
            _ = machine.seatsLeft
            for event: UnitEvent in [.resumed(at: .max), .driver(.noShow, at: .max), .driver(.noShow, at: .min), .timerFired(.heartbeat, at: .max), .driver(.clear, at: .min)] {
                _ = machine.handle(event)
            }
        }
    }

    @Test func impossibleFixesAreDroppedAndCounted() {
        var pipeline = PositionPipeline()
        let clock = ClockSample(system: UnitTime(seconds: Double(now.milliseconds / 1000)), systemSynchronised: false, monotonic: .checkedSeconds(100))
        let t = Double(now.milliseconds / 1000)
        let poison: [GPSSample] = [
            GPSSample(mode: 3, time: t, latitude: 46.5, longitude: 7.5, speed: 1e20),
            GPSSample(mode: 3, time: t + 0.001, latitude: 46.5, longitude: 7.5, track: 1e20),
            GPSSample(mode: 3, time: t + 0.002, latitude: 46.5, longitude: 7.5, horizontalError: -1),
            GPSSample(mode: 3, time: t + 0.003, latitude: 91, longitude: 7.5),
            GPSSample(mode: 3, time: 4_102_444_800, latitude: 46.5, longitude: 7.5),
            GPSSample(mode: 3, time: 1e300, latitude: 46.5, longitude: 7.5),
            GPSSample(mode: 3, time: t + 0.004, latitude: 46.5, longitude: 7.5, speed: -3),
        ]
        for sample in poison { #expect(pipeline.handle(sample, at: clock, state: "available") == nil, "\(sample)") }
        #expect(pipeline.fixesOutOfRange == poison.count)
        let good = pipeline.handle(GPSSample(mode: 3, time: t + 0.005, latitude: 46.5, longitude: 7.5, speed: 150, track: 360, horizontalError: 0), at: clock, state: "available")
        #expect(good?.fix.track == 0 && good?.fix.speed == 150)
        #expect(pipeline.handle(GPSSample(mode: 1, time: t + 0.006, latitude: .nan, longitude: .nan), at: clock, state: "available") == nil)
        #expect(pipeline.fixesOutOfRange == poison.count, "no fix is not nonsense")
    }

    @Test func theBackfillCodecIsTotal() {
        let extremes: [Double] = [.nan, .infinity, -.infinity, 1e20, -1e20, .greatestFiniteMagnitude, 0]
        var points: [PositionPoint] = []
        for (index, value) in extremes.enumerated() {
            points.append(PositionPoint(t: index.isMultiple(of: 2) ? .max : .min, lat: value, lon: -value, spd: value, hdg: value, acc: value))
        }
        _ = PositionBatch.encode(points)
        _ = BackfillMessage.writeJSON(unit: "T1", seq: 1, id: "x", points: points[...])
        #expect(PositionBatch.decode([[.max, 1, 1], [.max, 1, 1], [.max, .max, .max]]) == nil)
        #expect(PositionBatch.decode([[.min, .min, .min], [.min, .min, .min]]) == nil)
        // What is read back from the store is made valid first: a stored 1e20 speed is left out.
        let stored = PositionPoint(t: Scenario.t0.milliseconds, lat: 46.5, lon: 7.5, spd: 1e20, hdg: 400, acc: -1)
        #expect(stored.sanitised == PositionPoint(t: Scenario.t0.milliseconds, lat: 46.5, lon: 7.5))
        #expect(PositionPoint(t: .max, lat: 46.5, lon: 7.5).sanitised == nil)
        #expect(PositionPoint(t: Scenario.t0.milliseconds, lat: .nan, lon: 7.5).sanitised == nil)
    }

    @Test func logExcerptsAreShortAndCannotForgeLines() {
        #expect(LogExcerpt.of(Array("ok\n<3>forged\u{1B}[2J".utf8)) == #"ok\n<3>forged\x1b[2J"#)
        #expect(LogExcerpt.of([0, 0xFF, 0x5C]) == #"\x00\xff\\"#)
        let long = LogExcerpt.of([UInt8](repeating: 0x41, count: 10_000))
        #expect(long.hasSuffix("… (10000 bytes)") && long.utf8.count < 160)
    }

    @Test func saturatingArithmetic() {
        #expect(Int64.max.saturatingAdd(1) == .max)
        #expect(Int64.min.saturatingAdd(-1) == .min)
        #expect(Int64.min.saturatingSubtract(1) == .min)
        #expect(Int64.max.saturatingSubtract(-1) == .max)
        #expect(Int64(millisecondsOf: 1e300) == nil)
        #expect(Int64(millisecondsOf: .nan) == nil)
        #expect(Int64(millisecondsOf: 1.5) == 1500)
    }

    /// The shell caps every timer at an hour, so a unit clock that stepped back (GPS time giving way
    /// to a system clock years off) fires the deadline "early": the offer still times out.
    @Test func anOfferTimesOutWhateverTheClockSays() {
        var machine = Scenario.machine(in: .available)
        _ = machine.handle(.inbound(.offer(Scenario.offer("STEP", window: 60)), receivedAt: now))
        let actions = machine.handle(.timerFired(.offerDeadline(job: "STEP"), at: now - .milliseconds(5) * 365 * 86_400_000))
        #expect(Scenario.replies(actions).map(\.reply) == [.timeout])
        #expect(machine.state == .available)
    }

    /// Driver inputs come from the control socket too (64 KiB a request): a reject reason is bounded
    /// like any text the unit sends.
    @Test func aRejectReasonIsBoundedAndPrintable() {
        #expect(DriverInput.parse("reject " + String(repeating: "r", count: 500)) == .success(.reject(reason: String(repeating: "r", count: 500))))
        #expect(DriverInput.parse("reject " + String(repeating: "r", count: 501))
            == .failure(.badArgument(input: "reject", problem: "reason is longer than 500 bytes")))
        #expect(DriverInput.parse("reject bad\u{1B}[2J") == .failure(.badArgument(input: "reject", problem: "reason contains control characters")))
    }
}
