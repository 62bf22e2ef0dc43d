import DispatchCore
import Foundation
import TaxiProtocol
import Testing
import UnitCore

/// Unit messages made the way units send them: JSON, decoded with the units' own types.
func decoded<T: Decodable>(_ json: String) -> T {
    try! JSONDecoder().decode(T.self, from: Data(json.utf8))
}

/// Two squares side by side (A west, B east) and a far-away C: A and B border each other, C borders nobody.
let squareA = Zone(id: "A", polygon: [.init(lat: 0, lon: 0), .init(lat: 0, lon: 0.01), .init(lat: 0.01, lon: 0.01), .init(lat: 0.01, lon: 0)])
let squareB = Zone(id: "B", polygon: [.init(lat: 0, lon: 0.01), .init(lat: 0, lon: 0.02), .init(lat: 0.01, lon: 0.02), .init(lat: 0.01, lon: 0.01)])
let squareC = Zone(id: "C", polygon: [.init(lat: 1, lon: 1), .init(lat: 1, lon: 1.01), .init(lat: 1.01, lon: 1.01), .init(lat: 1.01, lon: 1)])
let inA = Coordinate(lat: 0.005, lon: 0.005)
let inB = Coordinate(lat: 0.005, lon: 0.015)
let inC = Coordinate(lat: 1.005, lon: 1.005)

/// Drives a dispatcher with a hand-held clock and unique message ids.
struct Harness {
    var dispatcher = Dispatcher(zones: ZoneMap(zones: [squareA, squareB, squareC]), settings: DispatchSettings(respondWithinS: 30, replyGraceS: 5))
    var now: Int64 = 1_000_000
    var nextID = 0

    mutating func id() -> String {
        nextID += 1
        return "m\(nextID)"
    }

    @discardableResult
    mutating func feed(_ input: DispatchInput) -> [DispatchAction] { dispatcher.handle(input, now: now) }

    @discardableResult
    mutating func status(_ unit: String, _ state: String, zone: String?, conn: Int? = nil, job: String? = nil) -> [DispatchAction] {
        now += 1
        let zoneField = zone.map { #","zone":"\#($0)""# } ?? ""
        let connField = conn.map { #","conn":\#($0)"# } ?? ""
        let jobField = job.map { #","job":"\#($0)""# } ?? ""
        let status: StatusMessage = decoded(
            #"{"online":true,"unit":"\#(unit)","state":"\#(state)","seats_left":4,"t":\#(now)\#(zoneField)\#(connField)\#(jobField)}"#)
        return feed(.report(unit: unit, .status(status)))
    }

    @discardableResult
    mutating func event(_ unit: String, _ from: StateName, _ to: StateName, job: String? = nil, t: Int64? = nil) -> [DispatchAction] {
        feed(.report(unit: unit, .event(id: id(), Transition(t: UnitTime(milliseconds: t ?? now), from: from, to: to, job: job))))
    }

    @discardableResult
    mutating func reply(_ unit: String, _ job: String, _ kind: ReplyCode, t: Int64? = nil) -> [DispatchAction] {
        now += 10
        return feed(.report(unit: unit, .reply(id: id(), JobReply(job: job, reply: kind, t: UnitTime(milliseconds: t ?? now)))))
    }

    /// Taxis queued in zone A in this order.
    mutating func queue(_ units: String...) {
        for unit in units { status(unit, "available", zone: "A") }
    }

    @discardableResult
    mutating func request(_ id: String, at point: Coordinate, meetingTime: Int64? = nil, shares: String? = nil) -> [DispatchAction] {
        now += 1
        return feed(.request(PassengerRequest(id: id, pickup: point, meetingTime: meetingTime, sharesRideOf: shares)))
    }
}

func offers(_ actions: [DispatchAction]) -> [String] {
    actions.compactMap { if case .send(let unit, .offer(let offer)) = $0 { "\(offer.job)→\(unit)" } else { nil } }
}

func cancels(_ actions: [DispatchAction]) -> [String] {
    actions.compactMap { if case .send(let unit, .cancel(let cancel)) = $0 { "\(cancel.job)→\(unit)" } else { nil } }
}

func logs(_ actions: [DispatchAction]) -> String {
    actions.compactMap { if case .log(let line) = $0 { line.description } else { nil } }.joined(separator: "\n")
}

@Suite struct ZoneTests {
    @Test func containmentFollowsThePolygon() {
        #expect(squareA.contains(inA))
        #expect(!squareA.contains(inB))
        let triangle = Zone(id: "T", polygon: [.init(lat: 0, lon: 0), .init(lat: 0, lon: 1), .init(lat: 1, lon: 0)])
        #expect(triangle.contains(.init(lat: 0.2, lon: 0.2)))
        #expect(!triangle.contains(.init(lat: 0.6, lon: 0.6)))
    }

    @Test func neighboursAreZonesThatTouchNearestFirst() {
        let farEast = Zone(id: "D", polygon: squareB.polygon.map { Coordinate(lat: $0.lat, lon: $0.lon + 0.0105) })
        let map = ZoneMap(zones: [squareA, squareB, squareC, farEast])
        #expect(map.neighbours["A"] == ["B"])
        #expect(map.neighbours["B"] == ["A", "D"])
        #expect(map.neighbours["C"] == [])
        #expect(map.zone(containing: inC)?.id == "C")
        #expect(map.zone(containing: Coordinate(lat: 5, lon: 5)) == nil)
    }
}

@Suite struct DispatcherTests {
    @Test func offersGoToTheHeadOfTheQueueInArrivalOrder() {
        var h = Harness()
        h.queue("T1", "T2", "T3")
        #expect(h.dispatcher.queue(of: "A") == ["T1", "T2", "T3"])
        #expect(offers(h.request("R1", at: inA)) == ["R1→T1"])
        #expect(offers(h.request("R2", at: inA)) == ["R2→T2"])
        #expect(h.dispatcher.queue(of: "A") == ["T3"])
    }

    @Test func theOfferCarriesTheRequestAndTheAnswerWindow() throws {
        var h = Harness()
        h.status("T1", "available", zone: "A")
        let actions = h.request("R1", at: inA, meetingTime: h.now + 60_000)
        let offer = try #require(actions.compactMap { if case .send(_, .offer(let o)) = $0 { o } else { nil } }.first)
        #expect(offer.job == "R1")
        #expect(offer.pickup.lat == inA.lat && offer.pickup.lon == inA.lon)
        #expect(offer.respondWithinS == 30.0)
        #expect(offer.t == h.now)
        #expect(offer.meetingTime == h.now + 59_999)
        #expect(actions.contains(.startTimer(.offerDeadline(job: "R1", unit: "T1"), at: h.now + 35_000)))
    }

    @Test func acceptAssignsAndTheTaxiRejoinsAtTheEndWhenAvailableAgain() {
        var h = Harness()
        h.queue("T1", "T2")
        h.request("R1", at: inA)
        let accepted = h.reply("T1", "R1", .accept)
        #expect(accepted.contains(.cancelTimer(.offerDeadline(job: "R1", unit: "T1"))))
        #expect(h.dispatcher.stats.accepted == 1)
        #expect(h.dispatcher.stats.requestToAssignmentMs == [10])
        h.status("T1", "en_route", zone: "A")
        #expect(h.dispatcher.queue(of: "A") == ["T2"])
        let done = h.status("T1", "available", zone: "A")
        #expect(logs(done).contains("T1 finished R1"))
        #expect(h.dispatcher.queue(of: "A") == ["T2", "T1"])
        #expect(h.dispatcher.stats.completed == 1)
    }

    @Test(arguments: [ReplyCode.reject, .timeout, .expired])
    func aRefusalSendsTheTaxiToTheEndAndTheRequestToTheNext(kind: ReplyCode) {
        var h = Harness()
        h.queue("T1", "T2", "T3")
        h.request("R1", at: inA)
        let next = h.reply("T1", "R1", kind)
        #expect(offers(next) == ["R1→T2"])
        #expect(h.dispatcher.queue(of: "A") == ["T3", "T1"])
        #expect(h.dispatcher.stats.offerToReplyMs == [10])
    }

    @Test func busyTakesTheTaxiOutOfTheQueueUntilItIsAvailable() {
        var h = Harness()
        h.queue("T1", "T2")
        h.request("R1", at: inA)
        #expect(offers(h.reply("T1", "R1", .busy)) == ["R1→T2"])
        #expect(h.dispatcher.queue(of: "A") == [])
        #expect(h.dispatcher.stats.busy == 1)
        h.status("T1", "available", zone: "A")
        #expect(h.dispatcher.queue(of: "A") == ["T1"])
    }

    @Test func noReplyAtAllCountsAsATimeout() {
        var h = Harness()
        h.queue("T1", "T2")
        h.request("R1", at: inA)
        h.now += 35_000
        let actions = h.feed(.timerFired(.offerDeadline(job: "R1", unit: "T1")))
        #expect(offers(actions) == ["R1→T2"])
        #expect(h.dispatcher.stats.noReply == 1)
        // The offline taxi's late answer changes nothing.
        #expect(offers(h.reply("T1", "R1", .reject)).isEmpty)
        #expect(h.dispatcher.stats.rejected == 0)
    }

    /// A broker node that dies takes the offer queued on it along: the unit comes back on a new
    /// connection without having shown it, and gets it again at once with a new answer window.
    @Test func anOfferTheUnitReconnectedWithoutShowingIsSentAgainAtOnce() throws {
        var h = Harness()
        h.status("T1", "available", zone: "A", conn: 3)
        h.request("R1", at: inA)
        h.now += 20_000
        let back = h.status("T1", "available", zone: "A", conn: 4)
        #expect(offers(back) == ["R1→T1"])
        let offer = try #require(back.compactMap { if case .send(_, .offer(let o)) = $0 { o } else { nil } }.first)
        #expect(offer.t == h.now && offer.respondWithinS == 30)
        #expect(back.contains(.startTimer(.offerDeadline(job: "R1", unit: "T1"), at: h.now + 35_000)))
        #expect(h.dispatcher.stats.offersResent == 1 && h.dispatcher.stats.offers == 1)
        // Shown this time: a further reconnect changes nothing, and the answer counts from the new offer.
        h.event("T1", .available, .offered, job: "R1")
        #expect(offers(h.status("T1", "offered", zone: "A", conn: 5, job: "R1")).isEmpty)
        h.reply("T1", "R1", .accept)
        #expect(h.dispatcher.stats.offerToReplyMs == [11])
    }

    /// The offer reached the unit, or the unit did not reconnect: nothing is sent again.
    @Test(arguments: ["offered event", "status shows it", "same connection", "unknown connection", "offline"])
    func anOfferThatReachedTheUnitIsNotSentAgain(evidence: String) {
        var h = Harness()
        h.status("T1", "available", zone: "A", conn: evidence == "unknown connection" ? nil : 3)
        h.request("R1", at: inA)
        let again: [DispatchAction]
        switch evidence {
        case "offered event":
            h.event("T1", .available, .offered, job: "R1")
            again = h.status("T1", "available", zone: "A", conn: 4)
        case "status shows it":
            again = h.status("T1", "offered", zone: "A", conn: 4, job: "R1")
        case "same connection":
            again = h.status("T1", "available", zone: "A", conn: 3)
        case "unknown connection":
            again = h.status("T1", "available", zone: "A", conn: 4)
        default:
            let offline: StatusMessage = decoded(#"{"conn":4,"online":false,"unit":"T1","state":"available","seats_left":4}"#)
            again = h.feed(.report(unit: "T1", .status(offline)))
        }
        #expect(offers(again).isEmpty)
        #expect(h.dispatcher.stats.offersResent == 0)
    }

    @Test func aRepeatedAnswerToARedeliveredOfferChangesNothing() {
        var h = Harness()
        h.status("T1", "available", zone: "A")
        h.request("R1", at: inA)
        h.reply("T1", "R1", .accept)
        let again = h.reply("T1", "R1", .accept)
        #expect(again.isEmpty, "no cancel for the taxi that holds the job")
        #expect(h.dispatcher.stats.accepted == 1)
        #expect(h.dispatcher.stats.duplicatesDropped == 1)
    }

    @Test func anInvalidAnswerToAnUpdateIsOnlyLogged() {
        var h = Harness()
        h.queue("T1", "T2")
        h.request("R1", at: inA)
        h.reply("T1", "R1", .accept)
        h.request("R2", at: inB, shares: "R1")
        let refused = h.feed(.report(unit: "T1", .reply(id: "x", JobReply(job: "R1", re: .jobUpdate, reply: .invalid, reason: "too many passengers", t: UnitTime(milliseconds: h.now)))))
        #expect(logs(refused).contains("T1 refused job/update for R1 (invalid): too many passengers"))
        #expect(offers(refused).isEmpty && cancels(refused).isEmpty)
        #expect(h.dispatcher.stats.invalid == 0)
    }

    @Test func aLateAcceptIsCancelled() {
        var h = Harness()
        h.status("T1", "available", zone: "A")
        h.request("R1", at: inA)
        h.feed(.timerFired(.offerDeadline(job: "R1", unit: "T1")))
        #expect(cancels(h.reply("T1", "R1", .accept)) == ["R1→T1"])
        #expect(h.dispatcher.stats.accepted == 0)
    }

    @Test func everyTaxiRefusingLeavesTheRequestUnserved() {
        var h = Harness()
        h.queue("T1", "T2")
        h.request("R1", at: inA)
        h.reply("T1", "R1", .reject)
        let last = h.reply("T2", "R1", .reject)
        #expect(offers(last).isEmpty)
        #expect(logs(last).contains("R1 UNSERVED"))
        #expect(h.dispatcher.stats.unserved == 1)
        #expect(h.dispatcher.queue(of: "A") == ["T1", "T2"])
    }

    @Test func anEmptyZoneBorrowsFromItsNeighbourThenGivesUp() {
        var h = Harness()
        h.status("T9", "available", zone: "B")
        #expect(offers(h.request("R1", at: inA)) == ["R1→T9"])
        #expect(offers(h.request("R2", at: inC)).isEmpty)
        #expect(offers(h.request("R3", at: Coordinate(lat: 9, lon: 9))).isEmpty)
        #expect(h.dispatcher.stats.unserved == 2)
    }

    @Test func aTaxiChangingZoneGoesToTheEndOfTheNewQueue() {
        var h = Harness()
        h.status("T1", "available", zone: "A")
        h.status("T2", "available", zone: "B")
        h.status("T1", "available", zone: "B")
        #expect(h.dispatcher.queue(of: "A") == [])
        #expect(h.dispatcher.queue(of: "B") == ["T2", "T1"])
        // The same zone again keeps its place.
        h.status("T2", "available", zone: "B")
        #expect(h.dispatcher.queue(of: "B") == ["T2", "T1"])
    }

    @Test func eventsMoveTaxisAndOldOnesAreHistory() {
        var h = Harness()
        h.status("T1", "paused", zone: "A")
        h.now += 100
        h.event("T1", .paused, .available)
        #expect(h.dispatcher.queue(of: "A") == ["T1"])
        // A stored-and-forwarded event from before is not the taxi's state any more.
        h.event("T1", .available, .offDuty, t: h.now - 50)
        #expect(h.dispatcher.queue(of: "A") == ["T1"])
        h.event("T1", .available, .paused, t: h.now + 1)
        #expect(h.dispatcher.queue(of: "A") == [])
    }

    @Test func positionsPlaceTaxisThatDoNotNameTheirZone() {
        var h = Harness()
        /// As a unit sends it: the lean live form, whose short id is unique per unit only.
        func position(_ point: Coordinate) -> UnitReport {
            let live = LivePositionMessage(point: PositionPoint(t: 1_795_000_000_000, lat: point.lat, lon: point.lon), seq: 1)
            return (try? UnitReport.decode(.pos, Data(live.json()))) ?? .offline(conn: nil)
        }
        h.status("T1", "available", zone: nil)
        #expect(h.dispatcher.queues.values.allSatisfy { $0.isEmpty })
        h.feed(.report(unit: "T1", position(inB)))
        #expect(h.dispatcher.queue(of: "B") == ["T1"])
        // A unit that names its zone is believed over its positions. T2's message has the same id
        // as T1's: another unit's, so no duplicate.
        h.status("T2", "available", zone: "A")
        h.feed(.report(unit: "T2", position(inB)))
        #expect(h.dispatcher.queue(of: "A") == ["T2"])
        #expect(h.dispatcher.stats.duplicatesDropped == 0)
        h.feed(.report(unit: "T2", position(inB)))
        #expect(h.dispatcher.stats.duplicatesDropped == 1)
    }

    /// `pos/last` repeats a `pos` message's id: state like `status`, never a duplicate of it
    /// (docs/protocol.md, "pos/last"), and it places a taxi as a position does.
    @Test func theLastPositionIsNeverADuplicate() throws {
        var h = Harness()
        let inA = PositionPoint(t: 1_795_000_000_000, lat: 0.005, lon: 0.005)
        let live = LivePositionMessage(point: inA, seq: 3)
        let last = try #require(try UnitReport.decode(.posLast, Data(live.json())))
        let pos = try #require(try UnitReport.decode(.pos, Data(live.json())))
        #expect(last == .lastPosition(ReceivedPosition(id: live.id, points: [inA], backfill: false)))
        h.status("T1", "available", zone: nil)
        h.feed(.report(unit: "T1", last))
        #expect(h.dispatcher.queue(of: "A") == ["T1"])
        h.feed(.report(unit: "T1", pos))
        h.feed(.report(unit: "T1", last))
        h.feed(.report(unit: "T1", last))
        #expect(h.dispatcher.stats.duplicatesDropped == 0)
        h.feed(.report(unit: "T1", pos))
        #expect(h.dispatcher.stats.duplicatesDropped == 1)
    }

    /// Every form a `pos` payload comes in: live, backfill, and protocol 1's live objects, which an
    /// upgraded unit still sends from its outbox.
    @Test func everyPositionFormDecodes() throws {
        let point = PositionPoint(t: 1_795_000_000_000, lat: 46.4983007, lon: 7.5674005, spd: 8.31, hdg: 10.4, acc: 4.5)
        let live = LivePositionMessage(point: point, seq: 5)
        #expect(try UnitReport.decode(.pos, Data(live.json())) == .position(ReceivedPosition(id: live.id, points: [live.point], backfill: false)))
        let batch = BackfillMessage.writeJSON(unit: "T1", seq: 2, id: "b-1", points: [point, point][...])
        guard case .position(let backfill)? = try UnitReport.decode(.pos, Data(batch)) else { Issue.record("no position"); return }
        #expect(backfill.id == "b-1" && backfill.backfill && backfill.points.count == 2 && backfill.points[1].t == point.t)
        let old = #"{"id":"0194","points":[{"acc":4.5,"lat":46.4983007,"lon":7.5674005,"t":1795000000000}],"seq":1,"unit":"T1"}"#
        #expect(try UnitReport.decode(.pos, Data(old.utf8)) == .position(ReceivedPosition(
            id: "0194", points: [PositionPoint(t: 1_795_000_000_000, lat: 46.4983007, lon: 7.5674005, acc: 4.5)], backfill: false)))
        #expect(throws: (any Error).self) { try UnitReport.decode(.pos, Data(#"{"id":"NOT-AN-ID","p":[0,1,2]}"#.utf8)) }
    }

    @Test func offlineTaxisLeaveTheQueue() {
        var h = Harness()
        h.status("T1", "available", zone: "A")
        h.feed(.report(unit: "T1", .offline(conn: nil)))
        #expect(h.dispatcher.queue(of: "A") == [])
        h.status("T1", "available", zone: "A")
        #expect(h.dispatcher.queue(of: "A") == ["T1"])
    }

    /// The last will names its connection: one older than the newest status is the broker catching
    /// up after the unit came back, and must not take the taxi out of the queue.
    @Test func aStaleLastWillIsIgnored() throws {
        var h = Harness()
        let status: StatusMessage = decoded(#"{"conn":8,"online":true,"unit":"T1","state":"available","seats_left":4,"t":5,"zone":"A"}"#)
        h.feed(.report(unit: "T1", .status(status)))
        #expect(try UnitReport.decode(.status, Data(#"{"conn":7,"online":false}"#.utf8)) == .offline(conn: 7))
        h.feed(.report(unit: "T1", .offline(conn: 7)))
        #expect(h.dispatcher.queue(of: "A") == ["T1"])
        h.feed(.report(unit: "T1", .offline(conn: 8)))
        #expect(h.dispatcher.queue(of: "A") == [])
    }

    @Test func aZoneEventMovesTheTaxi() throws {
        var h = Harness()
        h.status("T1", "available", zone: nil)
        let payload = #"{"id":"z-1","seq":3,"t":1795258104124,"type":"zone","unit":"T1","zone":"A","zone_left":"B"}"#
        guard case .zone(let id, let change)? = try UnitReport.decode(.event, Data(payload.utf8)) else {
            Issue.record("a zone event must decode as one")
            return
        }
        #expect(id == "z-1" && change.zone == "A")
        h.feed(.report(unit: "T1", .zone(id: id, change)))
        #expect(h.dispatcher.queue(of: "A") == ["T1"])
    }

    @Test func anIgnitionEventIsToldAndTheTaxiKeepsItsPlace() throws {
        var h = Harness()
        h.queue("T1", "T2")
        let payload = #"{"id":"i-1","ignition":"off","seq":4,"state":"available","t":1795258104124,"type":"ignition","unit":"T1"}"#
        guard case .ignition(let id, let change)? = try UnitReport.decode(.event, Data(payload.utf8)) else {
            Issue.record("an ignition event must decode as one")
            return
        }
        #expect(id == "i-1" && change.ignition == "off" && change.state == .available)
        h.feed(.report(unit: "T1", .ignition(id: id, change)))
        #expect(h.dispatcher.queue(of: "A") == ["T1", "T2"], "a taxi waiting at a rank may turn its engine off")
    }

    @Test func aSoonClearEventDecodes() throws {
        let payload = #"{"clear_in_min":5,"id":"s-1","job":"R1","seq":5,"t":1795258104124,"type":"soon_clear","unit":"T1"}"#
        guard case .soonClear(let id, let soon)? = try UnitReport.decode(.event, Data(payload.utf8)) else {
            Issue.record("a soon-clear event must decode as one")
            return
        }
        #expect(id == "s-1" && soon.job == "R1" && soon.clearInMin == 5)
    }

    @Test func aShiftEventDecodesAndIsLoggedOnce() throws {
        let payload = #"{"continuous_driving_s":16200,"driving_s":19800,"id":"h-1","limit":"continuous_driving","on_duty_s":27000,"seq":6,"shift_s":28800,"t":1795258104124,"type":"shift","unit":"T1","what":"limit"}"#
        guard case .shift(let id, let shift)? = try UnitReport.decode(.event, Data(payload.utf8)) else {
            Issue.record("a shift event must decode as one")
            return
        }
        #expect(id == "h-1" && shift.body.what == "limit" && shift.body.limit == "continuous_driving" && shift.body.drivingS == 19800)
        var h = Harness()
        let logged = h.feed(.report(unit: "T1", .shift(id: id, shift))).compactMap { if case .log(let line) = $0 { line.text } else { nil } }
        #expect(logged == ["T1 shift limit (continuous_driving): 480 min, on duty 450 min, driving 330 min"])
        #expect(h.feed(.report(unit: "T1", .shift(id: id, shift))).isEmpty, "a redelivered copy is not logged again")
    }

    @Test func duplicatesAreDroppedByID() {
        var h = Harness()
        h.queue("T1", "T2")
        h.request("R1", at: inA)
        let reject = JobReply(job: "R1", reply: .reject, t: UnitTime(milliseconds: h.now))
        #expect(offers(h.feed(.report(unit: "T1", .reply(id: "same", reject)))) == ["R1→T2"])
        #expect(h.feed(.report(unit: "T1", .reply(id: "same", reject))).isEmpty)
        #expect(h.dispatcher.stats.rejected == 1)
        #expect(h.dispatcher.stats.duplicatesDropped == 1)
    }

    @Test func reservationsAreAllocatedTenMinutesBeforeTheMeeting() {
        var h = Harness()
        h.status("T1", "available", zone: "A")
        let meeting = h.now + 3_600_000
        let actions = h.request("R1", at: inA, meetingTime: meeting)
        #expect(actions.contains(.startTimer(.reservation(request: "R1"), at: meeting - 600_000)))
        #expect(offers(actions).isEmpty)
        h.now = meeting - 600_000
        #expect(offers(h.feed(.timerFired(.reservation(request: "R1")))) == ["R1→T1"])
        h.reply("T1", "R1", .accept)
        #expect(h.dispatcher.stats.requestToAssignmentMs == [10], "measured from allocation, not from booking")
        // A reservation due within ten minutes is allocated at once.
        h.status("T2", "available", zone: "A")
        #expect(offers(h.request("R2", at: inA, meetingTime: h.now + 60_000)) == ["R2→T2"])
    }

    @Test func withdrawalCancelsOnTheRightTaxi() {
        var h = Harness()
        h.queue("T1", "T2", "T3")
        h.request("R1", at: inA)
        h.reply("T1", "R1", .accept)
        h.request("R2", at: inA)
        #expect(cancels(h.feed(.withdraw(request: "R1"))) == ["R1→T1"])
        let pending = h.feed(.withdraw(request: "R2"))
        #expect(cancels(pending) == ["R2→T2"])
        #expect(pending.contains(.cancelTimer(.offerDeadline(job: "R2", unit: "T2"))))
        let meeting = h.now + 3_600_000
        h.request("R3", at: inA, meetingTime: meeting)
        #expect(h.feed(.withdraw(request: "R3")).contains(.cancelTimer(.reservation(request: "R3"))))
        #expect(h.dispatcher.stats.cancelled == 3)
        #expect(logs(h.feed(.withdraw(request: "R3"))).contains("ignored"))
    }

    @Test func aSharedRideUpdatesTheHostJob() {
        var h = Harness()
        h.status("T1", "available", zone: "A")
        h.request("R1", at: inA)
        h.reply("T1", "R1", .accept)
        let actions = h.request("R2", at: inB, shares: "R1")
        #expect(actions.contains(.send(unit: "T1", .update(JobUpdate(
            job: "R1", addPickup: .init(lat: inB.lat, lon: inB.lon, passengers: 1), update: "R2-joined")))))
        #expect(h.dispatcher.stats.shared == 1)
        let shown = h.feed(.report(unit: "T1", .reply(id: "y", JobReply(job: "R1", re: .jobUpdate, reply: .shown, t: UnitTime(milliseconds: h.now), update: "R2-joined"))))
        #expect(logs(shown).contains("T1 showed update R2-joined of R1 to the driver"))
        #expect(offers(shown).isEmpty && cancels(shown).isEmpty)
        #expect(h.dispatcher.stats.updatesShown == 1)
        let left = h.feed(.withdraw(request: "R2"))
        #expect(left.contains(.send(unit: "T1", .update(JobUpdate(job: "R1", passengers: 1, update: "R2-left")))))
        #expect(cancels(left).isEmpty, "the host's ride goes on")
    }

    @Test func sosIsAcknowledgedOnce() {
        var h = Harness()
        let alarm: SOSAlarm = decoded(#"{"t":5,"state":"en_route","job":"R9","fix":{"t":4,"lat":1,"lon":2}}"#)
        let actions = h.feed(.report(unit: "T1", .sos(id: "s1", alarm)))
        #expect(actions.contains(.send(unit: "T1", .sosAck(SOSAck(id: "s1")))))
        #expect(logs(actions).contains("SOS from T1 at 1.0, 2.0, en_route on R9"))
        #expect(h.feed(.report(unit: "T1", .sos(id: "s1", alarm))).isEmpty)
        #expect(h.dispatcher.stats.sos == 1)
    }

    @Test func thinkTimeIsTakenOutOfTheRoundTrip() {
        var h = Harness()
        h.status("T1", "available", zone: "A")
        h.request("R1", at: inA)
        let sent = h.now
        // The unit got the offer 7 ms later; the driver thought for 3 s; the reply took 5 ms back.
        h.event("T1", .available, .offered, job: "R1", t: sent + 7)
        h.now = sent + 7 + 3000 + 5
        h.feed(.report(unit: "T1", .reply(id: "r1", JobReply(job: "R1", reply: .accept, t: UnitTime(milliseconds: sent + 7 + 3000)))))
        #expect(h.dispatcher.stats.offerToReplyMs == [3012])
        #expect(h.dispatcher.stats.offerToReplyTransitMs == [12])
        #expect(h.dispatcher.stats.offerLegMs == [7])
        #expect(h.dispatcher.stats.replyLegMs == [5])
        #expect(h.dispatcher.stats.requestToAssignmentMs == [3012])
        #expect(h.dispatcher.stats.requestToAssignmentWithoutThinkMs == [12])
    }

    @Test func aStatusCountsEvenWhenTheUnitClockSteppedBack() {
        var h = Harness()
        let systemClock = h.now
        h.status("T1", "off_duty", zone: "A")
        // The unit's first fix: its clock moves from an unsynchronised system clock to GPS time, an hour back.
        let gpsClock = systemClock - 3_600_000
        h.event("T1", .offDuty, .available, t: gpsClock)
        #expect(h.dispatcher.queue(of: "A").isEmpty, "an event older than the state applied is history")
        let status: StatusMessage = decoded(#"{"online":true,"unit":"T1","state":"available","seats_left":4,"t":\#(gpsClock + 1),"zone":"A"}"#)
        h.feed(.report(unit: "T1", .status(status)))
        #expect(h.dispatcher.queue(of: "A") == ["T1"])
        // Stored-and-forwarded history from before that status still does not count.
        h.event("T1", .available, .offDuty, t: gpsClock - 10)
        #expect(h.dispatcher.queue(of: "A") == ["T1"])
    }

    @Test func everyOffersThinkTimeIsTakenOutOfTheAssignment() {
        var h = Harness()
        h.queue("T1", "T2")
        h.request("R1", at: inA)
        let requested = h.now
        // T1 gets the offer after 7 ms and rejects it after 2 s; the reject takes 5 ms back.
        h.event("T1", .available, .offered, job: "R1", t: requested + 7)
        h.now = requested + 2012
        let next = h.feed(.report(unit: "T1", .reply(id: "r1", JobReply(job: "R1", reply: .reject, t: UnitTime(milliseconds: requested + 2007)))))
        #expect(offers(next) == ["R1→T2"])
        // T2 gets it after 5 ms and accepts after 1 s; the accept takes 4 ms back.
        h.event("T2", .available, .offered, job: "R1", t: requested + 2017)
        h.now = requested + 3021
        h.feed(.report(unit: "T2", .reply(id: "r2", JobReply(job: "R1", reply: .accept, t: UnitTime(milliseconds: requested + 3017)))))
        #expect(h.dispatcher.stats.requestToAssignmentMs == [3021])
        #expect(h.dispatcher.stats.requestToAssignmentWithoutThinkMs == [21])
    }

    @Test func anAssignmentWithAnUnknownThinkTimeIsLeftOutOfTheSystemShare() {
        var h = Harness()
        h.queue("T1")
        h.request("R1", at: inA)
        // The unit's `offered` event never arrived, so how long the driver thought is unknown.
        h.reply("T1", "R1", .accept)
        #expect(h.dispatcher.stats.requestToAssignmentMs == [10])
        #expect(h.dispatcher.stats.requestToAssignmentWithoutThinkMs.isEmpty)
    }

    @Test func percentilesUseNearestRank() {
        let samples = (1...100).map { Int64($0) }
        let p = Percentiles(samples)
        #expect((p.p50, p.p95, p.p99, p.max) == (50, 95, 99, 100))
        #expect(Percentiles([]).description == "n=0")
    }
}

@Suite struct RequestScheduleTests {
    @Test func generatedPickupsLieInTheirZoneAndRepeatWithTheSeed() throws {
        let map = ZoneMap(zones: [squareA, squareB])
        let demands = [ZoneDemand(zone: "A", rate: .poisson(perMinute: 30)), ZoneDemand(zone: "B", rate: .every(seconds: 60), firstAtS: 5)]
        let first = try RequestSchedule.generate(demands, zones: map, durationS: 600, seed: 7)
        #expect(try RequestSchedule.generate(demands, zones: map, durationS: 600, seed: 7) == first)
        let inB = first.filter { if case .request(let r) = $0.input { r.id.hasPrefix("B-") } else { false } }
        #expect(inB.map(\.atMs) == stride(from: 5_000, to: 600_000, by: 60_000).map { Int64($0) })
        let countA = first.count - inB.count
        #expect((200...400).contains(countA), "30 a minute for 10 minutes, give or take")
        for item in first {
            guard case .request(let request) = item.input else { continue }
            #expect(map[String(request.id.prefix(1))]!.contains(request.pickup))
            #expect(request.address == request.id)
        }
        #expect(throws: ScheduleError.self) { try RequestSchedule.generate([ZoneDemand(zone: "Z", rate: .every(seconds: 1))], zones: map, durationS: 10, seed: 1) }
    }

    @Test func mergeIsTimeOrderedAndStable() {
        let a = [ScheduledInput(atMs: 10, input: .withdraw(request: "x")), ScheduledInput(atMs: 30, input: .withdraw(request: "y"))]
        let b = [ScheduledInput(atMs: 10, input: .withdraw(request: "z")), ScheduledInput(atMs: 20, input: .withdraw(request: "w"))]
        #expect(RequestSchedule.merge(a, b).map(\.atMs) == [10, 10, 20, 30])
        #expect(RequestSchedule.merge(a, b)[0] == a[0])
    }
}

@Suite struct WholeJobDispatchTests {
    @Test func offersCarryTheDropoffAndThePassenger() throws {
        var harness = Harness()
        harness.queue("T1")
        let dropoff = Place(lat: 0.005, lon: 0.015, address: "Station")
        let passenger = Passenger(name: "A. Rossi", phone: "+39 02 1234", pickupCode: "4711")
        let actions = harness.feed(.request(PassengerRequest(id: "R1", pickup: inA, note: "ring", dropoff: dropoff, passenger: passenger)))
        let offer = try #require(actions.compactMap { if case .send(_, .offer(let offer)) = $0 { offer } else { nil } }.first)
        #expect(offer.dropoff == dropoff && offer.passenger == passenger && offer.note == "ring")
    }

    @Test func rideSummariesAreLoggedAndCountedOnce() {
        var harness = Harness()
        let ride: RideMessage = decoded(
            #"{"unit":"T1","seq":1,"id":"r1","job":"R1","passengers":2,"pickup":{"t":1,"lat":0,"lon":0},"drop":{"t":2},"distance_m":5230,"waiting_s":95}"#)
        let actions = harness.feed(.report(unit: "T1", .ride(ride)))
        #expect(logs(actions) == "R1 ride summary from T1: 2 passengers, 5230 m, waited 95 s")
        #expect(harness.feed(.report(unit: "T1", .ride(ride))).isEmpty)
        #expect(harness.dispatcher.stats.rides == 1 && harness.dispatcher.stats.duplicatesDropped == 1)
    }

    @Test func generatedRequestsHaveADestinationAndAPassenger() throws {
        let map = ZoneMap(zones: [squareA, squareB])
        let inputs = try RequestSchedule.generate([ZoneDemand(zone: "A", rate: .every(seconds: 60))], zones: map, durationS: 300, seed: 7)
        for case .request(let request) in inputs.map(\.input) {
            let dropoff = try #require(request.dropoff)
            #expect(map.zone(containing: Coordinate(lat: dropoff.lat, lon: dropoff.lon)) != nil)
            #expect(request.passenger?.name != nil && request.passenger?.pickupCode?.count == 4)
        }
    }
}

/// The driver's cancel request: confirmed or refused by its reason (docs/dispatchsim.md).
@Suite struct CancelRequestAnswerTests {
    /// T1 holds R1, T2 waits in the queue.
    func assigned() -> Harness {
        var h = Harness()
        h.queue("T1", "T2")
        h.request("R1", at: inA)
        h.reply("T1", "R1", .accept)
        return h
    }

    func ask(_ h: inout Harness, _ reason: String, job: String = "R1") throws -> [DispatchAction] {
        let payload = #"{"id":"\#(h.id())","job":"\#(job)","reason":"\#(reason)","seq":6,"state":"at_pickup","t":\#(h.now),"type":"cancel_request","unit":"T1"}"#
        guard case .cancelRequest(let id, let request)? = try UnitReport.decode(.event, Data(payload.utf8)) else {
            Issue.record("a cancel request must decode as one")
            return []
        }
        return h.feed(.report(unit: "T1", .cancelRequest(id: id, request)))
    }

    @Test func anUnreachablePassengerIsGivenUp() throws {
        var h = assigned()
        let actions = try ask(&h, "passenger_unreachable")
        #expect(cancels(actions) == ["R1→T1"])
        #expect(offers(actions).isEmpty)
        #expect(h.dispatcher.stats.cancelled == 1)
    }

    @Test func aVehicleProblemHandsTheRequestToTheNextTaxi() throws {
        var h = assigned()
        let actions = try ask(&h, "vehicle_problem")
        #expect(cancels(actions) == ["R1→T1"])
        #expect(offers(actions) == ["R1→T2"])
    }

    @Test func anotherReasonIsRefusedAndTheJobGoesOn() throws {
        var h = assigned()
        let actions = try ask(&h, "other")
        #expect(cancels(actions).isEmpty)
        let refusals = actions.compactMap { if case .send("T1", .update(let update)) = $0 { update } else { nil } }
        #expect(refusals.count == 1)
        #expect(refusals.first?.cancelRefused == true && refusals.first?.job == "R1" && refusals.first?.note == "Call dispatch")
        // The same request delivered twice is answered once.
        let again = h.feed(.report(unit: "T1", .cancelRequest(id: "m\(h.nextID)", CancelRequestEventMessage(
            CancelRequestEvent(t: UnitTime(milliseconds: h.now), job: "R1", reason: .other, state: .atPickup), unit: "T1", seq: 6, id: "m\(h.nextID)"))))
        #expect(again.isEmpty)
    }

    @Test func aJobNotAssignedToTheTaxiIsConfirmed() throws {
        var h = assigned()
        #expect(cancels(try ask(&h, "other", job: "R9")) == ["R9→T1"])
    }
}

@Suite struct StreetHailDispatchTests {
    @Test func aHailIsLoggedAndTheTaxiGetsNoOfferUntilClear() {
        var h = Harness()
        h.queue("T1", "T2")
        h.now += 10
        let hail = DispatchInput.report(unit: "T1", .event(id: h.id(), Transition(
            t: UnitTime(milliseconds: h.now), from: .available, to: .onBoard, job: "hail-1000", reason: "hail")))
        let actions = h.feed(hail)
        #expect(actions.contains { if case .log(let line) = $0 { line.text == "T1 took a street hail (hail-1000), busy until clear" } else { false } })
        #expect(h.dispatcher.queue(of: "A") == ["T2"], "busy: out of the queue")
        // The same event again (QoS 1 may deliver it twice) is not a second hail.
        h.feed(hail)
        #expect(h.dispatcher.stats.hails == 1)
        h.event("T1", .onBoard, .available, job: "hail-1000", t: h.now + 1)
        #expect(h.dispatcher.queue(of: "A") == ["T2", "T1"], "clear: back in the queue")
        #expect(h.dispatcher.stats.completed == 0, "a hail is no booking of this dispatcher")
    }
}
