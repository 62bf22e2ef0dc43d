import ControlSocket
import FleetControl
import Foundation
import MQTTLink
import TestHarness
import Testing

/// One driver on one taxi on the real parts: two daemons on one mosquitto with dispatchsim, the
/// driver list in each unit's file, logins through the control socket as `taxiunitctl press`.
@Suite(.serialized) struct OneDriverFlowTests {
    static let pin = "2468"

    struct Rig {
        let scratch: ScratchDirectory
        let broker: MosquittoBroker
        let units: [UnitUnderTest]
        let dispatcher: DispatchSimUnderTest
        let recorder: MQTTRecorder

        init() async throws {
            let scratch = try ScratchDirectory()
            let broker = try MosquittoBroker(in: scratch)
            let credential = try #require(DriverRoster.hash(pin: OneDriverFlowTests.pin, rounds: 1000))
            let gpsdPort = try Loopback.freePort()
            units = try ["T1", "T2"].map {
                try UnitUnderTest(
                    unitID: $0, mqttPort: broker.port, gpsdPort: gpsdPort, in: scratch, extraTOML: "[driver]\ndrivers = { \"D1\" = \"\(credential.text)\" }\n")
            }
            (self.scratch, self.broker) = (scratch, broker)
            recorder = try await MQTTRecorder(port: broker.port, subscribe: ["taxi/test/#"], clientID: "one-driver-recorder", persistentSession: true)
            dispatcher = try await DispatchSimUnderTest(mqttPort: broker.port, zones: [("Z", DispatchSimUnderTest.square(around: 41.575, -93.75))], in: scratch)
            for unit in units {
                try await unit.start()
                try await unit.waitForStatus("\(unit.unitID) connected") { $0.broker.connected }
            }
        }

        func press(_ unit: Int, _ words: String) throws -> String {
            let response = try units[unit].request(ControlRequest(cmd: .press, input: words))
            return response.message ?? "ERROR " + (response.error ?? "")
        }

        func jsons(_ unit: String, _ suffix: String) -> [[String: Any]] {
            recorder.messages(onTopic: "taxi/test/\(unit)/\(suffix)").compactMap(\.json)
        }

        func events(_ unit: String, type: String) -> [[String: Any]] { jsons(unit, "event").filter { $0["type"] as? String == type } }

        func stop() throws {
            for unit in units { unit.stop() }
            _ = try dispatcher.stop()
            let problems = try ContractCheck.problems(in: recorder.messages)
            #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
            recorder.stop()
        }
    }

    @Test func aLoginOnASecondTaxiLogsTheFirstOutAndItsDriverIsToldWhy() async throws {
        let rig = try await Rig()
        #expect(try rig.press(0, "login D1 \(Self.pin)") == "Logged in: D1")
        try await rig.dispatcher.waitForLog("the dispatcher hears the login on T1", "D1 logged in on T1")
        #expect(try rig.press(1, "login D1 \(Self.pin)") == "Logged in: D1")
        try await rig.dispatcher.waitForLog("the dispatcher logs T1 out", "D1 logged in on T2; logging out T1")

        try await rig.recorder.waitFor("T1 announces the logout") { _ in !rig.events("T1", type: "logout").isEmpty }
        let logout = try #require(rig.events("T1", type: "logout").first)
        #expect(logout["driver"] as? String == "D1" && logout["reason"] as? String == "logged_in_elsewhere")
        #expect(logout["elsewhere"] as? String == "T2" && (logout["logout"] as? String)?.isEmpty == false)
        let login = try #require(rig.events("T1", type: "login").first)
        #expect(logout["login_t"] as? Int == login["login_t"] as? Int)
        try await rig.recorder.waitFor("T1's status names no driver") { _ in
            rig.jsons("T1", "status").last.map { $0["driver"] == nil && $0["online"] as? Bool == true } ?? false
        }
        #expect(rig.jsons("T2", "status").last?["driver"] as? String == "D1")
        #expect(rig.units[0].log.contains("driver logged out: logged in on another unit"), "\(rig.units[0].log)")
        // T1 is free for the driver's next shift; T2 keeps the driver.
        #expect(try rig.press(0, "logout") == "Nobody logged in")
        #expect(rig.events("T2", type: "logout").isEmpty)
        try rig.stop()
    }

    @Test func aLoginMadeWhileTheBrokerWasDownIsReconciledByItsLoginTime() async throws {
        let rig = try await Rig()
        rig.broker.stop()
        for unit in rig.units { try await unit.waitForStatus("\(unit.unitID) offline") { !$0.broker.connected } }
        // Both taxis log the driver in from the signed list while offline, T1 first.
        #expect(try rig.press(0, "login D1 \(Self.pin)") == "Logged in: D1")
        try await Task.sleep(for: .milliseconds(20))
        #expect(try rig.press(1, "login D1 \(Self.pin)") == "Logged in: D1")
        try rig.broker.start()
        try await rig.recorder.waitFor("T1 is logged out when it comes back", timeoutS: 40) { _ in
            !rig.events("T1", type: "logout").isEmpty
        }
        #expect(rig.events("T2", type: "logout").isEmpty, "the later login keeps the driver")
        let logout = try #require(rig.events("T1", type: "logout").first)
        #expect(logout["elsewhere"] as? String == "T2")
        try rig.stop()
    }
}
