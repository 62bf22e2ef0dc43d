import Foundation
import MQTTLink
import TestHarness
import Testing

/// The machine-readable contract itself: the examples in docs/examples conform to docs/schemas, the
/// dispatcher teams' backfill decoder agrees with the shared vectors (which the Swift encoder is held
/// to in BackfillVectorsTests), and the check does fail on a message that breaks the contract.
/// The end-to-end tests hold every message a real unit and dispatchsim publish to the schemas.
@Suite struct ContractTests {
    let tool = Corpus.packageRoot + "/contrib/taxiunit_contract.py"

    @Test func everyExampleConforms() throws {
        let result = try runCommand("/usr/bin/python3", [tool, "examples", Corpus.packageRoot + "/docs/examples"])
        #expect(result.exitCode == 0, "\(result.output)")
        let count = try #require(result.output.firstMatch(of: /contract: (\d+) messages, 0 problems/))
        #expect(Int(count.1) ?? 0 >= 20)
    }

    @Test func thePythonDecoderAgreesWithTheSharedVectors() throws {
        let result = try runCommand("/usr/bin/python3", [tool, "vectors", Corpus.packageRoot + "/contrib/backfill-vectors.json"])
        #expect(result.exitCode == 0, "\(result.output)")
        #expect(result.output.contains("vectors: 9 checked, 0 wrong"), "\(result.output)")
    }

    @Test func theAsyncAPIDocumentHoldsTogether() throws {
        let result = try runCommand("/usr/bin/python3", [tool, "asyncapi", Corpus.packageRoot + "/docs/asyncapi.yaml"])
        #expect(result.exitCode == 0 && result.output.contains("asyncapi: 0 problems"), "\(result.output)")
    }

    @Test func aMessageThatBreaksTheContractIsNamed() throws {
        func message(_ topic: String, _ payload: String) -> MQTTMessage { MQTTMessage(topic: topic, payload: Array(payload.utf8), qos: 1, retained: false) }
        let problems = try ContractCheck.problems(in: [
            message("taxi/test/T1/job/reply", #"{"id":"x","job":"J1","re":"job/offer","reply":"maybe","seq":1,"t":1,"unit":"T1"}"#),
            message("taxi/test/T1/status", #"{"online":true,"unit":"T1","state":"off_duty","seats_left":4,"t":1,"x":NaN}"#),
            message("taxi/test/T1/event", #"{"from":"available","to":"offered","seq":2,"seq":3,"id":"x","t":1,"unit":"T1"}"#),
            message("taxi/test/T1/nonsense", "{}"),
            message("taxi/test/T1/sos/ack", "{}"),
        ])
        #expect(problems.contains { $0.hasPrefix("taxi/test/T1/job/reply: reply:") }, "\(problems)")
        #expect(problems.contains { $0.hasPrefix("taxi/test/T1/job/reply: id:") }, "\(problems)")
        #expect(problems.contains { $0.hasPrefix("taxi/test/T1/status: not strict JSON") }, "\(problems)")
        #expect(problems.contains { $0.hasPrefix("taxi/test/T1/event: not strict JSON: duplicate key") }, "\(problems)")
        #expect(problems.contains { $0.hasPrefix("taxi/test/T1/nonsense: no payload") }, "\(problems)")
        #expect(!problems.contains { $0.hasPrefix("taxi/test/T1/sos/ack") }, "\(problems)")
        #expect(problems.count == 5, "\(problems)")
    }
}
