import ControlSocket
import Testing

struct HumanReadableTests {
    let status = ControlStatus(
        unit: "T1", state: "available",
        gps: .init(connected: true, lastFixAgeS: 1.25, lastFixTime: 1_700_000_000_000),
        broker: .init(connected: false, since: 1_700_000_000_000, lastError: "Connection refused"),
        outbox: .init(depth: 3, inFlight: 0, alarm: 0, reply: 1, event: 0, position: 2, positionsThinned: 0, positionsDropped: 0),
        storedPositions: 12)

    @Test func statusReadsAsLinesInAFixedOrder() {
        let lines = HumanReadable.render(status).split(separator: "\n").map(String.init)
        #expect(lines.first == "unit              T1")
        #expect(lines[1] == "state             available")
        #expect(lines.contains("gpsd              connected"))
        #expect(lines.contains("  last fix age  1.2 s ago") || lines.contains("  last fix age  1.3 s ago"))
        #expect(lines.contains("broker            disconnected"))
        #expect(lines.contains("  last error  Connection refused"))
        #expect(lines.last == "stored positions  12")
        // Classes most urgent first.
        let classes = ["alarm", "reply", "event", "position"].map { name in lines.firstIndex { $0.hasPrefix("  \(name) ") } ?? -1 }
        #expect(classes.allSatisfy { $0 > 0 } && classes == classes.sorted(), "\(lines)")
        #expect(lines.firstIndex(of: "gpsd              connected")! < lines.firstIndex(of: "broker            disconnected")!)
    }

    @Test func theShiftsCountersReadAsSpans() {
        var shifted = status
        shifted.shift = ControlStatus.Shift(startedAt: 1_700_000_000_000, onDutyS: 3725, drivingS: 185, continuousDrivingS: 42)
        let text = HumanReadable.render(shifted)
        #expect(text.contains("\nshift:\n"), "\(text)")
        #expect(text.contains("  continuous driving  42 s\n  driving             3 min 5 s\n  on duty             1 h 2 min\n"), "\(text)")
        #expect(text.contains(/\n  started at +\d{4}-\d\d-\d\d \d\d:\d\d:\d\d [+-]\d\d:\d\d/), "\(text)")
    }

    @Test func fieldsItDoesNotKnowAreShownInWords() {
        struct Future: Encodable {
            let state = "hired"
            let configVersions = ["fleet": 7]
            let droppedPositions = 4
            let sosPending = false
        }
        let text = HumanReadable.render(Future())
        #expect(text.contains("config versions:\n  fleet  7"), "\(text)")
        #expect(text.contains("dropped positions  4"), "\(text)")
        #expect(text.contains("SOS pending        no"), "\(text)")
    }

    /// Spans in whole units, times with their offset from UTC, nothing shown as a heading over
    /// nothing, an empty settings document as none.
    @Test func valuesReadAsPeopleWriteThem() {
        let running = ControlStatus(unit: "T1", state: "available", gps: status.gps, broker: status.broker, outbox: status.outbox,
                                    storedPositions: 0, runningForS: 5.02032)
        let text = HumanReadable.render(running)
        #expect(text.hasSuffix("\nrunning for       5 s"), "\(text)")
        struct Spans: Encodable {
            let downForS = 185.0
            let runningForS = 3725.4
        }
        #expect(HumanReadable.render(Spans()) == "down for     3 min 5 s\nrunning for  1 h 2 min", "\(HumanReadable.render(Spans()))")
        #expect(text.contains(/last fix at   \d{4}-\d\d-\d\d \d\d:\d\d:\d\d [+-]\d\d:\d\d/), "\(text)")
        struct Settings: Encodable {
            let remoteSettings = "{}"
            let versions: [String: Int] = [:]
            let aside: [String: Int] = [:]
        }
        let settings = HumanReadable.render(Settings())
        #expect(settings == "set aside        none\nremote settings  none\nversions         none", "\(settings)")
    }

    @Test func listsOfObjectsAreBulleted() {
        let listing = ControlOutboxListing(
            depthByClass: ["reply": 1],
            oldest: [ControlOutboxEntry(messageClass: "reply", topic: "job/reply", id: "abc", createdAt: 1_700_000_000_000, inFlight: true)])
        let lines = HumanReadable.render(listing).split(separator: "\n").map(String.init)
        #expect(lines.contains("  - class      reply"), "\(lines)")
        #expect(lines.contains("    in flight  yes"), "\(lines)")
        #expect(HumanReadable.render([ControlRide]()) == "")
    }
}
