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

    /// AsyncAPI's own JSON Schema for 3.0 documents (Tests/Fixtures/asyncapi-3.0.0), applied by an
    /// independent validator, `check-jsonschema` (installed by `make deps`); and it does refuse a
    /// document that breaks it.
    @Test func theAsyncAPIDocumentPassesAsyncAPIsOwnSchema() throws {
        let schema = Corpus.packageRoot + "/Tests/Fixtures/asyncapi-3.0.0/asyncapi-3.0.0.json"
        let document = Corpus.packageRoot + "/docs/asyncapi.yaml"
        let result = try runCommand(Self.checkJSONSchema, ["--schemafile", schema, document])
        #expect(result.exitCode == 0 && result.output.contains("ok -- validation done"), "\(result.output)")

        let scratch = try ScratchDirectory()
        let broken = try String(contentsOfFile: document, encoding: .utf8).replacingOccurrences(of: "action: send\n", with: "action: publish\n")
        try broken.write(toFile: scratch.file("asyncapi.yaml"), atomically: true, encoding: .utf8)
        let refused = try runCommand(Self.checkJSONSchema, ["--schemafile", schema, scratch.file("asyncapi.yaml")])
        #expect(refused.exitCode == 1 && refused.output.contains("publish"), "\(refused.output)")
    }

    /// Each examples file, read by `check-jsonschema` against the schema of its name (a `$defs` entry of
    /// taxiunit.schema.json, or an OwnTracks schema), as a dispatcher team would check them.
    @Test func everyExamplePassesAnIndependentValidator() throws {
        let scratch = try ScratchDirectory()
        let examples = Corpus.packageRoot + "/docs/examples"
        let names = try FileManager.default.contentsOfDirectory(atPath: examples).filter { $0.hasSuffix(".json") }.sorted()
        #expect(names.count >= 21)
        for name in names {
            let payload = String(name.dropLast(".json".count))
            let target = payload.hasPrefix("owntracks_")
                ? "docs/schemas/\(payload.replacingOccurrences(of: "_", with: "-")).schema.json"
                : "docs/schemas/taxiunit.schema.json#/$defs/\(payload)"
            let wrapper = #"{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"array","minItems":1,"items":{"$ref":"file://"#
                + Corpus.packageRoot + "/" + target + #""}}"#
            try wrapper.write(toFile: scratch.file(name), atomically: true, encoding: .utf8)
            let result = try runCommand(Self.checkJSONSchema, ["--schemafile", scratch.file(name), examples + "/" + name])
            #expect(result.exitCode == 0 && result.output.contains("ok -- validation done"), "\(name): \(result.output)")
        }
    }

    /// What `make deps` installs from PyPI, in a virtual environment of its own under .build.
    static let checkJSONSchema = Corpus.packageRoot + "/.build/test-tools/bin/check-jsonschema"

    /// `validate` takes what `mosquitto_sub -F %J` writes: the payload as a JSON string or, when it is
    /// JSON, as the document itself; a duplicate key inside such a payload is still found.
    @Test func theToolValidatesPayloadsGivenAsObjects() throws {
        let scratch = try ScratchDirectory()
        let lines = [
            #"{"topic":"taxi/demo/T042/msg/read","payload":"{\"id\":\"0194935f-7a44-7d67-9d55-5a1f0e9a3c14\",\"msg\":\"M-1\",\"seq\":1,\"t\":1,\"unit\":\"T042\"}"}"#,
            #"{"tst":"2026-01-01T00:00:00.000000Z+0000","topic":"taxi/demo/T042/status","qos":1,"retain":1,"payloadlen":25,"payload":{"conn":3,"online":false}}"#,
            #"{"topic":"owntracks/demo/T042","payload":{"_type":"location","lat":40.7,"lon":-73.9,"tid":"42","tst":1}}"#,
            #"{"topic":"taxi/demo/T042/status","payload":{"online":"no"}}"#,
            #"{"topic":"taxi/demo/T042/status","payload":{"online":false,"online":true}}"#,
        ]
        try (lines.joined(separator: "\n") + "\n").write(toFile: scratch.file("messages.jsonl"), atomically: true, encoding: .utf8)
        let result = try runCommand("/usr/bin/python3", [tool, "validate", scratch.file("messages.jsonl")])
        #expect(result.exitCode == 1, "\(result.output)")
        #expect(result.output.contains("taxi/demo/T042/status: (root): {'online': 'no'}"), "\(result.output)")
        #expect(result.output.contains("messages.jsonl:5: not a message with topic and payload: duplicate key"), "\(result.output)")
        #expect(result.output.contains("contract: 4 messages, 2 problems"), "\(result.output)")
    }

    /// The document's own rules: each message declares its schema format, and the last wills (the
    /// unit's and the OwnTracks feed's) are the ones docs/protocol.md states.
    @Test func theAsyncAPICheckNamesAMissingSchemaFormatAndAWrongWill() throws {
        let scratch = try ScratchDirectory()
        let document = try String(contentsOfFile: Corpus.packageRoot + "/docs/asyncapi.yaml", encoding: .utf8)
        let broken = document
            .replacingOccurrences(of: "  sos:\n      name: sos\n      payload:\n        schemaFormat: application/schema+json;version=draft-2020-12\n",
                                  with: "  sos:\n      name: sos\n      payload:\n")
            .replacingOccurrences(of: #"message: '{"conn":N,"online":false}'"#, with: #"message: '{"online":false}'"#)
            .replacingOccurrences(of: #"message: '{"_type":"lwt","tst":T}'"#, with: #"message: '{"_type":"lwt"}'"#)
        #expect(broken != document)
        try broken.write(toFile: scratch.file("asyncapi.yaml"), atomically: true, encoding: .utf8)
        let result = try runCommand("/usr/bin/python3", [tool, "asyncapi", scratch.file("asyncapi.yaml")])
        #expect(result.exitCode == 1, "\(result.output)")
        #expect(result.output.contains("message sos: the payload does not declare schemaFormat"), "\(result.output)")
        #expect(result.output.contains(#"the last will is '{"online":false}'"#), "\(result.output)")
        #expect(result.output.contains(#"the feed's last will is '{"_type":"lwt"}'"#), "\(result.output)")
        #expect(result.output.contains("asyncapi: 3 problems"), "\(result.output)")
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
