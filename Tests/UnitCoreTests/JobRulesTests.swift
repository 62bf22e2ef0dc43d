import Foundation
import TaxiProtocol
import Testing
import UnitCore

/// One test (at least) per rule of the job machine, numbered as the rules were written.
@Suite struct JobRulesTests {
    let t = Scenario.t0

    func available(_ settings: UnitSettings = UnitSettings()) -> UnitStateMachine {
        Scenario.machine(in: .available, settings: settings)
    }

    @Test func rule1_anOfferOutsideAvailableIsBusyAndChangesNothing() {
        for state in StateName.allCases where state != .available {
            var machine = Scenario.machine(in: state)
            let before = machine.state
            let actions = machine.handle(.inbound(.offer(Scenario.offer("J2")), receivedAt: t))
            #expect(Scenario.replies(actions) == [JobReply(job: "J2", reply: .busy, reason: state.rawValue, t: t)], "\(state)")
            #expect(machine.state == before)
            #expect(Scenario.told(actions).isEmpty, "the driver is not bothered")
        }
    }

    @Test func rule2_theOfferWindowRunsFromReceiptAndSilenceIsTimeout() {
        var machine = available(UnitSettings(offerTimeout: .seconds(45)))
        let actions = machine.handle(.inbound(.offer(Scenario.offer("J2")), receivedAt: t))
        #expect(actions.timers.contains(.start(.offerDeadline(job: "J2"), fireAt: t + .milliseconds(45_000))), "default window from config")
        #expect(Scenario.told(actions) == ["Job J2: Bahnhofplatz 1, 1 pax. Accept within 45 s?"])
        guard case .offered(let pending) = machine.state else { Issue.record("not offered"); return }
        #expect(pending.deadline == t + .milliseconds(45_000))

        let timeout = machine.handle(.timerFired(.offerDeadline(job: "J2"), at: t + .milliseconds(45_000)))
        #expect(Scenario.replies(timeout) == [JobReply(job: "J2", reply: .timeout, t: t + .milliseconds(45_000))])
        #expect(machine.state == .available)

        var own = available()
        let ownWindow = own.handle(.inbound(.offer(Scenario.offer("J3", window: 2)), receivedAt: t))
        #expect(ownWindow.timers.contains(.start(.offerDeadline(job: "J3"), fireAt: t + .milliseconds(2_000))), "the offer's own window wins")
    }

    @Test func rule3_anOfferOlderThanItsWindowIsExpiredAndNeverShown() {
        var machine = available()
        let actions = machine.handle(.inbound(.offer(Scenario.offer("J2", window: 30, sentAt: t - .milliseconds(30_000))), receivedAt: t))
        #expect(Scenario.replies(actions) == [JobReply(job: "J2", reply: .expired, reason: "answer window over on arrival", t: t)])
        #expect(Scenario.told(actions).isEmpty)
        #expect(machine.state == .available)
        // One millisecond younger is still shown.
        let fresh = machine.handle(.inbound(.offer(Scenario.offer("J3", window: 30, sentAt: t - .milliseconds(29_999))), receivedAt: t))
        #expect(Scenario.replies(fresh).isEmpty)
        #expect(machine.state.name == .offered)
    }

    @Test func rule4_aRedeliveredOfferChangesNothingAndGetsTheSameAnswer() {
        var machine = available()
        _ = machine.handle(.inbound(.offer(Scenario.offer("J2")), receivedAt: t))
        let whilePending = machine.handle(.inbound(.offer(Scenario.offer("J2")), receivedAt: t + .milliseconds(1000)))
        #expect(Scenario.replies(whilePending).isEmpty)
        #expect(!whilePending.timers.contains { if case .start = $0 { true } else { false } }, "the deadline is not extended")

        let reject = machine.handle(.driver(.reject(reason: "too far"), at: t + .milliseconds(2000)))
        let first = Scenario.replies(reject)
        let again = machine.handle(.inbound(.offer(Scenario.offer("J2")), receivedAt: t + .milliseconds(9000)))
        #expect(Scenario.replies(again) == first)
        #expect(machine.state == .available, "a redelivery is not a new offer")

        // A busy answer is repeated too, even once the unit is free.
        var busy = Scenario.machine(in: .paused)
        let busyAnswer = Scenario.replies(busy.handle(.inbound(.offer(Scenario.offer("J5")), receivedAt: t)))
        _ = busy.handle(.driver(.resume, at: t + .milliseconds(1)))
        #expect(Scenario.replies(busy.handle(.inbound(.offer(Scenario.offer("J5")), receivedAt: t + .milliseconds(2)))) == busyAnswer)
        #expect(busy.state == .available)
    }

    @Test func rule4_copiesOfARedeliveredOfferDoNotPileUpAnswers() {
        var machine = available()
        _ = machine.handle(.inbound(.offer(Scenario.offer("J2")), receivedAt: t))
        let first = Scenario.replies(machine.handle(.driver(.reject(reason: "too far"), at: t + .milliseconds(2000))))
        // The first copy is answered at once; further copies within 30 s of that re-answer are not
        // (it is stored and on its way); after that, one copy is answered again.
        let again = machine.handle(.inbound(.offer(Scenario.offer("J2")), receivedAt: t + .milliseconds(3000)))
        #expect(Scenario.replies(again) == first)
        #expect((again.snapshot != nil), "when it was last answered survives a restart")
        for copy in 1...100 {
            #expect(Scenario.replies(machine.handle(.inbound(.offer(Scenario.offer("J2")), receivedAt: t + .milliseconds(3000 + copy * 100)))).isEmpty)
        }
        #expect(Scenario.replies(machine.handle(.inbound(.offer(Scenario.offer("J2")), receivedAt: t + .milliseconds(33_000)))) == first)
        #expect(machine.state == .available)
    }

    @Test func rule4_aWithdrawnOfferRedeliveredIsIgnored() {
        var machine = available()
        _ = machine.handle(.inbound(.offer(Scenario.offer("J2")), receivedAt: t))
        _ = machine.handle(.inbound(.cancel(JobCancel(job: "J2")), receivedAt: t + .milliseconds(1)))
        let again = machine.handle(.inbound(.offer(Scenario.offer("J2")), receivedAt: t + .milliseconds(2)))
        #expect(Scenario.replies(again).isEmpty)
        #expect(machine.state == .available)
    }

    @Test func rule4_theMemoryIsBounded() {
        var machine = available(UnitSettings(answeredOfferMemory: 3))
        _ = machine.handle(.driver(.pause(.break), at: t))
        for index in 0..<10 { _ = machine.handle(.inbound(.offer(Scenario.offer("B\(index)")), receivedAt: t)) }
        #expect(machine.snapshot.answeredOffers.map(\.job) == ["B7", "B8", "B9"])
    }

    @Test func rule5_acceptGoesEnRouteAndRejectBackToAvailable() {
        var accepting = Scenario.machine(in: .offered)
        let accept = accepting.handle(.driver(.accept, at: t))
        #expect(Scenario.replies(accept) == [JobReply(job: "J1", reply: .accept, t: t)])
        #expect(accept.timers.contains(.cancel(.offerDeadline(job: "J1"))))
        #expect(accepting.state.name == .enRoute)
        #expect(Scenario.told(accept) == ["Job J1 accepted, sent. Go to Bahnhofplatz 1"])

        var rejecting = Scenario.machine(in: .offered)
        let reject = rejecting.handle(.driver(.reject(reason: "engine trouble"), at: t))
        #expect(Scenario.replies(reject) == [JobReply(job: "J1", reply: .reject, reason: "engine trouble", t: t)])
        #expect(rejecting.state == .available)
    }

    @Test func rule6_aCancelEndsTheJobAndTellsTheDriver() {
        for state in [StateName.offered, .enRoute, .atPickup] {
            var machine = Scenario.machine(in: state)
            let actions = machine.handle(.inbound(.cancel(JobCancel(job: "J1", reason: "passenger left")), receivedAt: t))
            #expect(machine.state == .available)
            #expect(Scenario.told(actions) == ["Job J1 cancelled by dispatch: passenger left"])
            #expect(actions.messages.contains(.event(Transition(t: t, from: state, to: .available, job: "J1", reason: "cancelled"))))
            #expect(Scenario.replies(actions).isEmpty)
        }
        var onBoard = Scenario.machine(in: .onBoard)
        #expect(onBoard.handle(.inbound(.cancel(JobCancel(job: "J1")), receivedAt: t)) == .note("cancel for job J1 ignored: passenger on board"))
        var other = Scenario.machine(in: .enRoute)
        #expect(other.handle(.inbound(.cancel(JobCancel(job: "J8")), receivedAt: t)) == .note("cancel for unknown job J8 ignored"))
    }

    @Test func rule7_arrivalByButtonOrByAFixWithinTheRadius() {
        var machine = Scenario.machine(in: .enRoute, settings: UnitSettings(arrivalRadiusM: 20))
        // 0.0002° of latitude is about 22 m: outside.
        let outside = machine.handle(.gps(Scenario.sample(t.seconds, lat: 46.5002)))
        #expect(outside == Step(fixes: outside.fixes) && outside.fixes.count == 1, "only the fix is recorded")
        #expect(machine.state.name == .enRoute)
        // 0.00015° is about 17 m: inside.
        let inside = machine.handle(.gps(Scenario.sample(t.seconds + 1, lat: 46.50015)))
        #expect(machine.state.name == .atPickup)
        #expect(Scenario.told(inside) == ["Arrived at Bahnhofplatz 1. Passenger on board?"])
        #expect(inside.messages.contains(.event(Transition(t: t + .milliseconds(1000), from: .enRoute, to: .atPickup, job: "J1", reason: "arrived_by_gps"))))

        var pressed = Scenario.machine(in: .enRoute)
        _ = pressed.handle(.driver(.arrived, at: t))
        #expect(pressed.state == .atPickup(Job(Scenario.offer("J1")), arrivedAt: t))
    }

    @Test func rule8_passengersOnBoardAndSeatsLeft() {
        var machine = Scenario.machine(in: .atPickup, settings: UnitSettings(seats: 4))
        #expect(machine.status.seatsLeft == 4)
        #expect(Scenario.refused(machine.handle(.driver(.passengersOnBoard(5), at: t))) == [.notEnoughSeats(seats: 4)])
        let actions = machine.handle(.driver(.passengersOnBoard(3), at: t))
        #expect(machine.status.seatsLeft == 1)
        #expect(actions.status == UnitStatus(state: .onBoard, job: "J1", seatsLeft: 1))

        var byDefault = Scenario.machine(in: .atPickup)
        _ = byDefault.handle(.driver(.passengersOnBoard(nil), at: t))
        #expect(byDefault.state.job?.passengers == 1, "the job's passenger count, 1 unless the offer said otherwise")
    }

    @Test func rule9_noShowOnlyAfterTheWaitAndNearThePickup() {
        var machine = available(UnitSettings(noShowWait: .seconds(300), noShowRadiusM: 100))
        _ = machine.handle(.inbound(.offer(Scenario.offer("J2")), receivedAt: t))
        _ = machine.handle(.driver(.accept, at: t))
        _ = machine.handle(.driver(.arrived, at: t))
        // 0.0008° ≈ 89 m from the pickup.
        _ = machine.handle(.gps(Scenario.sample(t.seconds + 10, lat: 46.5008)))
        #expect(Scenario.refused(machine.handle(.driver(.noShow, at: t + .milliseconds(299_000)))) == [.noShowTooEarly(secondsLeft: 1)])
        _ = machine.handle(.gps(Scenario.sample(t.seconds + 20, lat: 46.5010)))
        #expect(Scenario.refused(machine.handle(.driver(.noShow, at: t + .milliseconds(300_000)))) == [.tooFarForNoShow])
        _ = machine.handle(.gps(Scenario.sample(t.seconds + 30, lat: 46.5008)))
        let actions = machine.handle(.driver(.noShow, at: t + .milliseconds(300_000)))
        #expect(machine.state == .available)
        #expect(actions.messages.contains(.event(Transition(t: t + .milliseconds(300_000), from: .atPickup, to: .available, job: "J2", reason: "no_show"))))
    }

    @Test func rule9_noShowNeedsAPosition() {
        var machine = UnitStateMachine(settings: UnitSettings(noShowWait: .seconds(0)))
        _ = machine.handle(.driver(.duty, at: t))
        _ = machine.handle(.inbound(.offer(Scenario.offer("J2")), receivedAt: t))
        _ = machine.handle(.driver(.accept, at: t))
        _ = machine.handle(.driver(.arrived, at: t))
        #expect(Scenario.refused(machine.handle(.driver(.noShow, at: t))) == [.noPosition])
    }

    @Test func rule10_clearCompletesTheRideAndRecordsIt() {
        var machine = Scenario.machine(in: .atPickup)
        _ = machine.handle(.gps(Scenario.sample(t.seconds)))
        _ = machine.handle(.driver(.passengersOnBoard(2), at: t))
        _ = machine.handle(.gps(Scenario.sample(t.seconds + 600, lat: 46.52, lon: 7.51)))
        let actions = machine.handle(.driver(.clear, at: t + .milliseconds(600_000)))
        #expect(machine.state == .available)
        #expect(actions.ride == (RideSummary(
            job: "J1", passengers: 2, pickupTime: t, dropTime: t + .milliseconds(600_000), pickupFix: Fix(time: t, latitude: 46.5, longitude: 7.5),
            dropFix: Fix(time: t + .milliseconds(600_000), latitude: 46.52, longitude: 7.51), waiting: .seconds(600),
            pickupAddress: Scenario.pickup.address)))
        // The setup arrived 600 s before the passengers got in; the dispatcher gets the same summary.
        #expect(actions.messages.last == actions.ride.map(OutgoingMessage.ride))
        #expect(actions.messages.contains(.event(Transition(t: t + .milliseconds(600_000), from: .onBoard, to: .available, job: "J1", reason: "completed"))))
    }

    @Test func rule10_pathLengthFollowsTheFixes() {
        let a = Coordinate(lat: 46.5, lon: 7.5), b = Coordinate(lat: 46.51, lon: 7.5), c = Coordinate(lat: 46.51, lon: 7.51)
        #expect(abs(a.distance(to: b) - 1112) < 2, "0.01° of latitude ≈ 1112 m")
        #expect(abs(Coordinate.pathLength([a, b, c]) - (a.distance(to: b) + b.distance(to: c))) < 1e-6)
        #expect(Coordinate.pathLength([a]) == 0)
    }

    @Test func rule11_dutyOffOnlyOutsideAJobAndRejectsAnOfferFirst() {
        var offered = Scenario.machine(in: .offered)
        let actions = offered.handle(.driver(.duty, at: t))
        #expect(Scenario.replies(actions) == [JobReply(job: "J1", reply: .reject, reason: "off_duty", t: t)])
        #expect(offered.state == .offDuty)
        for state in [StateName.enRoute, .atPickup, .onBoard] {
            var machine = Scenario.machine(in: state)
            #expect(machine.handle(.driver(.duty, at: t)) == Step(driver: [.refused(.finishJobFirst)]))
        }
    }

    @Test func rule12_pauseWithAReasonAndResume() {
        var machine = available()
        let pause = machine.handle(.driver(.pause(.refuel), at: t))
        #expect(machine.state == .paused(.refuel))
        #expect(pause.status == UnitStatus(state: .paused, pauseReason: .refuel, seatsLeft: 4))
        #expect(pause.messages.contains(.event(Transition(t: t, from: .available, to: .paused, reason: "refuel"))))
        _ = machine.handle(.driver(.resume, at: t + .milliseconds(1)))
        #expect(machine.state == .available)
        var offDuty = Scenario.machine(in: .offDuty)
        #expect(offDuty.handle(.driver(.pause(.break), at: t)) == Step(driver: [.refused(.pauseOnlyWhenAvailable)]))
    }

    @Test func rule13_aReservationKeepsItsMeetingTime() {
        var machine = available()
        let meeting = t + .milliseconds(3_600_000)
        let actions = machine.handle(.inbound(.offer(JobOffer(job: "R1", pickup: Scenario.pickup, meetingTime: meeting.milliseconds)), receivedAt: t))
        #expect(machine.state.job?.meetingTime == meeting)
        #expect(Scenario.told(actions) == ["Job R1: Bahnhofplatz 1, 1 pax, reservation. Accept within 60 s?"])
        _ = machine.handle(.driver(.accept, at: t))
        #expect(machine.state.job?.meetingTime == meeting)
    }

    @Test func rule14_updatesKeepSeatsRight() {
        var machine = Scenario.machine(in: .onBoard, settings: UnitSettings(seats: 4))
        #expect(machine.status.seatsLeft == 2)
        let added = machine.handle(.inbound(.update(JobUpdate(
            job: "J1", addPickup: .init(lat: 46.51, lon: 7.5, address: "Markt 3", passengers: 1), update: "R-77-joined")), receivedAt: t))
        #expect(Scenario.told(added) == ["Job J1 changed: extra pickup at Markt 3, 3 pax"])
        #expect(added.heldJobChanged == nil, "the job in hand is on the screen")
        #expect(Scenario.replies(added) == [JobReply(job: "J1", re: .jobUpdate, reply: .shown, t: t, update: "R-77-joined")],
                "the dispatcher learns the driver was shown it, in the step that holds the change")
        #expect(machine.status.seatsLeft == 1)
        #expect(machine.state.job?.addedPickups == [Place(lat: 46.51, lon: 7.5, address: "Markt 3")])
        #expect(machine.state.job?.shared == true)

        let tooMany = machine.handle(.inbound(.update(JobUpdate(
            job: "J1", addPickup: .init(lat: 46.51, lon: 7.5, passengers: 2), update: "R-78-joined")), receivedAt: t))
        #expect(Scenario.replies(tooMany) == [
            JobReply(job: "J1", re: .jobUpdate, reply: .invalid, reason: "5 passengers exceed 4 seats", t: t, update: "R-78-joined")
        ])
        #expect(machine.status.seatsLeft == 1, "a refused update changes nothing")

        let withoutID = machine.handle(.inbound(.update(JobUpdate(job: "J1", passengers: 4)), receivedAt: t))
        #expect(machine.status.seatsLeft == 0)
        #expect(Scenario.replies(withoutID) == [JobReply(job: "J1", re: .jobUpdate, reply: .shown, t: t)])
    }

    @Test func rule16_sosFromAnyStateWithTheLastFixAndFastReporting() {
        for state in StateName.allCases {
            var machine = Scenario.machine(in: state, settings: UnitSettings(reportingIntervalS: 30))
            let lastFix = machine.lastFix
            let actions = machine.handle(.driver(.sos, at: t))
            #expect(actions.messages.contains(.sos(SOSAlarm(t: t, state: state, job: machine.state.job?.id, fix: lastFix.map { PositionPoint($0) }))), "\(state)")
            #expect(Scenario.told(actions).isEmpty, "nothing obvious on the terminal")
            #expect(machine.state.name == state)
            #expect(machine.snapshot.panic == Panic(raisedAt: t))

            // Every second while the alarm is pending…
            let base = t.seconds
            var reported = 0
            for second in 1...5 {
                if machine.handle(.gps(Scenario.sample(base + Double(second), lat: 46.6))).fixes.first?.report == true { reported += 1 }
            }
            #expect(reported == 5)
            // …and back to the configured interval once acknowledged.
            #expect(machine.handle(.inbound(.sosAck(SOSAck()), receivedAt: t + .milliseconds(6000))).driver.contains(.told("ok")))
            #expect(machine.snapshot.panic == nil)
            reported = 0
            for second in 6...20 {
                if machine.handle(.gps(Scenario.sample(base + Double(second), lat: 46.6))).fixes.first?.report == true { reported += 1 }
            }
            #expect(reported == 0, "30 s interval after the last report at + .milliseconds(5) s")
        }
    }

    @Test func rule17_senselessInputsChangeNothingAndSayWhy() {
        var machine = available()
        let before = machine.snapshot
        #expect(machine.handle(.driver(.accept, at: t)) == Step(driver: [.refused(.noOffer)]))
        #expect(machine.handle(.driver(.clear, at: t)) == Step(driver: [.refused(.noPassenger)]))
        #expect(machine.handle(.driver(.arrived, at: t)) == Step(driver: [.refused(.notOnTheWay)]))
        #expect(machine.handle(.driver(.resume, at: t)) == Step(driver: [.refused(.notPaused)]))
        #expect(machine.snapshot == before)
    }

    @Test func aRestartKeepsTheOfferDeadline() throws {
        var machine = available()
        _ = machine.handle(.inbound(.offer(Scenario.offer("J2", window: 60)), receivedAt: t))
        // The snapshot goes through JSON, as it does in SQLite.
        let stored = try JSONEncoder().encode(machine.snapshot)
        let snapshot = try JSONDecoder().decode(UnitSnapshot.self, from: stored)
        #expect(snapshot == machine.snapshot)

        var early = UnitStateMachine(restoring: snapshot)
        #expect(early.handle(.resumed(at: t + .milliseconds(10_000))) == Step(timers: [.start(.offerDeadline(job: "J2"), fireAt: t + .milliseconds(60_000))]))
        let accept = early.handle(.driver(.accept, at: t + .milliseconds(20_000)))
        #expect(Scenario.replies(accept).map(\.reply) == [.accept])

        var late = UnitStateMachine(restoring: snapshot)
        let resumed = late.handle(.resumed(at: t + .milliseconds(61_000)))
        #expect(Scenario.replies(resumed) == [JobReply(job: "J2", reply: .timeout, t: t + .milliseconds(61_000))])
        #expect(late.state == .available)
    }

    @Test func theSkeletonsSnapshotStillLoads() throws {
        let decode = { (json: String) in try JSONDecoder().decode(UnitSnapshot.self, from: Data(json.utf8)) }
        #expect(try decode(#"{"state":"available"}"#) == UnitSnapshot(state: .available))
        #expect(try decode(#"{"state":"off_duty"}"#) == UnitSnapshot(state: .offDuty))
        #expect(throws: DecodingError.self) { try decode(#"{"state":"flying"}"#) }
    }

    @Test func anAlarmAfterARestartUsesTheStoredFix() {
        let stored = Fix(time: t - .milliseconds(5000), latitude: 46.6, longitude: 7.6)
        var machine = UnitStateMachine(restoring: UnitSnapshot(state: .available), lastFix: stored)
        let actions = machine.handle(.driver(.sos, at: t))
        #expect(actions.messages.contains(.sos(SOSAlarm(t: t, state: .available, job: nil, fix: PositionPoint(stored)))))
    }

    @Test func aMalformedMessageWithAJobIdIsAnsweredInvalid() {
        var machine = Scenario.machine(in: .enRoute)
        let before = machine.snapshot
        let actions = machine.handle(.malformed(InboundProblem(topic: .jobOffer, job: "J9", reason: "pickup is missing"), at: t))
        #expect(actions == Step(
            messages: [.reply(JobReply(job: "J9", re: .jobOffer, reply: .invalid, reason: "pickup is missing", t: t))],
            notes: ["malformed job/offer: pickup is missing"]))
        #expect(machine.snapshot == before)
    }
}
