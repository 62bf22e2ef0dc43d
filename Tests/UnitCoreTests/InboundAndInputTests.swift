import Foundation
import TaxiProtocol
import Testing
import UnitCore

@Suite struct DriverInputTests {
    @Test func everyWordParses() {
        let cases: [(String, DriverInput)] = [
            ("duty", .duty), ("accept", .accept), ("reject", .reject(reason: nil)), ("reject too  far", .reject(reason: "too far")),
            ("arrived", .arrived), ("pob", .passengersOnBoard(nil)), ("pob 3", .passengersOnBoard(3)), ("clear", .clear),
            ("noshow", .noShow), ("pause", .pause(.other)), ("pause refuel", .pause(.refuel)), ("PAUSE Break", .pause(.break)),
            ("resume", .resume), ("sos", .sos), ("  Accept ", .accept), ("seats", .seats(nil)), ("seats 3", .seats(3)),
            ("info", .details), ("jobs", .history), ("bookings", .preBookings),
            ("msg", .message(.read)), ("reply", .message(.choose(nil))),
            ("reply 3", .message(.choose(3))), ("send", .message(.send)), ("soon", .soonClear(minutes: nil)), ("soon 3", .soonClear(minutes: 3)),
            ("pause next", .pauseNext), ("drop", .cancelRequest(.other)), ("drop unreachable", .cancelRequest(.passengerUnreachable)),
            ("drop Vehicle", .cancelRequest(.vehicleProblem)), ("drop vehicle_problem", .cancelRequest(.vehicleProblem)),
            ("shift start", .shift(.start(odometerKm: nil))), ("Shift END 12", .shift(.end(odometerKm: 12))),
        ]
        for (text, input) in cases { #expect(DriverInput.parse(text) == .success(input), "\(text)") }
        #expect(Set(cases.map { $0.0.split(separator: " ").first!.lowercased() }) == Set(DriverInput.words))
    }

    @Test func badInputsSayWhat() {
        #expect(DriverInput.parse("") == .failure(.empty))
        #expect(DriverInput.parse("honk") == .failure(.unknown("honk")))
        #expect(DriverInput.parse("pob 0") == .failure(.badArgument(input: "pob", problem: "passengers must be a whole number from 1, found \"0\"")))
        #expect(DriverInput.parse("pob two") == .failure(.badArgument(input: "pob", problem: "passengers must be a whole number from 1, found \"two\"")))
        #expect(DriverInput.parse("pause nap") == .failure(.badArgument(input: "pause", problem: "reason must be one of break, refuel, personal, other, found \"nap\"")))
        #expect(DriverInput.parse("accept now") == .failure(.unexpectedArgument(input: "accept")))
        #expect(DriverInput.parse("drop bored") == .failure(.badArgument(input: "drop", problem: "reason must be one of unreachable, vehicle, other, found \"bored\"")))
        #expect(DriverInput.ParseError.unknown("honk").description.hasPrefix("unknown input \"honk\"; known: duty, accept"))
    }
}

@Suite struct InboundDecodingTests {
    func decode(_ topic: InboundTopic, _ json: String) -> Result<InboundMessage, InboundProblem> {
        InboundMessage.decode(topic: topic, payload: Array(json.utf8), now: Scenario.t0)
    }

    func problem(_ topic: InboundTopic, _ json: String) -> InboundProblem? {
        if case .failure(let problem) = decode(topic, json) { return problem }
        return nil
    }

    @Test func aFullOfferDecodes() {
        let json = #"{"job":"J42","pickup":{"lat":46.5,"lon":7.5,"address":"Bahnhofplatz 1"},"respond_within_s":30,"passengers":2,"meeting_time":1800000000000,"shared":true,"note":"wheelchair","t":1799999990000,"extra":"ignored"}"#
        #expect(decode(.jobOffer, json) == .success(.offer(JobOffer(
            job: "J42", pickup: Place(lat: 46.5, lon: 7.5, address: "Bahnhofplatz 1"), respondWithinS: 30, passengers: 2,
            meetingTime: 1_800_000_000_000, shared: true, note: "wheelchair", t: 1_799_999_990_000))))
    }

    @Test func anIntegerJobIdIsItsDecimalString() {
        #expect(decode(.jobOffer, #"{"job":17,"pickup":{"lat":1,"lon":2}}"#) == .success(.offer(JobOffer(job: "17", pickup: Place(lat: 1, lon: 2)))))
        #expect(decode(.jobCancel, #"{"job":17}"#) == .success(.cancel(JobCancel(job: "17"))))
    }

    @Test func otherMessagesDecode() {
        #expect(decode(.jobCancel, #"{"job":"J1","reason":"withdrawn"}"#) == .success(.cancel(JobCancel(job: "J1", reason: "withdrawn"))))
        #expect(decode(.jobUpdate, #"{"job":"J1","add_pickup":{"lat":1,"lon":2,"passengers":2}}"#)
            == .success(.update(JobUpdate(job: "J1", addPickup: .init(lat: 1, lon: 2, passengers: 2)))))
        #expect(decode(.jobUpdate, #"{"job":"J1","passengers":2,"update":"U-9"}"#) == .success(.update(JobUpdate(job: "J1", passengers: 2, update: "U-9"))))
        let longID = String(repeating: "u", count: InboundLimits.idBytes + 1)
        #expect(problem(.jobUpdate, #"{"job":"J1","passengers":2,"update":"\#(longID)"}"#)
            == InboundProblem(topic: .jobUpdate, job: "J1", reason: "update is longer than 128 bytes"))
        #expect(decode(.sosAck, #"{}"#) == .success(.sosAck(SOSAck())))
        #expect(decode(.sosAck, #"{"id":"abc"}"#) == .success(.sosAck(SOSAck(id: "abc"))))
    }

    @Test func malformedMessagesKeepTheJobIdWhenReadable() {
        #expect(problem(.jobOffer, "not json") == InboundProblem(topic: .jobOffer, job: nil, reason: "payload is not strict JSON: not valid JSON at byte 1: expected null"))
        #expect(problem(.jobOffer, "1") == InboundProblem(topic: .jobOffer, job: nil, reason: "payload is not a JSON object"))
        #expect(problem(.jobOffer, "[1,2]")?.job == nil)
        #expect(problem(.jobOffer, #"{"pickup":{"lat":1,"lon":2}}"#) == InboundProblem(topic: .jobOffer, job: nil, reason: "job is missing"))
        #expect(problem(.jobOffer, #"{"job":1.5,"pickup":{"lat":1,"lon":2}}"#)?.reason == "job must be a non-empty string or an integer")
        #expect(problem(.jobOffer, #"{"job":true,"pickup":{"lat":1,"lon":2}}"#)?.job == nil)
        #expect(problem(.jobOffer, #"{"job":"J1"}"#) == InboundProblem(topic: .jobOffer, job: "J1", reason: "pickup is missing"))
        #expect(problem(.jobOffer, #"{"job":"J1","pickup":{"lat":"north","lon":2}}"#) == InboundProblem(topic: .jobOffer, job: "J1", reason: "pickup.lat must be a number"))
        #expect(problem(.jobOffer, #"{"job":"J1","pickup":{"lat":91,"lon":2}}"#)?.reason == "pickup lat/lon out of range")
        #expect(problem(.jobOffer, #"{"job":"J1","pickup":{"lat":1,"lon":2},"respond_within_s":0}"#)?.reason == "respond_within_s must be from 1 to 3600")
        #expect(problem(.jobOffer, #"{"job":"J1","pickup":{"lat":1,"lon":2},"passengers":0}"#)?.reason == "passengers must be from 1 to 99")
        #expect(problem(.jobUpdate, #"{"job":"J1"}"#)?.reason == "update has none of passengers, add_pickup, note, cancel_refused, meeting_time")
        #expect(problem(.jobUpdate, #"{"job":"J1","cancel_refused":false}"#)?.reason == "cancel_refused must be true when given")
        let yearAhead = (Scenario.t0 + .seconds(367 * 86_400)).milliseconds
        #expect(problem(.jobUpdate, #"{"job":"J1","meeting_time":\#(yearAhead)}"#)?.reason == "meeting_time is more than a year from the unit clock")
        if case .success(.update(let update)) = decode(.jobUpdate, #"{"job":"J1","meeting_time":\#(yearAhead - 2 * 86_400_000)}"#) {
            #expect(update == JobUpdate(job: "J1", meetingTime: yearAhead - 2 * 86_400_000))
        } else {
            Issue.record("a meeting time alone is an update")
        }
        #expect(problem(.jobCancel, #"{"job":""}"#)?.reason == "job must be a non-empty string or an integer")
    }
}

@Suite struct OutboundEncodingTests {
    func json(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    @Test func envelopesPutUnitSeqAndIdBesideTheBody() throws {
        let reply = Envelope(JobReply(job: "J1", reply: .reject, reason: "too far", t: 5), unit: "T1", seq: 3, id: "abc")
        #expect(try json(reply) == #"{"id":"abc","job":"J1","re":"job/offer","reason":"too far","reply":"reject","seq":3,"t":5,"unit":"T1"}"#)
        let event = Envelope(Transition(t: 7, from: .enRoute, to: .atPickup, job: "J1", reason: "arrived_by_gps"), unit: "T1", seq: 4, id: "def")
        #expect(try json(event) == #"{"from":"en_route","id":"def","job":"J1","reason":"arrived_by_gps","seq":4,"t":7,"to":"at_pickup","unit":"T1"}"#)
        let alarm = Envelope(SOSAlarm(t: 9, state: .offDuty, job: nil, fix: PositionPoint(Fix(time: 8, latitude: 46.5, longitude: 7.5))), unit: "T1", seq: 1, id: "ghi")
        #expect(try json(alarm) == #"{"fix":{"lat":46.5,"lon":7.5,"t":8},"id":"ghi","seq":1,"state":"off_duty","t":9,"unit":"T1"}"#)
    }

    @Test func theStatusUsesSnakeCaseAndOmitsWhatIsUnknown() throws {
        let status = StatusMessage(online: true, unit: "T1", status: UnitStatus(state: .paused, pauseReason: .refuel, seatsLeft: 4), zone: nil, t: 1)
        #expect(try json(status) == #"{"online":true,"reason":"refuel","seats_left":4,"state":"paused","t":1,"unit":"T1"}"#)
    }
}
