import Foundation
import StrictJSON
import TaxiProtocol
import Testing

/// `JSONDocument.decode` reads an inbound message from the one strict parse; the refusal reasons
/// the dispatcher is answered with are made of its errors, so they must be `JSONDecoder`'s.
@Suite struct DocumentDecoderTests {
    /// What a decoder made of `text`: the value, or the error's kind, type and coding path.
    func outcome<T: Decodable & Equatable>(_ type: T.Type, _ text: String, strict: Bool) throws -> String {
        do {
            let value = strict ? try JSONDocument.parse(Array(text.utf8)).decode(T.self) : try JSONDecoder().decode(T.self, from: Data(text.utf8))
            return "\(value)"
        } catch let error as DecodingError {
            func path(_ context: DecodingError.Context) -> String {
                context.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: ".")
            }
            switch error {
            case .keyNotFound(let key, let context): return "missing \(path(context)) \(key.stringValue)"
            case .typeMismatch(let type, let context): return "mismatch \(type == String.self || type == Bool.self ? "\(type)" : "other") at \(path(context))"
            case .valueNotFound(let type, let context): return "null \(type == String.self || type == Bool.self ? "\(type)" : "other") at \(path(context))"
            case .dataCorrupted(let context): return "corrupted at \(path(context)): \(context.debugDescription)"
            @unknown default: return "\(error)"
            }
        }
    }

    @Test(arguments: [
        #"{"job":"J1","pickup":{"lat":1,"lon":2}}"#,
        #"{"job":"J1","pickup":{"lat":1,"lon":2},"passengers":2,"meeting_time":1e3,"shared":true,"note":"n"}"#,
        #"{"job":"J1","pickup":{"lat":1,"lon":2},"passengers":2.0}"#,
        #"{"job":"J1","pickup":{"lat":1,"lon":2},"passengers":1e1}"#,
        #"{"job":"J1","pickup":{"lat":1,"lon":2},"passengers":-0}"#,
        #"{"job":"J1","pickup":{"lat":1,"lon":2},"passengers":null}"#,
        #"{"job":"J1","pickup":{"lat":1,"lon":2},"passengers":"2"}"#,
        #"{"job":"J1","pickup":{"lat":1,"lon":2},"shared":1}"#,
        #"{"job":"J1","pickup":"the station"}"#,
        #"{"job":"J1","pickup":[1,2]}"#,
        #"{"job":"J1","pickup":{"lat":"north","lon":2}}"#,
        #"{"job":"J1","pickup":{"lat":null,"lon":2}}"#,
        #"{"job":"J1","pickup":{"lon":2}}"#,
        #"{"job":null,"pickup":{"lat":1,"lon":2}}"#,
        #"{"pickup":{"lat":1,"lon":2}}"#,
        #"{"job":"J1","pickup":{"lat":1,"lon":2},"passenger":{"pickup_code":4711}}"#,
        #"{"job":"J1","pickup":{"lat":1,"lon":2},"dropoff":{"lon":7}}"#,
        #"[1,2]"#,
    ])
    func anOfferReadsAsJSONDecoderReadsIt(_ payload: String) throws {
        let strict = try outcome(JobOffer.self, payload, strict: true), foundation = try outcome(JobOffer.self, payload, strict: false)
        #expect(strict == foundation)
    }

    @Test(arguments: [
        #"{"id":"m1","text":"hello","replies":["yes","no"],"priority":"urgent"}"#,
        #"{"id":"m1","text":"hello","replies":["yes",2]}"#,
        #"{"id":"m1","text":"hello","replies":["yes",null]}"#,
        #"{"id":"m1","text":"hello","replies":"yes"}"#,
        #"{"id":"m1","text":"hello","priority":"loud"}"#,
        #"{"id":"m1","text":"hello","priority":1}"#,
    ])
    func aMessageReadsAsJSONDecoderReadsIt(_ payload: String) throws {
        let strict = try outcome(TextMessage.self, payload, strict: true), foundation = try outcome(TextMessage.self, payload, strict: false)
        #expect(strict == foundation)
    }

    /// Where `JSONDecoder` says only "The given data was not valid JSON.", without a path, the
    /// refusal names the field.
    @Test func aNumberThatDoesNotFitItsFieldIsNamed() throws {
        let offer = #"{"job":"J1","pickup":{"lat":1,"lon":2}"#
        #expect(try outcome(JobOffer.self, offer + #","passengers":2.5}"#, strict: true) == "corrupted at passengers: Parsed JSON number <2.5> does not fit in Int.")
        #expect(
            try outcome(JobOffer.self, offer + #","passengers":99999999999999999999}"#, strict: true)
                == "corrupted at passengers: Parsed JSON number <99999999999999999999> does not fit in Int.")
        #expect(try outcome(JobOffer.self, offer + #","t":1.5}"#, strict: true) == "corrupted at t: Parsed JSON number <1.5> does not fit in Int64.")
        let refused = InboundMessage.decode(topic: .jobOffer, payload: Array((offer + #","passengers":2.5}"#).utf8), now: 0)
        #expect(refused == .failure(InboundProblem(topic: .jobOffer, job: "J1", reason: "passengers: Parsed JSON number <2.5> does not fit in Int.")))
    }
}
