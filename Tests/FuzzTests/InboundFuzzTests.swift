import Foundation
import PropertyBased
import StrictJSON
import TaxiProtocol
import Testing
import UnitConfig
import UnitCore

/// Random and mutated payloads on every inbound topic, fleet documents, and the state machine
/// driven by whatever decodes: nothing traps, and what is accepted is within the documented limits.
@Suite struct InboundFuzzTests {
    static let valid: [(InboundTopic, String)] = [
        (.jobOffer, #"{"job":"J-1842","pickup":{"lat":46.948,"lon":7.4474,"address":"Bahnhofplatz 1"},"respond_within_s":60,"passengers":2,"meeting_time":1800000300000,"shared":false,"note":"2 suitcases","t":1800000000000}"#),
        (.jobCancel, #"{"job":"J-1842","reason":"passenger withdrew"}"#),
        (.jobUpdate, #"{"job":"J-1842","add_pickup":{"lat":46.95,"lon":7.44,"address":"Markt 3","passengers":1},"passengers":2,"note":"second"}"#),
        (.sosAck, #"{"id":"0194935f-7a43-7d67-9d55-5a1f0e9a3c12","note":"seen"}"#),
        (.msg, #"{"id":"msg-17","text":"Please call the office","replies":["OK","In 10 min"],"priority":"urgent","t":1800000000000}"#),
        (.queue, #"{"zone":"Z3","position":2,"of":7,"t":1800000000000}"#),
    ]
    /// Numbers that broke, or could break, arithmetic somewhere.
    static let extremes = [
        "1e300", "-1e300", "9223372036854775807", "-9223372036854775808", "9223372036854775808", "18446744073709551616", "0", "-0",
        "1e-320", "4.9e-324", "1.7976931348623157e308", "0.5", "-1", "3601", "99", "100", "2147483648", "1e19", "NaN", "Infinity",
    ]
    static let now = Scenario.now

    /// `payload` decoded; if it was accepted, checked against the limits and fed to a machine.
    static func check(_ topic: InboundTopic, _ payload: [UInt8]) {
        switch InboundMessage.decode(topic: topic, payload: payload, now: now) {
        case .failure(let problem):
            #expect(payload.count > topic.maxPayloadBytes || !problem.reason.isEmpty)
            if let job = problem.job { #expect(job.utf8.count <= InboundLimits.idBytes) }
        case .success(let message):
            #expect(payload.count <= topic.maxPayloadBytes)
            switch message {
            case .offer(let offer):
                #expect(offer.job.utf8.count <= InboundLimits.idBytes && !offer.job.isEmpty)
                #expect(offer.respondWithinS.map(InboundLimits.respondWithinS.contains) ?? true)
                #expect(offer.passengers.map(InboundLimits.passengers.contains) ?? true)
                #expect(offer.meetingTime.map { $0.saturatingSubtract(now.milliseconds).magnitude <= InboundLimits.timeWindowMs.magnitude } ?? true)
            case .update(let update):
                #expect(update.passengers.map(InboundLimits.passengers.contains) ?? true)
                #expect(update.addPickup?.passengers.map(InboundLimits.passengers.contains) ?? true)
            case .cancel(let cancel):
                #expect((cancel.reason?.utf8.count ?? 0) <= InboundLimits.textBytes)
            case .sosAck(let ack):
                #expect((ack.id?.utf8.count ?? 0) <= InboundLimits.idBytes)
            case .message(let message):
                #expect(!message.id.isEmpty && message.id.utf8.count <= InboundLimits.idBytes)
                #expect(!message.text.isEmpty && message.text.utf8.count <= InboundLimits.textBytes)
                #expect((message.replies?.count ?? 0) <= MessageLimits.replies)
            case .queue(let queue):
                #expect(MessageLimits.queueLength.contains(queue.of) && (1...queue.of).contains(queue.position))
            }
            for state in [StateName.available, .offered, .enRoute, .onBoard] {
                var machine = Scenario.machine(in: state)
                _ = machine.handle(.inbound(message, receivedAt: now))
                _ = machine.handle(.timerFired(.offerDeadline(job: "J-1842"), at: now + .seconds(3_600)))
                _ = machine.handle(.driver(.accept, at: now))
                #expect(machine.seatsLeft >= 0)
            }
        }
    }

    @Test func randomBytesOnEveryTopic() async {
        await propertyCheck(count: FuzzBudget.cases(20_000, "inbound-random-bytes"), input: Gen.int(in: 0...255).array(of: 0...400), Gen.int(in: 0...(InboundTopic.allCases.count - 1))) { bytes, topic in
            Self.check(InboundTopic.allCases[topic], bytes.map { UInt8($0) })
        }
    }

    @Test func mutatedValidPayloads() async {
        let mutation = zip(Gen.int(in: 0...10_000), Gen.int(in: 0...255))
        await propertyCheck(count: FuzzBudget.cases(20_000, "inbound-mutated"), input: Gen.int(in: 0...(Self.valid.count - 1)), mutation.array(of: 1...6)) { which, mutations in
            let (topic, json) = Self.valid[which]
            var bytes = Array(json.utf8)
            for (position, byte) in mutations { bytes[position % bytes.count] = UInt8(byte) }
            Self.check(topic, bytes)
        }
    }

    @Test func extremeNumbersInEveryNumericField() async {
        await propertyCheck(count: FuzzBudget.cases(15_000, "inbound-extreme-numbers"), input: Gen.int(in: 0...(Self.valid.count - 1)), Gen.int(in: 0...19).array(of: 1...8)) { which, picks in
            let (topic, json) = Self.valid[which]
            // Each number literal in turn takes the next extreme.
            var remaining = picks[...]
            let text = json.replacing(/-?[0-9][0-9.eE+-]*/) { _ in Self.extremes[remaining.popFirst() ?? 0] }
            Self.check(topic, Array(text.utf8))
        }
    }

    @Test func fleetDocumentsNeverTrapTheStrictParser() async {
        let document = Array(#"{"settings":{"mqtt":{"max_inflight":5},"reporting":{"interval_s":10.50},"zones":[{"id":"a","polygon":[[1,2],[3,4],[5,6]]}]},"signature":"q1zZ","version":7}"#.utf8)
        let mutation = zip(Gen.int(in: 0...10_000), Gen.int(in: 0...255))
        await propertyCheck(count: FuzzBudget.cases(15_000, "fleet-document-mutated"), input: mutation.array(of: 0...6), Gen.int(in: 0...255).array(of: 0...40)) { mutations, tail in
            var bytes = document
            for (position, byte) in mutations { bytes[position % bytes.count] = UInt8(byte) }
            if mutations.count % 2 == 1 { bytes += tail.map { UInt8($0) } }
            guard let parsed = try? JSONDocument.parse(bytes) else { return }
            // The canonical form is itself strict JSON that parses to the same canonical form.
            let canonical = parsed.canonicalBytes
            #expect((try? JSONDocument.parse(canonical))?.canonicalBytes == canonical)
            _ = try? parsed.configValue()
        }
    }

    @Test func theMachineUnderRandomEventsWithExtremeValues() async {
        let step = zip(Gen.int(in: 0...13), Gen.int64(in: .min ... .max), Gen.int(in: -5...200))
        await propertyCheck(count: FuzzBudget.cases(6_000, "machine-random-events"), input: step.array(of: 1...40)) { steps in
            var machine = UnitStateMachine(settings: UnitSettings(seats: 4))
            var now = Self.now
            for (kind, value, small) in steps {
                // The clock mostly moves forward a little, sometimes jumps anywhere.
                now = kind == 11 ? UnitTime(milliseconds: value) : now + .seconds(small)
                let job = "J\(small % 3)"
                let event: UnitEvent = switch kind {
                case 0: .driver(.duty, at: now)
                case 1: .driver(.accept, at: now)
                case 2: .driver(.passengersOnBoard(small), at: now)
                case 3: .driver(.noShow, at: now)
                case 4: .inbound(.offer(JobOffer(job: job, pickup: Scenario.pickup, respondWithinS: Double(small), passengers: small, meetingTime: value, t: value)), receivedAt: now)
                case 5: .inbound(.update(JobUpdate(job: job, passengers: small, addPickup: .init(lat: 1, lon: 2, passengers: small))), receivedAt: now)
                case 6: .timerFired(.offerDeadline(job: job), at: now)
                case 7: .timerFired(.heartbeat, at: now)
                case 8: .driver(.sos, at: now)
                case 9: .resumed(at: now)
                case 10: .driver(.arrived, at: now)
                case 12: .driver(.seats(small % 2 == 0 ? nil : small - 10), at: now)
                case 13: .timerFired(.reminder(job: job), at: now)
                default: .driver(.clear, at: now)
                }
                _ = machine.handle(event)
                #expect(machine.seatsLeft >= 0 && machine.seatsLeft <= 4)
            }
            // Whatever the machine holds, the store can read back.
            let stored = try? JSONDecoder().decode(UnitSnapshot.self, from: JSONEncoder().encode(machine.snapshot))
            #expect(stored == machine.snapshot)
            var restored = UnitStateMachine(restoring: machine.snapshot, settings: machine.settings)
            _ = restored.handle(.resumed(at: now))
        }
    }
}

extension Scenario {
    static let now: UnitTime = 1_800_000_000_000
}
