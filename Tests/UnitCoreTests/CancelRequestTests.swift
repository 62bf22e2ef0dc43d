import Foundation
import TaxiProtocol
import Testing
import UnitCore

/// `drop`: the driver asks the dispatcher to drop the job; the job stands until the answer.
@Suite struct CancelRequestTests {
    let t = Scenario.t0

    @Test(arguments: [StateName.enRoute, .atPickup])
    func theRequestIsSentStoredAndTheJobStands(_ state: StateName) {
        var machine = Scenario.machine(in: state)
        let before = machine.state
        let step = machine.handle(.driver(.cancelRequest(.passengerUnreachable), at: t))
        let request = CancelRequest(job: "J1", reason: .passengerUnreachable, at: t)
        #expect(step.messages == [.cancelRequest(request, state: state)])
        #expect(step.durability == .promised, "the driver is told it is sent")
        #expect(step.snapshot?.cancelRequest == request)
        #expect(machine.state == before)
    }

    @Test func aSecondRequestIsRefusedAndChangesNothing() {
        var machine = Scenario.machine(in: .enRoute)
        _ = machine.handle(.driver(.cancelRequest(.vehicleProblem), at: t))
        let snapshot = machine.snapshot
        let again = machine.handle(.driver(.cancelRequest(.other), at: t + .milliseconds(1000)))
        #expect(again == Step(driver: [.refused(.dropAlreadyAsked)]))
        #expect(machine.snapshot == snapshot)
        // Arriving keeps the question open: it is about the same job.
        _ = machine.handle(.driver(.arrived, at: t + .milliseconds(2000)))
        #expect(machine.snapshot.cancelRequest?.reason == .vehicleProblem)
        #expect(machine.handle(.driver(.cancelRequest(.other), at: t + .milliseconds(3000))).refusals == [.dropAlreadyAsked])
    }

    @Test func onBoardOrWithoutAJobTheRequestIsRefused() {
        var onBoard = Scenario.machine(in: .onBoard)
        #expect(onBoard.handle(.driver(.cancelRequest(.other), at: t)) == Step(driver: [.refused(.dropNotOnBoard)]))
        for state in [StateName.offDuty, .available, .paused, .offered] {
            var machine = Scenario.machine(in: state)
            #expect(machine.handle(.driver(.cancelRequest(.other), at: t)) == Step(driver: [.refused(.noJobToDrop)]), "\(state)")
        }
    }

    @Test func theDispatchersCancelConfirmsIt() {
        var machine = Scenario.machine(in: .atPickup)
        _ = machine.handle(.driver(.cancelRequest(.passengerUnreachable), at: t))
        let step = machine.handle(.inbound(.cancel(JobCancel(job: "J1", reason: "passenger_unreachable")), receivedAt: t + .milliseconds(5000)))
        #expect(machine.state == .available)
        #expect(machine.snapshot.cancelRequest == nil)
        #expect(step.messages.first == .event(Transition(t: t + .milliseconds(5000), from: .atPickup, to: .available, job: "J1", reason: "cancelled")))
        let request = CancelRequest(job: "J1", reason: .passengerUnreachable, at: t)
        #expect(step.cancelAnswer?.request == request)
        #expect(step.cancelAnswer?.confirmed == true)
    }

    @Test func aRefusalKeepsTheJobAndEndsTheRequest() {
        var machine = Scenario.machine(in: .enRoute)
        _ = machine.handle(.driver(.cancelRequest(.other), at: t))
        let refusal = JobUpdate(job: "J1", update: "U-1", cancelRefused: true)
        let step = machine.handle(.inbound(.update(refusal), receivedAt: t + .milliseconds(5000)))
        #expect(machine.state.name == .enRoute)
        #expect(machine.state.job?.id == "J1")
        #expect(machine.snapshot.cancelRequest == nil)
        #expect(step.replies == [JobReply(job: "J1", re: .jobUpdate, reply: .shown, t: t + .milliseconds(5000), update: "U-1")])
        #expect(step.cancelAnswer?.confirmed == false)
        // Asked again after the refusal: a new request.
        #expect(machine.handle(.driver(.cancelRequest(.other), at: t + .milliseconds(6000))).messages.count == 1)
    }

    @Test func aRefusalWithoutARequestIsAnsweredInvalidAndChangesNothing() {
        var machine = Scenario.machine(in: .enRoute)
        let snapshot = machine.snapshot
        let step = machine.handle(.inbound(.update(JobUpdate(job: "J1", cancelRefused: true)), receivedAt: t))
        #expect(step.replies == [JobReply(job: "J1", re: .jobUpdate, reply: .invalid, reason: "no cancel request pending for job J1", t: t)])
        #expect(step.snapshot == nil)
        #expect(machine.snapshot == snapshot)
    }

    @Test func boardingEndsTheRequest() {
        var machine = Scenario.machine(in: .atPickup)
        _ = machine.handle(.driver(.cancelRequest(.passengerUnreachable), at: t))
        _ = machine.handle(.driver(.passengersOnBoard(nil), at: t + .milliseconds(1000)))
        #expect(machine.snapshot.cancelRequest == nil)
        // The dispatcher's late confirmation cannot drop a ride under way.
        #expect(machine.handle(.inbound(.cancel(JobCancel(job: "J1")), receivedAt: t + .milliseconds(2000))).messages.isEmpty)
        #expect(machine.state.name == .onBoard)
    }

    @Test func aPendingRequestSurvivesARestart() throws {
        var machine = Scenario.machine(in: .enRoute)
        let step = machine.handle(.driver(.cancelRequest(.vehicleProblem), at: t))
        let stored = try JSONEncoder().encode(try #require(step.snapshot))
        let restored = try JSONDecoder().decode(UnitSnapshot.self, from: stored)
        #expect(restored == machine.snapshot)
        var resumed = UnitStateMachine(restoring: restored)
        _ = resumed.handle(.resumed(at: t + .milliseconds(60_000)))
        #expect(resumed.handle(.driver(.cancelRequest(.other), at: t + .milliseconds(61_000))).refusals == [.dropAlreadyAsked])
        _ = resumed.handle(.inbound(.cancel(JobCancel(job: "J1")), receivedAt: t + .milliseconds(62_000)))
        #expect(resumed.state == .available)
    }
}

/// A `job/update` delivered twice (QoS 1 after a reconnect) is applied once and answered alike.
@Suite struct RedeliveredUpdateTests {
    let t = Scenario.t0
    let added = JobUpdate.AddedPickup(lat: 46.51, lon: 7.5, address: "Markt 3", passengers: 1)

    @Test(arguments: ["R-77-joined", nil] as [String?])
    func anAddedPickupIsAddedOnce(_ id: String?) {
        var machine = Scenario.machine(in: .enRoute)
        let update = JobUpdate(job: "J1", addPickup: added, update: id)
        let first = machine.handle(.inbound(.update(update), receivedAt: t))
        #expect(machine.state.job?.addedPickups.count == 1)
        #expect(machine.state.job?.passengers == 2)
        let again = machine.handle(.inbound(.update(update), receivedAt: t + .milliseconds(1000)))
        #expect(machine.state.job?.addedPickups.count == 1, "not applied twice")
        #expect(machine.state.job?.passengers == 2)
        #expect(again.replies == first.replies, "answered as the first one was")
        #expect(again.driver.isEmpty, "the driver is not told again")
        // A third copy soon after the repeated answer is not answered again.
        #expect(machine.handle(.inbound(.update(update), receivedAt: t + .milliseconds(2000))).replies.isEmpty)
    }

    @Test func anotherUpdateIsStillApplied() {
        var machine = Scenario.machine(in: .enRoute)
        _ = machine.handle(.inbound(.update(JobUpdate(job: "J1", addPickup: added, update: "A")), receivedAt: t))
        _ = machine.handle(.inbound(.update(JobUpdate(job: "J1", addPickup: added, update: "B")), receivedAt: t + .milliseconds(1000)))
        #expect(machine.state.job?.addedPickups.count == 2, "a second pickup with an id of its own is a second pickup")
    }

    @Test func theMemorySurvivesARestartAndEndsWithTheJob() throws {
        var machine = Scenario.machine(in: .enRoute)
        let update = JobUpdate(job: "J1", addPickup: added, update: "A")
        let step = machine.handle(.inbound(.update(update), receivedAt: t))
        let restored = try JSONDecoder().decode(UnitSnapshot.self, from: try JSONEncoder().encode(try #require(step.snapshot)))
        var resumed = UnitStateMachine(restoring: restored)
        let again = resumed.handle(.inbound(.update(update), receivedAt: t + .milliseconds(60_000)))
        #expect(resumed.state.job?.addedPickups.count == 1)
        #expect(again.replies == step.replies)
        _ = resumed.handle(.inbound(.cancel(JobCancel(job: "J1")), receivedAt: t + .milliseconds(61_000)))
        #expect(resumed.snapshot.appliedUpdates.isEmpty)
    }
}
