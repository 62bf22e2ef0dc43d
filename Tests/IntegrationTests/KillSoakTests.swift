import ControlSocket
import Foundation
import MQTTLink
import TestHarness
import Testing

/// SIGKILL at random moments around the driver's answers, 200 times: every answer the driver was
/// told was sent reaches the broker, and no job is ever answered two ways.
@Suite(.serialized) struct KillSoakTests {
    static let kills = 200

    /// Brings the restarted unit back to `available`, whatever state the kill left it in.
    func makeAvailable(_ rig: JobFlowTests.Rig) async throws {
        for _ in 0..<6 {
            let status = try rig.unit.status()
            let input: String? = switch status.state {
            case "available": nil
            case "off_duty": "duty"
            case "offered": "reject"
            case "en_route": "arrived"
            case "at_pickup": "pob"
            case "on_board": "clear"
            default: "resume"
            }
            guard let input else { return }
            _ = try rig.unit.request(ControlRequest(cmd: .press, input: input))
        }
        try await rig.unit.waitForStatus("available") { $0.state == "available" }
    }

    @Test func everyAnswerTheDriverWasToldWasSentArrivesAndNoJobGetsTwo() async throws {
        let rig = try await JobFlowTests.Rig()
        defer { rig.stop() }
        var promised: [String: String] = [:]
        var generator = SystemRandomNumberGenerator()
        // A kill proves something about a promise only when it came after the driver was told "sent",
        // which a slow machine's answer reaches later in the random window: the soak goes on past
        // `kills` rounds until a quarter of that many promises were put to the test.
        var round = 0
        while round < Self.kills || promised.count < Self.kills / 4 {
            try #require(round < 4 * Self.kills, "\(promised.count) of \(round) kills came after the driver was told sent")
            defer { round += 1 }
            try await rig.unit.waitForStatus("connected (round \(round))") { $0.broker.connected }
            try await makeAvailable(rig)
            let job = "K\(round)"
            try rig.offer(job)
            try await rig.unit.waitForStatus("offered \(job)") { $0.state == "offered" && $0.job?.id == job }
            let answer = Bool.random(using: &generator) ? "accept" : "reject"
            let unit = rig.unit
            let press = Task.detached { try? unit.request(ControlRequest(cmd: .press, input: answer)) }
            // Before, during or just after the answer is stored and handed to the broker.
            try await Task.sleep(for: .microseconds(Int.random(in: 0...15_000, using: &generator)))
            rig.unit.killHard()
            if let response = await press.value, response.ok, let told = response.message, told.contains("sent") {
                promised[job] = answer
            }
            try await rig.unit.start()
        }
        print("kill soak: \(round) kills, \(promised.count) after the driver was told sent")
        try await rig.unit.waitForStatus("everything delivered", timeoutS: 60) { $0.broker.connected && $0.outbox.depth == 0 }

        var answers: [String: Set<String>] = [:]
        for reply in rig.replies() where reply["re"] as? String == "job/offer" {
            if let job = reply["job"] as? String, let code = reply["reply"] as? String { answers[job, default: []].insert(code) }
        }
        for (job, answer) in promised {
            #expect(answers[job]?.contains(answer) == true, "\(job): told \(answer) was sent; the broker got \(answers[job] ?? [])")
        }
        for (job, codes) in answers {
            #expect(codes.count == 1, "\(job) answered \(codes)")
        }
    }
}
