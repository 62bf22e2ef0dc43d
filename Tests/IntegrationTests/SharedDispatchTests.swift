import ControlSocket
import Foundation
import MQTTLink
import TestHarness
import Testing

/// Two dispatchsim instances on one MQTT 5 shared subscription (`--share-group`) serve one fleet:
/// each booking is handled by one of them, and no offer is made or answered twice.
@Suite(.serialized) struct SharedDispatchTests {
    /// Where `Corpus.steadyLog`'s receiver stands, and a pickup in the same zone.
    static let centre = (lat: 41.5750, lon: -93.7506)
    static let pickup = (lat: 41.5778, lon: -93.7471)

    func press(_ unit: UnitUnderTest, _ input: String) throws {
        let response = try unit.request(ControlRequest(cmd: .press, input: input))
        guard response.ok else { throw HarnessError("\(unit.unitID) press \(input): \(response.error ?? "refused")") }
    }

    @Test func twoInstancesOnASharedSubscriptionHandleEachBookingOnce() async throws {
        let scratch = try ScratchDirectory("taxiunitd-shared")
        let broker = try MosquittoBroker(in: scratch)
        let gps = try FakeGPS(log: Corpus.log(Corpus.steadyLog), in: scratch, cycleS: 0.1)
        let units = try ["T1", "T2"].map { try UnitUnderTest(unitID: $0, mqttPort: broker.port, gpsdPort: gps.port, in: scratch) }
        let recorder = try await MQTTRecorder(port: broker.port, subscribe: ["taxi/test/#"], clientID: "shared-recorder", persistentSession: true)
        let zones = [("Z", DispatchSimUnderTest.square(around: Self.centre.lat, Self.centre.lon))]
        var instances: [DispatchSimUnderTest] = []
        // Each in its own directory: its own log and summary.
        let directories = try ["a", "b"].map { try ScratchDirectory("taxiunitd-shared-\($0)") }
        for (name, directory) in zip(["a", "b"], directories) {
            instances.append(try await DispatchSimUnderTest(
                mqttPort: broker.port, zones: zones, in: directory,
                scenarioTOML: "[dispatch]\nrespond_within_s = 30\n", arguments: ["--share-group", "dispatch", "--client-id", "dispatchsim-\(name)"]))
        }
        for (index, unit) in units.enumerated() {
            try await unit.start()
            try await unit.waitForStatus("\(unit.unitID) has a fix") { $0.gps.lastFixTime != nil && $0.broker.connected }
            try press(unit, "duty")
            // Every instance reads every status: both know the queue.
            for instance in instances {
                try await instance.waitForLog("\(unit.unitID) queued", "\(unit.unitID) queued in Z at position \(index + 1)")
            }
        }

        for (job, unit) in [("R1", units[0]), ("R2", units[1])] {
            try instances[0].book(job, lat: Self.pickup.lat, lon: Self.pickup.lon, via: recorder)
            try await recorder.waitFor("\(job) offered to \(unit.unitID)") { messages in
                messages.contains { $0.topic == unit.topicBase + "job/offer" && $0.json?["job"] as? String == job }
            }
            try await unit.waitForStatus("\(unit.unitID) shows \(job)") { $0.state == "offered" }
            try press(unit, "accept")
            try await waitUntil("\(job) accepted at one instance", timeoutS: 20) {
                instances.contains { $0.lines.contains { $0.contains("\(job) accept by \(unit.unitID)") } }
            }
        }
        try await Task.sleep(for: .seconds(1))

        for job in ["R1", "R2"] {
            let offeredBy = instances.filter { $0.lines.contains { $0.contains("\(job) offered to") } }
            #expect(offeredBy.count == 1, "\(job) offered by \(offeredBy.count) instances")
            let acceptedBy = instances.filter { $0.lines.contains { $0.contains("\(job) accept by") } }
            #expect(acceptedBy.count == 1 && acceptedBy.first === offeredBy.first, "the instance that offered \(job) handles its reply")
            let offers = recorder.messages.filter { $0.topic.hasSuffix("/job/offer") && $0.json?["job"] as? String == job }
            #expect(offers.count == 1, "\(job): \(offers.count) offers")
        }
        // Round robin: each instance took one booking; nobody withdrew an offer it did not make.
        #expect(instances.allSatisfy { instance in instance.lines.contains { $0.contains("offered to") } })
        #expect(!instances.contains { $0.log.contains("late accept") })
        #expect(recorder.messages.filter { $0.topic.hasSuffix("/job/cancel") }.isEmpty)
        #expect(try ContractCheck.problems(in: recorder.messages) == [])
        for unit in units { unit.stop() }
        for instance in instances { _ = try instance.stop() }
        withExtendedLifetime(directories) {}
    }
}
