import ControlSocket
import Foundation
import MQTTLink
import TestHarness
import Testing

/// Hostile payloads on every inbound topic, against the real daemon through a real mosquitto: after
/// each one the unit is alive, answers `invalid` where the job id is readable, and has handled it
/// (a sentinel sent after it is answered); at the end a good offer is shown and answered.
@Suite(.serialized) struct HostilePayloadTests {
    struct Payload {
        var topic: String
        var bytes: [UInt8]
        /// The job the unit must answer `invalid`; nil: the payload must get no answer at all.
        var invalidFor: String?
        var label: String

        init(_ topic: String, _ label: String, _ text: String, invalidFor job: String? = nil) {
            self.init(topic, label, Array(text.utf8), invalidFor: job)
        }

        init(_ topic: String, _ label: String, _ bytes: [UInt8], invalidFor job: String? = nil) {
            self.topic = topic
            self.label = label
            self.bytes = bytes
            invalidFor = job
        }
    }

    static func payloads() -> [Payload] {
        func offer(_ job: String, _ fields: String) -> String { #"{"job":"\#(job)","pickup":{"lat":46.5,"lon":7.5},\#(fields)}"# }
        var random = SystemRandomNumberGenerator()
        let randomBytes = (0..<4096).map { _ in UInt8.random(in: 0...255, using: &random) }
        let utf16 = Array(#"{"job":"U16","pickup":{"lat":1,"lon":2}}"#.utf16).flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
        return [
            Payload("job/offer", "respond_within_s 1e300", offer("H01", #""respond_within_s":1e300"#), invalidFor: "H01"),
            Payload("job/offer", "respond_within_s near Int64.max ms", offer("H02", #""respond_within_s":9223371000000000"#), invalidFor: "H02"),
            Payload("job/offer", "t = Int64.max", offer("H03", #""t":9223372036854775807"#), invalidFor: "H03"),
            Payload("job/offer", "meeting_time = Int64.min", offer("H04", #""meeting_time":-9223372036854775808"#), invalidFor: "H04"),
            Payload("job/offer", "passengers 1e300", offer("H05", #""passengers":1e300"#), invalidFor: "H05"),
            Payload("job/offer", "passengers 0", offer("H06", #""passengers":0"#), invalidFor: "H06"),
            Payload("job/offer", "passengers 100", offer("H07", #""passengers":100"#), invalidFor: "H07"),
            Payload("job/offer", "lat 91", #"{"job":"H08","pickup":{"lat":91,"lon":7.5}}"#, invalidFor: "H08"),
            Payload("job/offer", "lat of the wrong type", #"{"job":"H09","pickup":{"lat":"north","lon":7.5}}"#, invalidFor: "H09"),
            Payload("job/offer", "no pickup", #"{"job":"H10"}"#, invalidFor: "H10"),
            Payload("job/offer", "note of 600 bytes", offer("H11", #""note":"\#(String(repeating: "n", count: 600))""#), invalidFor: "H11"),
            Payload("job/offer", "a note forging a journal line", offer("H12", #""note":"x\n<3>FORGED journal line""#), invalidFor: "H12"),
            Payload("job/offer", "respond_within_s as a string", offer("H13", #""respond_within_s":"60""#), invalidFor: "H13"),
            Payload("job/offer", "shared as a string", offer("H14", #""shared":"yes""#), invalidFor: "H14"),
            Payload("job/offer", "lon 1e999", #"{"job":"H15","pickup":{"lat":1,"lon":1e999}}"#, invalidFor: "H15"),
            Payload("job/offer", "respond_within_s 0.5", offer("H16", #""respond_within_s":0.5"#), invalidFor: "H16"),
            Payload("job/offer", "job id of 200 bytes", offer(String(repeating: "J", count: 200), #""passengers":1"#)),
            Payload("job/offer", "duplicate keys", #"{"job":"H18","job":"H18b","pickup":{"lat":1,"lon":2}}"#),
            Payload("job/offer", "NaN", #"{"job":"H19","pickup":{"lat":NaN,"lon":2}}"#),
            Payload("job/offer", "nested 200 deep", String(repeating: #"{"a":"#, count: 200) + "1" + String(repeating: "}", count: 200)),
            Payload("job/offer", "invalid UTF-8", [0x7B, 0x22, 0x6A, 0x6F, 0x62, 0x22, 0x3A, 0x22, 0xC3, 0x28, 0xFF, 0x22, 0x7D]),
            Payload("job/offer", "NUL bytes", Array(#"{"job":"H22","#.utf8) + [0, 0, 0] + Array(#""pickup":{}}"#.utf8)),
            Payload("job/offer", "UTF-16", [0xFE, 0xFF] + utf16),
            Payload("job/offer", "10 MB", Array("{\"job\":\"H24\",\"note\":\"".utf8) + [UInt8](repeating: 0x41, count: 10 * 1024 * 1024) + Array("\"}".utf8)),
            Payload("job/offer", "random bytes", randomBytes),
            Payload("job/offer", "an array", "[1,2,3]"),
            Payload("job/offer", "a string", #""job""#),
            Payload("job/offer", "empty", ""),
            Payload("job/offer", "job true", #"{"job":true,"pickup":{"lat":1,"lon":2}}"#),
            Payload("job/offer", "job 1.5", #"{"job":1.5,"pickup":{"lat":1,"lon":2}}"#),
            Payload("job/offer", "job id with a line break", #"{"job":"H31\nx","pickup":{"lat":1,"lon":2}}"#),
            Payload("job/update", "add_pickup passengers Int64.max", #"{"job":"H32","add_pickup":{"lat":1,"lon":2,"passengers":9223372036854775807}}"#, invalidFor: "H32"),
            Payload("job/update", "passengers -1", #"{"job":"H33","passengers":-1}"#, invalidFor: "H33"),
            Payload("job/update", "nothing to update", #"{"job":"H34"}"#, invalidFor: "H34"),
            Payload("job/update", "add_pickup lat 1e999", #"{"job":"H35","add_pickup":{"lat":1e999,"lon":2}}"#, invalidFor: "H35"),
            Payload("job/update", "nested arrays", "{\"job\":\"H36\",\"note\":" + String(repeating: "[", count: 100) + String(repeating: "]", count: 100) + "}"),
            Payload("job/cancel", "reason of 10 kB", #"{"job":"H37","reason":"\#(String(repeating: "r", count: 10_000))"}"#, invalidFor: "H37"),
            Payload("job/cancel", "reason with an escape sequence", #"{"job":"H38","reason":"\u001b[2J"}"#, invalidFor: "H38"),
            Payload("job/cancel", "job an object", #"{"job":{"id":"H39"}}"#),
            Payload("job/cancel", "17 kB", Array(#"{"job":"H40","reason":""#.utf8) + [UInt8](repeating: 0x72, count: 17_000) + Array(#""}"#.utf8)),
            Payload("sos/ack", "2 kB", #"{"note":"\#(String(repeating: "s", count: 2_000))"}"#),
            Payload("sos/ack", "id of 300 bytes", #"{"id":"\#(String(repeating: "i", count: 300))"}"#),
            Payload("sos/ack", "id of the wrong type", #"{"id":5}"#),
            Payload("sos/ack", "null", "null"),
            Payload("sos/ack", "random bytes", Array(randomBytes.prefix(500))),
        ]
    }

    @Test func everyHostilePayloadIsRefusedAndTheUnitKeepsWorking() async throws {
        // A budget the payloads cannot exceed at any pace: each must reach the parser.
        let rig = try await JobFlowTests.Rig(mqttTOML: "inbound_per_s = 10000")
        defer { rig.stop() }
        try await rig.goOnDuty()
        let payloads = Self.payloads()
        #expect(payloads.count >= 40)
        #expect(Set(payloads.map(\.topic)) == ["job/offer", "job/update", "job/cancel", "sos/ack"])
        for (index, payload) in payloads.enumerated() {
            try rig.recorder.publish(rig.unit.topicBase + payload.topic, bytes: payload.bytes)
            if let job = payload.invalidFor {
                let reply = try await rig.waitForReply(job, "invalid")
                #expect(reply["re"] as? String == payload.topic, "\(payload.label)")
                #expect((reply["reason"] as? String)?.isEmpty == false, "\(payload.label)")
            }
            // A sentinel after it: answered only once the unit has handled everything before it.
            let sentinel = "S\(index)"
            try rig.publish("job/offer", #"{"job":"\#(sentinel)"}"#)
            try await rig.waitForReply(sentinel, "invalid")
            let status = try rig.unit.status()
            #expect(status.state == "available", "\(payload.label)")
        }
        #expect(try rig.unit.status().refused?["inbound_over_rate"] == 0)
        // Only the payloads with a readable job id were answered.
        let answered = Set(rig.replies().compactMap { $0["job"] as? String }.filter { !$0.hasPrefix("S") })
        #expect(answered == Set(payloads.compactMap(\.invalidFor)))
        // Nothing was stored for them but the answers, and the log carries escaped excerpts only.
        #expect(!rig.unit.log.split(separator: "\n").contains { $0.hasPrefix("<3>FORGED") })
        #expect(!rig.unit.log.contains("\u{1B}[2J"))
        #expect(rig.unit.log.utf8.count < 2_000_000, "the 10 MB payload was not logged")
        let wal = (try? FileManager.default.attributesOfItem(atPath: rig.unit.storePath + "-wal")[.size] as? Int) ?? 0
        #expect(wal < 8 * 1024 * 1024, "WAL \(wal) bytes")

        // The unit still does its job: a good offer is shown and answered.
        try rig.offer("GOOD")
        try await rig.unit.waitForStatus("offered") { $0.state == "offered" && $0.job?.id == "GOOD" }
        #expect(try rig.press("accept").hasPrefix("Job GOOD accepted, sent"))
        try await rig.waitForReply("GOOD", "accept")
    }

    /// A flood of copies of one offer: dropped over the rate limit and counted; the copies that get
    /// through do not pile up answers.
    @Test func aFloodIsRateLimitedAndAnsweredOnce() async throws {
        let rig = try await JobFlowTests.Rig()
        defer { rig.stop() }
        try await rig.goOnDuty()
        try rig.offer("FLOOD")
        try await rig.unit.waitForStatus("offered") { $0.state == "offered" }
        _ = try rig.press("reject")
        try await rig.waitForReply("FLOOD", "reject")
        let copy = Array(#"{"job":"FLOOD","pickup":{"lat":46.5,"lon":7.5}}"#.utf8)
        for _ in 0..<2_000 { try rig.recorder.publish(rig.unit.topicBase + "job/offer", bytes: copy) }
        let status = try await rig.unit.waitForStatus("flood counted", timeoutS: 30) { ($0.refused?["inbound_over_rate"] ?? 0) > 1_000 }
        #expect(status.state == "available")
        try await Task.sleep(for: .seconds(1))
        #expect(rig.replies(job: "FLOOD").count == 2, "the first copy is answered again, the rest within 30 s are not")
        try rig.offer("AFTER")
        try await rig.unit.waitForStatus("a new offer still gets through", timeoutS: 30) { $0.state == "offered" && $0.job?.id == "AFTER" }
    }
}
