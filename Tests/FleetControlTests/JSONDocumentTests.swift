import StrictJSON
import Testing
import UnitConfig
import UnitCore

@Suite struct JSONDocumentTests {
    func parse(_ text: String) throws(JSONSyntaxError) -> JSONDocument {
        try JSONDocument.parse(Array(text.utf8))
    }

    func problem(_ text: String) -> String? {
        do {
            _ = try parse(text)
            return nil
        } catch {
            return error.problems.first
        }
    }

    @Test func strictnessRefusesWhatSignaturesCouldDisagreeAbout() {
        #expect(problem(#"{"a":1,"a":2}"#)?.contains("duplicate key \"a\"") == true)
        #expect(problem(#"{"a":NaN}"#)?.contains("NaN and Infinity") == true)
        #expect(problem(#"{"a":-Infinity}"#)?.contains("NaN and Infinity") == true)
        #expect(problem(#"{"a":1} x"#)?.contains("unexpected bytes after the document") == true)
        #expect(problem(#"{"a":01}"#)?.contains("leading zeros") == true)
        #expect(problem(#"{"a":1.}"#)?.contains("after the decimal point") == true)
        #expect(problem("{\"a\":\"\u{1}\"}")?.contains("control character") == true)
        #expect(problem(#"{"a":"\ud800"}"#)?.contains("unpaired surrogate") == true)
        #expect(problem("") == "not valid JSON at byte 0: unexpected end of document")
        #expect(problem("hello")?.contains("unexpected character") == true)
        #expect(problem(String(repeating: "[", count: 40) + String(repeating: "]", count: 40))?.contains("nested deeper") == true)
        #expect(throws: JSONSyntaxError.self) { try JSONDocument.parse([UInt8(ascii: "\""), 0xFF, UInt8(ascii: "\"")]) }
    }

    @Test func acceptsOrdinaryJSON() throws {
        let document = try parse(#" { "b" : [1, -2.5e3, true, null], "a" : "x\n\u00e9\ud83d\ude95" } "#)
        #expect(document["a"] == .string("x\né🚕"))
        #expect(document["b"] == .array([.number(literal: "1"), .number(literal: "-2.5e3"), .bool(true), .null]))
    }

    @Test func canonicalFormSortsKeysDropsWhitespaceAndKeepsNumbersVerbatim() throws {
        let document = try parse(#"{ "z": 1.50, "a": { "y": [ 1e2, "é" ], "b": "q\"\\/\t\u0001" }, "B": false }"#)
        #expect(String(decoding: document.canonicalBytes, as: UTF8.self)
            == #"{"B":false,"a":{"b":"q\"\\/\t\u0001","y":[1e2,"é"]},"z":1.50}"#)
    }

    /// docs/protocol.md promises this for dispatchers written in Python.
    @Test func canonicalFormMatchesPythonsSortedCompactDump() throws {
        // json.dumps(d, sort_keys=True, separators=(",", ":"), ensure_ascii=False) printed this for
        // d = {"z": 1.5, "é": {"b": "q\"\\/\t\u0001", "a": [100, "ü🚕"]}, "B": False, "key with space": None}
        let python = #"{"B":false,"key with space":null,"z":1.5,"é":{"a":[100,"ü🚕"],"b":"q\"\\/\t\u0001"}}"#
        let received = try parse(#"{"z": 1.5, "\u00e9": {"b": "q\"\\\/\t\u0001", "a": [100, "\u00fc\ud83d\ude95"]}, "B": false, "key with space": null}"#)
        #expect(String(decoding: received.canonicalBytes, as: UTF8.self) == python)
    }

    @Test func canonicalFormIsAFixedPoint() throws {
        let once = try parse(#"{"k": [ {"b":1, "a":2} ], "s": "\u001f\b"}"#).canonicalBytes
        #expect(try JSONDocument.parse(once).canonicalBytes == once)
    }

    @Test func numbersBecomeIntegersOrFiniteDoubles() throws {
        let value = try parse(#"{"i":42,"d":2.5,"e":1e3,"n":-7}"#).configValue()
        #expect(value == .table(["i": .integer(42), "d": .double(2.5), "e": .double(1000), "n": .integer(-7)]))
        #expect(throws: ConfigError(problems: ["big is an integer too large: 99999999999999999999"])) {
            try parse(#"{"big":99999999999999999999}"#).configValue()
        }
        #expect(throws: ConfigError(problems: ["x.huge is a number out of range: 1e999"])) {
            try parse(#"{"x":{"huge":1e999}}"#).configValue()
        }
    }
}
