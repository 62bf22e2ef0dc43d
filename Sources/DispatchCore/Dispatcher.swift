import TaxiProtocol

/// The reference dispatcher: zone queues, offers and their rotation, reservations, cancellations and
/// SOS acknowledgements, as a pure state machine. The shell (dispatchsim) owns the clock, the timers
/// and the broker; it feeds `DispatchInput`s with the current time and performs the actions.

public struct PassengerRequest: Sendable, Equatable {
    public var id: String
    public var pickup: Coordinate
    public var address: String?
    public var passengers: Int
    /// A reservation: when the passenger is to be picked up (ms since the epoch).
    public var meetingTime: Int64?
    /// A shared ride: join the taxi already carrying this request's passengers.
    public var sharesRideOf: String?
    public var note: String?
    /// Where the passenger goes, and who they are: sent with the offer for the driver's terminal.
    public var dropoff: Place?
    public var passenger: Passenger?
    /// The price agreed at booking, quoted in the offer: minor units of `currency`.
    public var fare: Int64?
    public var currency: String?

    public init(
        id: String, pickup: Coordinate, address: String? = nil, passengers: Int = 1, meetingTime: Int64? = nil,
        sharesRideOf: String? = nil, note: String? = nil, dropoff: Place? = nil, passenger: Passenger? = nil,
        fare: Int64? = nil, currency: String? = nil
    ) {
        self.fare = fare
        self.currency = currency
        self.dropoff = dropoff
        self.passenger = passenger
        self.id = id
        self.pickup = pickup
        self.address = address
        self.passengers = passengers
        self.meetingTime = meetingTime
        self.sharesRideOf = sharesRideOf
        self.note = note
    }
}

public struct DispatchSettings: Sendable, Equatable {
    /// `respond_within_s` of every offer.
    public var respondWithinS: Int
    /// How long after the answer window an offer with no reply at all counts as timed out; the unit
    /// answers `timeout` itself, this only covers a unit that is unreachable.
    public var replyGraceS: Int
    /// Reservations are allocated this long before their meeting time.
    public var reservationLeadS: Int
    /// A reservation whose meeting time is more than this ahead is offered at once as a pre-booking,
    /// which the taxi holds until it starts; 0: off. Meant to equal the units' `[job]
    /// reservation_lead_min` in seconds.
    public var preBookingLeadS: Int
    /// A taxi offline this long gives up the pre-bookings it holds, which go to other taxis; 0: never.
    public var preBookingOfflineS: Int

    public init(
        respondWithinS: Int = 60, replyGraceS: Int = 10, reservationLeadS: Int = 600, preBookingLeadS: Int = 0, preBookingOfflineS: Int = 300
    ) {
        self.respondWithinS = respondWithinS
        self.replyGraceS = replyGraceS
        self.reservationLeadS = reservationLeadS
        self.preBookingLeadS = preBookingLeadS
        self.preBookingOfflineS = preBookingOfflineS
    }
}

public enum DispatchTimer: Sendable, Hashable {
    case offerDeadline(job: String, unit: String)
    case reservation(request: String)
    /// The taxi has been offline `preBookingOfflineS`: its pre-bookings go to other taxis.
    case holderOffline(unit: String)
}

public enum DispatchInput: Sendable, Equatable {
    case request(PassengerRequest)
    /// The passenger withdrew the request.
    case withdraw(request: String)
    case report(unit: String, UnitReport)
    case timerFired(DispatchTimer)
}

public struct DispatchLogLine: Sendable, Equatable, CustomStringConvertible {
    public enum Level: Sendable, Equatable { case info, warning, alarm }
    public var level: Level
    public var text: String

    public var description: String {
        switch level {
        case .info: text
        case .warning: "WARNING " + text
        case .alarm: "!!!!!!!! " + text + " !!!!!!!!"
        }
    }
}

public enum DispatchAction: Sendable, Equatable {
    case send(unit: String, InboundMessage)
    /// Fire `timerFired` at this time (ms since the epoch); starting a running timer restarts it.
    case startTimer(DispatchTimer, at: Int64)
    case cancelTimer(DispatchTimer)
    /// One line of the live log.
    case log(DispatchLogLine)
    /// Publish this `driver/logout` to the unit.
    case logout(unit: String, DriverLogout)
}

public struct Dispatcher: Sendable {
    public let zones: ZoneMap
    public let settings: DispatchSettings
    public private(set) var stats = DispatchStats()
    /// FIFO of available taxis per zone id, head first.
    public private(set) var queues: [String: [String]] = [:]

    private var taxis: [String: Taxi] = [:]
    private var requests: [String: OpenRequest] = [:]
    /// Per unit: a live position's short id is unique per unit only (docs/protocol.md, "pos").
    private var seenMessageIDs: [String: Set<String>] = [:]
    private var replyProbes: [ProbeKey: ReplyProbe] = [:]
    /// One driver on one taxi.
    public private(set) var logins = DriverLogins()

    public init(zones: ZoneMap, settings: DispatchSettings = DispatchSettings()) {
        self.zones = zones
        self.settings = settings
    }

    struct Taxi {
        var online = false
        /// The connection counter of the newest status (`conn`), to tell stale last wills.
        var conn: Int64?
        /// nil while unknown, e.g. after a `busy` answer until the next status.
        var state: StateName?
        var zone: String?
        /// Once a unit names its zone, that is authoritative; before, its positions place it.
        var reportsZone = false
        /// Unit clock of the newest state applied: stored-and-forwarded events older than that are history.
        var stateTime = Int64.min
        var offeredJob: String?
        var assignedJob: String?
        /// The job on board the driver said is over soon (`soon_clear`): the taxi may be offered a next job.
        var soonClearJob: String?
        /// The next job it accepted (`"next": true`), started when the ride on board is cleared.
        var stackedJob: String?
        /// The pre-bookings it accepted and has not started.
        var preBookings: Set<String> = []
        /// It answered `busy` to an offer beside its job in hand: what kept it (a pre-booking in the
        /// way, an offer awaiting its answer) holds until its state changes, and each request of a
        /// rush would otherwise be offered to it again.
        var refusedBeside = false
        /// It answered an ordinary offer `busy` with a pre-booking in the way (`reservation R at T`):
        /// that holds until its state changes (the pre-booking starts) or it holds another set of
        /// pre-bookings, so it keeps its place in the queue but is offered only pre-bookings.
        var refusedForReservation = false
    }

    struct OpenRequest {
        enum Phase: Equatable {
            case reserved
            case offering(unit: String, sentAt: Int64)
            /// Accepted as a pre-booking or a next job: the taxi holds it until it starts (`en_route`).
            case held(unit: String)
            case assigned(unit: String)
            case closed
        }
        var request: PassengerRequest
        var phase: Phase
        /// When allocation began: the request time, or the reservation's allocation time.
        var allocationStart: Int64 = 0
        var tried: Set<String> = []
        /// Offered as a pre-booking: to available and busy taxis, held once accepted.
        var preBooking = false
        /// The offer out now is a next job (`"next": true`) to a taxi on board.
        var offeredAsNext = false
        /// The offer out now went to a taxi with a job in hand, which shows it beside that job
        /// without an `offered` event: the unit does not say when it arrived.
        var offeredBeside = false
        /// The unit offered to said it shows the offer (its `offered` event): it reached the unit.
        var offerShown = false
        /// Unit clock of the accept that made the taxi hold it: its statuses from then on list it.
        var heldSince: Int64 = .min
        /// How long this request's offers sat on units waiting for a driver, and how many offers'
        /// wait is not known yet: request → assignment without it is the system's own share.
        var driverThinkMs: Int64 = 0
        var offersWithUnknownThink = 0
    }

    struct ProbeKey: Hashable {
        var job: String
        var unit: String
    }

    /// The four clocks of one offer → reply round trip; with all four the driver's think time can be
    /// taken out (both unit clocks are the same clock, so its offset cancels out).
    struct ReplyProbe {
        var offerSentAt: Int64
        var offerReceivedAt: Int64?
        var replyMadeAt: Int64?
        var replyReceivedAt: Int64?
    }

    public func queue(of zone: String) -> [String] { queues[zone] ?? [] }

    /// Offers still waiting for their answer.
    public var pendingOffers: Int {
        requests.values.count { if case .offering = $0.phase { true } else { false } }
    }

    /// Pre-bookings and next jobs accepted and not started yet.
    public var heldJobs: Int {
        requests.values.count { if case .held = $0.phase { true } else { false } }
    }

    public mutating func handle(_ input: DispatchInput, now: Int64) -> [DispatchAction] {
        switch input {
        case .request(let request): receive(request, now: now)
        case .withdraw(let id): withdraw(id, now: now)
        case .report(let unit, let report): handle(report, from: unit, now: now)
        case .timerFired(.offerDeadline(let job, let unit)): noReply(job: job, unit: unit, now: now)
        case .timerFired(.reservation(let id)): allocate(id, now: now)
        case .timerFired(.holderOffline(let unit)): holderStayedOffline(unit, now: now)
        }
    }

    // MARK: - Passenger requests

    private mutating func receive(_ request: PassengerRequest, now: Int64) -> [DispatchAction] {
        guard requests[request.id] == nil else {
            return [.log(.init(level: .warning, text: "\(request.id) requested twice; the second is ignored"))]
        }
        stats.requests += 1
        if let joined = request.sharesRideOf, let host = requests[joined], case .assigned(let unit) = host.phase {
            let total = host.request.passengers + request.passengers
            requests[joined]?.request.passengers = total
            requests[request.id] = OpenRequest(request: request, phase: .assigned(unit: unit), allocationStart: now)
            stats.shared += 1
            let update = JobUpdate(
                job: joined,
                addPickup: .init(lat: request.pickup.lat, lon: request.pickup.lon, address: request.address, passengers: request.passengers),
                update: "\(request.id)-joined")
            return [
                .send(unit: unit, .update(update)),
                .log(.init(level: .info, text: "\(request.id) shares \(joined) with \(unit): job/update, \(total) passengers")),
            ]
        }
        requests[request.id] = OpenRequest(request: request, phase: .reserved)
        return plan(request.id, now: now)
    }

    /// A reserved request: offered at once as a pre-booking when its meeting time is more than the
    /// pre-booking lead ahead, allocated at its allocation time when that is still to come, and
    /// allocated now otherwise.
    private mutating func plan(_ id: String, now: Int64) -> [DispatchAction] {
        guard let meeting = requests[id]?.request.meetingTime else { return allocate(id, now: now) }
        // A meeting time or lead from a scenario file may be anything an integer holds: saturate.
        let lead = Int64(settings.preBookingLeadS).multipliedReportingOverflow(by: 1000)
        if settings.preBookingLeadS > 0, meeting.saturatingSubtract(now) > (lead.overflow ? .max : lead.partialValue) {
            requests[id]?.preBooking = true
            requests[id]?.allocationStart = now
            return [.log(.init(level: .info, text: "\(id) is a pre-booking"))] + offerNext(id, now: now)
        }
        requests[id]?.preBooking = false
        let allocateAt = meeting.saturatingSubtract(Int64(settings.reservationLeadS.saturatingMultiply(1000)))
        if allocateAt > now {
            return [
                .startTimer(.reservation(request: id), at: allocateAt),
                .log(.init(level: .info, text: "\(id) reserved, allocated in \((allocateAt - now) / 1000) s")),
            ]
        }
        return allocate(id, now: now)
    }

    private mutating func allocate(_ id: String, now: Int64) -> [DispatchAction] {
        guard requests[id]?.phase == .reserved else { return [] }
        requests[id]?.allocationStart = now
        return offerNext(id, now: now)
    }

    /// Offers to the head of the pickup zone's queue, then of its neighbours', skipping taxis that
    /// already had this request. With no available taxi left, a pre-booking goes to a busy taxi and
    /// any other request as the next job to a taxi on board that will be clear soon, in the same
    /// zone order; with nobody left the request is unserved.
    private mutating func offerNext(_ id: String, now: Int64) -> [DispatchAction] {
        guard var open = requests[id] else { return [] }
        let home = zones.zone(containing: open.request.pickup)?.id
        let zoneOrder = home.map { [$0] + (zones.neighbours[$0] ?? []) } ?? []
        for zone in zoneOrder {
            guard let unit = queue(of: zone).first(where: { !open.tried.contains($0) && (open.preBooking || taxis[$0]?.refusedForReservation != true) })
            else { continue }
            removeFromQueues(unit)
            let via = zone == home ? "zone \(zone)" : "neighbouring zone \(zone)"
            return offer(id, to: unit, asNext: false, via: via, now: now)
        }
        if open.preBooking, let unit = firstTaxi(in: zoneOrder, excluding: open.tried, where: Self.mayTakePreBooking) {
            return offer(id, to: unit, asNext: false, beside: true, via: "busy, \(taxis[unit]?.state?.rawValue ?? "?")", now: now)
        }
        if !open.preBooking, let unit = firstTaxi(in: zoneOrder, excluding: open.tried, where: Self.mayTakeNextJob) {
            return offer(id, to: unit, asNext: true, beside: true, via: "next job, clear soon", now: now)
        }
        open.phase = .closed
        requests[id] = open
        stats.unserved += 1
        let why = home == nil ? "pickup outside every zone" : "no available taxi in \(home!) or its neighbours"
        return [.log(.init(level: .warning, text: "\(id) UNSERVED: \(why)"))]
    }

    private mutating func offer(_ id: String, to unit: String, asNext: Bool, beside: Bool = false, via: String, now: Int64) -> [DispatchAction] {
        guard var open = requests[id] else { return [] }
        taxis[unit, default: Taxi()].offeredJob = id
        open.tried.insert(unit)
        open.phase = .offering(unit: unit, sentAt: now)
        open.offersWithUnknownThink += 1
        open.offerShown = false
        open.offeredAsNext = asNext
        open.offeredBeside = beside
        requests[id] = open
        stats.offers += 1
        if open.preBooking { stats.preBookingOffers += 1 }
        if asNext { stats.nextOffers += 1 }
        let kind = open.preBooking ? "pre-booking " : asNext ? "next job " : ""
        return send(offerOf: id, to: unit, now: now)
            + [.log(.init(level: .info, text: "\(kind)\(id) offered to \(unit) (\(via), try \(open.tried.count))"))]
    }

    /// A taxi busy with a job that holds no offer: a pre-booking is shown beside the job in hand.
    private static func mayTakePreBooking(_ taxi: Taxi) -> Bool {
        hasJobInHand(taxi.state) && taxi.offeredJob == nil && !taxi.refusedBeside
    }

    private static func hasJobInHand(_ state: StateName?) -> Bool {
        state == .enRoute || state == .atPickup || state == .onBoard
    }

    /// A taxi on board whose driver said the ride ends soon, with no next job yet and no offer.
    private static func mayTakeNextJob(_ taxi: Taxi) -> Bool {
        taxi.state == .onBoard && taxi.soonClearJob != nil && taxi.stackedJob == nil && taxi.offeredJob == nil && !taxi.refusedBeside
    }

    /// The first online taxi that passes `test`, by the zones' order, then by unit id.
    private func firstTaxi(in zoneOrder: [String], excluding tried: Set<String>, where test: (Taxi) -> Bool) -> String? {
        for zone in zoneOrder {
            let candidates = taxis.filter { $0.value.online && $0.value.zone == zone && !tried.contains($0.key) && test($0.value) }
            if let unit = candidates.keys.min() { return unit }
        }
        return nil
    }

    /// The offer of request `id` to `unit`, sent at `now` with a full answer window, and the
    /// deadline after which no reply counts as a timeout.
    private mutating func send(offerOf id: String, to unit: String, now: Int64) -> [DispatchAction] {
        guard let request = requests[id]?.request, let asNext = requests[id]?.offeredAsNext else { return [] }
        replyProbes[ProbeKey(job: id, unit: unit)] = ReplyProbe(offerSentAt: now)
        let offer = JobOffer(
            job: id, pickup: Place(lat: request.pickup.lat, lon: request.pickup.lon, address: request.address),
            respondWithinS: Double(settings.respondWithinS), passengers: request.passengers,
            meetingTime: request.meetingTime, shared: request.sharesRideOf != nil, note: request.note,
            dropoff: request.dropoff, passenger: request.passenger, t: now, fare: request.fare, currency: request.currency,
            next: asNext ? true : nil)
        let deadline = now + Int64(settings.respondWithinS + settings.replyGraceS) * 1000
        return [.send(unit: unit, .offer(offer)), .startTimer(.offerDeadline(job: id, unit: unit), at: deadline)]
    }

    /// A unit that connected again (a newer `conn`) while an offer to it is outstanding, and has
    /// shown it neither by its `offered` event nor in this status, may never have got it: a broker
    /// node that dies takes the messages queued on it along. The offer goes again at once, with a
    /// new answer window, instead of the passenger waiting out the old one; a unit that has it
    /// already ignores the copy.
    private mutating func resendLostOffer(to unit: String, after status: StatusMessage, previousConn: Int64?, now: Int64) -> [DispatchAction] {
        guard status.online, let conn = status.conn, let previousConn, conn > previousConn,
              let job = taxis[unit]?.offeredJob, let open = requests[job], case .offering(unit, _) = open.phase,
              !open.offerShown, !(status.state == .offered && status.job == job) else { return [] }
        requests[job]?.phase = .offering(unit: unit, sentAt: now)
        stats.offersResent += 1
        return send(offerOf: job, to: unit, now: now)
            + [.log(.init(level: .warning, text: "\(job) offered again to \(unit): it reconnected (connection \(conn)) without showing the offer"))]
    }

    private mutating func withdraw(_ id: String, now: Int64) -> [DispatchAction] {
        guard let open = requests[id], open.phase != .closed else {
            return [.log(.init(level: .warning, text: "withdrawal of \(id) ignored: no open request"))]
        }
        requests[id]?.phase = .closed
        stats.cancelled += 1
        switch open.phase {
        case .reserved:
            return [.cancelTimer(.reservation(request: id)), .log(.init(level: .info, text: "\(id) withdrawn before allocation"))]
        case .offering(let unit, _):
            taxis[unit]?.offeredJob = nil
            replyProbes[ProbeKey(job: id, unit: unit)] = nil
            return [.cancelTimer(.offerDeadline(job: id, unit: unit))] + cancel(job: id, unit: unit, reason: "passenger_withdrew")
                + reconcile(unit)
        case .assigned(let unit):
            // A sharing passenger leaves the host's ride; the ride itself goes on.
            if let host = open.request.sharesRideOf, let total = requests[host]?.request.passengers {
                let remaining = max(1, total - open.request.passengers)
                requests[host]?.request.passengers = remaining
                return [
                    .send(unit: unit, .update(JobUpdate(job: host, passengers: remaining, update: "\(id)-left"))),
                    .log(.init(level: .info, text: "\(id) left shared ride \(host) on \(unit): \(remaining) passengers")),
                ]
            }
            taxis[unit]?.assignedJob = nil
            return cancel(job: id, unit: unit, reason: "passenger_withdrew")
        case .held(let unit):
            if taxis[unit]?.stackedJob == id { taxis[unit]?.stackedJob = nil }
            taxis[unit]?.preBookings.remove(id)
            taxis[unit]?.refusedForReservation = false
            return cancel(job: id, unit: unit, reason: "passenger_withdrew") + reconcile(unit)
        case .closed:
            return []
        }
    }

    /// Once all four clocks of an offer are known: its round trip without the driver, and the
    /// driver's time added to the request's.
    private mutating func completeProbe(_ key: ProbeKey) {
        guard let round = replyProbes.removeIfComplete(key) else { return }
        stats.offerToReplyTransitMs.append(round.transitMs)
        stats.offerLegMs.append(round.offerLegMs)
        stats.replyLegMs.append(round.replyLegMs)
        requests[key.job]?.driverThinkMs += round.thinkMs
        requests[key.job]?.offersWithUnknownThink -= 1
    }

    private func cancel(job: String, unit: String, reason: String) -> [DispatchAction] {
        [.send(unit: unit, .cancel(JobCancel(job: job, reason: reason))), .log(.init(level: .info, text: "\(job) cancelled on \(unit) (\(reason))"))]
    }

    // MARK: - Unit messages

    private mutating func handle(_ report: UnitReport, from unit: String, now: Int64) -> [DispatchAction] {
        switch report {
        case .status(let status):
            let previousConn = taxis[unit]?.conn
            let offlineActions = online(unit, status.online, now: now)
            if let conn = status.conn { taxis[unit, default: Taxi()].conn = conn }
            let actions = status.t.map { apply(state: status.state, zone: status.zone, at: $0.milliseconds, to: unit, live: true) } ?? []
            return offlineActions + actions + reconcile(unit) + resendLostOffer(to: unit, after: status, previousConn: previousConn, now: now)
                + logins.status(of: unit, state: status.state, driver: status.driver) + replanDropped(by: unit, after: status, now: now)
        case .offline(let conn):
            // A will set for an older connection than the status seen last is stale: the broker
            // published it after the unit had already come back on a new connection.
            if let conn, let current = taxis[unit]?.conn, conn < current {
                return [.log(.init(level: .info, text: "\(unit): stale last will of connection \(conn) ignored (now \(current))"))]
            }
            return [.log(.init(level: .info, text: "\(unit) offline"))] + online(unit, false, now: now) + reconcile(unit)
        case .zone(let id, let change):
            guard firstArrival(id, from: unit), let zone = change.zone else { return [] }
            var taxi = taxis[unit, default: Taxi()]
            taxi.reportsZone = true
            guard zone != taxi.zone else { return [] }
            taxi.zone = zone
            taxis[unit] = taxi
            return [.log(.init(level: .info, text: "\(unit) entered zone \(zone)"))] + reconcile(unit)
        case .ignition(let id, let change):
            // A taxi at a rank may wait with its engine off: it stays in the queue; the driver
            // (or the unit's [ignition] rule) takes it off duty if that is meant.
            guard firstArrival(id, from: unit) else { return [] }
            return [.log(.init(level: .info, text: "\(unit) ignition \(change.ignition) while \(change.state.rawValue)"))]
        case .shift(let id, let shift):
            // Logged for the dispatcher's eyes; the reference dispatcher plans nothing around shifts.
            guard firstArrival(id, from: unit) else { return [] }
            let body = shift.body
            let limit = body.limit.map { " (\($0))" } ?? ""
            return [.log(.init(
                level: .info,
                text: "\(unit) shift \(body.what)\(limit): \(body.shiftS / 60) min, on duty \(body.onDutyS / 60) min, driving \(body.drivingS / 60) min"))]
        case .soonClear(let id, let soon):
            guard firstArrival(id, from: unit) else { return [] }
            taxis[unit, default: Taxi()].soonClearJob = soon.job
            return [.log(.init(level: .info, text: "\(unit) clear in \(soon.clearInMin) min (\(soon.job))"))]
        case .cancelRequest(let id, let request):
            guard firstArrival(id, from: unit) else { return [] }
            return answer(request.body, from: unit, now: now)
        case .driverSession(let id, let session):
            guard firstArrival(id, from: unit), let driver = session.driver else { return [] }
            switch session.type {
            case .login: return logins.loggedIn(driver, on: unit, at: (session.loginT ?? session.t).milliseconds)
            case .logout:
                // The driver who accepted the taxi's pre-bookings is gone: another driver did not agree to them.
                return logins.loggedOut(driver, of: unit, loginT: session.loginT?.milliseconds, obeying: session.logout)
                    + replanPreBookings(of: unit, cancelling: "driver_logged_out", now: now)
            }
        case .logoutRefused(let id, let refusal):
            guard firstArrival(id, from: unit) else { return [] }
            return logins.refused(refusal.body, by: unit)
        case .event(let id, let transition):
            guard firstArrival(id, from: unit) else { return [] }
            if transition.to == .offered, let job = transition.job {
                if case .offering(unit, _) = requests[job]?.phase { requests[job]?.offerShown = true }
                replyProbes[ProbeKey(job: job, unit: unit)]?.offerReceivedAt = transition.t.milliseconds
                completeProbe(ProbeKey(job: job, unit: unit))
            }
            var actions: [DispatchAction] = []
            if transition.reason == "hail", let job = transition.job {
                // The taxi is busy from here on: `reconcile` keeps it out of the queue until it is available again.
                stats.hails += 1
                actions.append(.log(.init(level: .info, text: "\(unit) took a street hail (\(job)), busy until clear")))
            }
            if transition.to == .enRoute, let job = transition.job, requests[job]?.phase == .held(unit: unit) {
                requests[job]?.phase = .assigned(unit: unit)
                taxis[unit, default: Taxi()].assignedJob = job
                if taxis[unit]?.stackedJob == job {
                    taxis[unit]?.stackedJob = nil
                    stats.nextJobsStarted += 1
                } else {
                    stats.preBookingsStarted += 1
                }
                taxis[unit]?.preBookings.remove(job)
                actions.append(.log(.init(level: .info, text: "\(unit) started \(job) (\(transition.reason ?? "no reason given"))")))
            }
            return actions + apply(state: transition.to, zone: nil, at: transition.t.milliseconds, to: unit) + reconcile(unit)
        case .reply(let id, let reply):
            guard firstArrival(id, from: unit) else { return [] }
            return handle(reply, from: unit, now: now)
        case .position(let position):
            guard firstArrival(position.id, from: unit) else { return [] }
            return place(unit, at: position)
        case .lastPosition(let position):
            return place(unit, at: position)
        case .ride(let ride):
            guard firstArrival(ride.id, from: unit) else { return [] }
            stats.rides += 1
            let distance = ride.distanceM.map { "\($0) m" } ?? "distance not measured"
            let waited = ride.waitingS.map { ", waited \($0) s" } ?? ""
            var paid = ""
            if let amount = ride.fare, let currency = ride.currency {
                stats.fares[currency, default: 0] = stats.fares[currency, default: 0].saturatingAdd(amount)
                paid = ", fare \(Fare.decimal(amount, currency: currency)) \(currency) (\(ride.fareSource?.rawValue ?? "source not given"))"
            }
            if let payment = ride.payment {
                stats.payments[payment, default: 0] += 1
                paid += ", paid by \(payment)"
            }
            return [.log(.init(level: .info, text: "\(ride.job) ride summary from \(unit): \(ride.passengers) passengers, \(distance)\(waited)\(paid)"))]
        case .sos(let id, let alarm):
            guard firstArrival(id, from: unit) else { return [] }
            stats.sos += 1
            let place = alarm.fix.map { " at \($0.lat), \($0.lon)" } ?? ", position unknown"
            let job = alarm.job.map { " on \($0)" } ?? ""
            return [
                .send(unit: unit, .sosAck(SOSAck(id: id))),
                .log(.init(level: .alarm, text: "SOS from \(unit)\(place), \(alarm.state.rawValue)\(job) — acknowledged")),
            ]
        case .messageReply(let id, let reply):
            guard firstArrival(id, from: unit) else { return [] }
            if reply.invalid == nil { stats.messageReplies += 1 }
            return [Self.log(reply, from: unit)]
        case .messageRead(let id, let read):
            guard firstArrival(id, from: unit) else { return [] }
            stats.messagesRead += 1
            return [.log(.init(level: .info, text: "\(unit) read message \(read.msg)"))]
        }
    }

    /// The driver's request to drop a job (docs/dispatchsim.md, "Cancel requests"): a passenger who
    /// cannot be reached is given up, a taxi with a problem hands the request to the next taxi, and
    /// any other reason is refused, for the driver to call dispatch. A job this dispatcher has not
    /// given that taxi is confirmed: the taxi should not hold it.
    private mutating func answer(_ request: CancelRequestEvent, from unit: String, now: Int64) -> [DispatchAction] {
        let job = request.job
        let asked = "\(unit) asks to drop \(job) (\(request.reason.rawValue))"
        if requests[job]?.phase == .held(unit: unit) {
            return [.log(.init(level: .info, text: "\(asked): confirmed, offered to another taxi"))]
                + replan(job, from: unit, cancelling: request.reason.rawValue, now: now)
        }
        guard requests[job]?.phase == .assigned(unit: unit) else {
            return [.log(.init(level: .warning, text: "\(asked): not assigned to it, confirmed"))] + cancel(job: job, unit: unit, reason: "not_assigned")
        }
        switch request.reason {
        case .passengerUnreachable:
            requests[job]?.phase = .closed
            taxis[unit]?.assignedJob = nil
            stats.cancelled += 1
            return [.log(.init(level: .info, text: "\(asked): confirmed, request closed"))] + cancel(job: job, unit: unit, reason: request.reason.rawValue)
        case .vehicleProblem:
            taxis[unit]?.assignedJob = nil
            requests[job]?.phase = .reserved
            requests[job]?.allocationStart = now
            return [.log(.init(level: .info, text: "\(asked): confirmed, offered to another taxi"))]
                + cancel(job: job, unit: unit, reason: request.reason.rawValue) + offerNext(job, now: now)
        case .other:
            let refusal = JobUpdate(job: job, note: "Call dispatch", update: "\(job)-drop-refused-\(request.t)", cancelRefused: true)
            return [.send(unit: unit, .update(refusal)), .log(.init(level: .info, text: "\(asked): refused, the driver calls dispatch"))]
        }
    }

    private static func log(_ reply: MessageReply, from unit: String) -> DispatchAction {
        if let reason = reply.invalid {
            return .log(.init(level: .warning, text: "\(unit) refused message \(reply.msg ?? "?"): \(reason)"))
        }
        guard let msg = reply.msg else { return .log(.init(level: .info, text: "\(unit) says: \(reply.text ?? "")")) }
        return .log(.init(level: .info, text: "\(unit) answered message \(msg): \(reply.text ?? "")"))
    }

    /// A taxi that does not name its zone is placed by its newest position.
    private mutating func place(_ unit: String, at position: ReceivedPosition) -> [DispatchAction] {
        guard let last = position.points.last, taxis[unit]?.reportsZone != true,
              let zone = zones.zone(containing: Coordinate(lat: last.lat, lon: last.lon))?.id,
              zone != taxis[unit]?.zone else { return [] }
        taxis[unit, default: Taxi()].zone = zone
        return [.log(.init(level: .info, text: "\(unit) is in zone \(zone) by its position"))] + reconcile(unit)
    }

    /// QoS 1 and the units' outboxes deliver at least once: everything with an id counts once per unit.
    private mutating func firstArrival(_ id: String, from unit: String) -> Bool {
        if seenMessageIDs[unit, default: []].insert(id).inserted { return true }
        stats.duplicatesDropped += 1
        return false
    }

    /// `live`: a status, which units publish directly (never from their outbox), so it is the unit's
    /// present even if its clock stepped back, as when an unsynchronised system clock gives way to
    /// GPS time. Only events can be history.
    private mutating func apply(state: StateName, zone: String?, at t: Int64, to unit: String, live: Bool = false) -> [DispatchAction] {
        var taxi = taxis[unit, default: Taxi()]
        guard live || t >= taxi.stateTime else { return [] }
        taxi.stateTime = t
        var actions: [DispatchAction] = []
        if zone != nil { taxi.reportsZone = true }
        if let zone, zone != taxi.zone {
            if taxi.zone != nil { actions.append(.log(.init(level: .info, text: "\(unit) moved to zone \(zone)"))) }
            taxi.zone = zone
        }
        if state != .onBoard { taxi.soonClearJob = nil }
        if state != taxi.state {
            taxi.refusedBeside = false
            taxi.refusedForReservation = false
        }
        if let job = taxi.assignedJob, state == .available || state == .offDuty {
            taxi.assignedJob = nil
            if requests[job]?.phase == .assigned(unit: unit) {
                requests[job]?.phase = .closed
                stats.completed += 1
                actions.append(.log(.init(level: .info, text: "\(unit) finished \(job), now \(state.rawValue)")))
            }
        }
        taxi.state = state
        taxis[unit] = taxi
        return actions
    }

    private mutating func handle(_ reply: JobReply, from unit: String, now: Int64) -> [DispatchAction] {
        if reply.reply == .shown {
            stats.updatesShown += 1
            return [.log(.init(level: .info, text: "\(unit) showed update \(reply.update ?? "(no id)") of \(reply.job) to the driver"))]
        }
        guard reply.re == .jobOffer else {
            let why = reply.reason.map { ": \($0)" } ?? ""
            return [.log(.init(level: .warning, text: "\(unit) refused \(reply.re.rawValue) for \(reply.job) (\(reply.reply.rawValue))\(why)"))]
        }
        // A unit answers a redelivered offer again with a new id: the same accept is no news.
        if reply.reply == .accept, let phase = requests[reply.job]?.phase, phase == .assigned(unit: unit) || phase == .held(unit: unit) {
            stats.duplicatesDropped += 1
            return []
        }
        let key = ProbeKey(job: reply.job, unit: unit)
        guard let open = requests[reply.job], case .offering(unit, let sentAt) = open.phase else {
            replyProbes[key] = nil
            // A taxi that accepted an offer we already gave up on must not drive there.
            if reply.reply == .accept {
                return [.log(.init(level: .warning, text: "late accept of \(reply.job) from \(unit)"))]
                    + cancel(job: reply.job, unit: unit, reason: "offer_withdrawn")
            }
            return [.log(.init(level: .info, text: "late \(reply.reply.rawValue) of \(reply.job) from \(unit) ignored"))]
        }
        stats.offerToReplyMs.append(now - sentAt)
        if open.offeredBeside { stats.besideOfferReplies.append(.init(unit: unit, job: reply.job, reply: reply.reply, ms: now - sentAt)) }
        replyProbes[key]?.replyMadeAt = reply.t.milliseconds
        replyProbes[key]?.replyReceivedAt = now
        completeProbe(key)
        taxis[unit, default: Taxi()].offeredJob = nil
        var actions: [DispatchAction] = [.cancelTimer(.offerDeadline(job: reply.job, unit: unit))]
        let reason = reply.reason.map { " (\($0))" } ?? ""
        let line = "\(reply.job) \(reply.reply.rawValue) by \(unit)\(reason) after \(now - sentAt) ms"
        switch reply.reply {
        case .accept:
            stats.accepted += 1
            let assignmentMs = now - open.allocationStart
            stats.requestToAssignmentMs.append(assignmentMs)
            if let request = requests[reply.job], request.offersWithUnknownThink == 0 {
                stats.requestToAssignmentWithoutThinkMs.append(assignmentMs - request.driverThinkMs)
            }
            if open.preBooking || open.offeredAsNext {
                // The taxi goes on with what it does; the job starts with its `en_route` event.
                requests[reply.job]?.phase = .held(unit: unit)
                requests[reply.job]?.heldSince = reply.t.milliseconds
                if open.offeredAsNext {
                    taxis[unit]?.stackedJob = reply.job
                    stats.nextJobsHeld += 1
                } else {
                    taxis[unit]?.preBookings.insert(reply.job)
                    stats.preBookingsHeld += 1
                }
                let held = open.offeredAsNext ? "next job" : "pre-booking"
                return actions + [.log(.init(level: .info, text: line + ", held as \(held)"))] + reconcile(unit)
            }
            requests[reply.job]?.phase = .assigned(unit: unit)
            taxis[unit]?.assignedJob = reply.job
            actions += apply(state: .enRoute, zone: nil, at: reply.t.milliseconds, to: unit)
            return actions + [.log(.init(level: .info, text: line))] + reconcile(unit)
        case .reject, .timeout, .expired, .invalid, .shown:
            switch reply.reply {
            case .reject: stats.rejected += 1
            case .timeout: stats.timedOut += 1
            case .expired: stats.expired += 1
            // `shown` answers an update, never an offer: as senseless as `invalid` here.
            case .invalid, .shown: stats.invalid += 1
            case .accept, .busy: break
            }
            // The unit is back in `available` after any of these: to the end of its queue. A taxi
            // that was offered a pre-booking or a next job beside its job in hand goes on with it.
            if !Self.hasJobInHand(taxis[unit]?.state) {
                actions += apply(state: .available, zone: nil, at: reply.t.milliseconds, to: unit)
            }
        case .busy:
            stats.busy += 1
            // A pre-booking in the way (`reservation R at T`), or a refused side offer, leaves the
            // taxi in the state it is in; any other busy takes it out of the queues until its
            // status says available again.
            let keepsState = open.preBooking || open.offeredAsNext || reply.reason?.hasPrefix("reservation ") == true
            if open.offeredBeside { taxis[unit]?.refusedBeside = true }
            if !open.preBooking, reply.reason?.hasPrefix("reservation ") == true { taxis[unit]?.refusedForReservation = true }
            if !keepsState, reply.t.milliseconds >= taxis[unit, default: Taxi()].stateTime {
                taxis[unit]?.state = nil
                taxis[unit]?.stateTime = reply.t.milliseconds
            }
        }
        actions.append(.log(.init(level: reply.reply == .invalid ? .warning : .info, text: line)))
        return actions + reconcile(unit) + offerNext(reply.job, now: now)
    }

    private mutating func noReply(job: String, unit: String, now: Int64) -> [DispatchAction] {
        guard case .offering(unit, _) = requests[job]?.phase else { return [] }
        stats.noReply += 1
        replyProbes[ProbeKey(job: job, unit: unit)] = nil
        taxis[unit]?.offeredJob = nil
        let waited = settings.respondWithinS + settings.replyGraceS
        return [.log(.init(level: .warning, text: "\(job): no reply from \(unit) in \(waited) s, counted as timed out"))]
            + reconcile(unit) + offerNext(job, now: now)
    }

    // MARK: - Held pre-bookings planned again

    /// The held request `id` goes back to planning, as if it came in now: a pre-booking while its
    /// meeting is still more than the pre-booking lead ahead, else an ordinary reservation. The taxi
    /// that held it is sent `job/cancel` with `cancelling` as the reason (nil: it no longer holds
    /// it) and is never offered it again.
    private mutating func replan(_ id: String, from unit: String, cancelling reason: String?, now: Int64) -> [DispatchAction] {
        guard requests[id]?.phase == .held(unit: unit) else { return [] }
        if taxis[unit]?.stackedJob == id { taxis[unit]?.stackedJob = nil }
        taxis[unit]?.preBookings.remove(id)
        taxis[unit]?.refusedForReservation = false
        requests[id]?.phase = .reserved
        requests[id]?.heldSince = .min
        stats.heldReplanned += 1
        let cancelled = reason.map { cancel(job: id, unit: unit, reason: $0) } ?? []
        return cancelled + [.log(.init(level: .info, text: "\(id) no longer held by \(unit): planned again"))] + reconcile(unit) + plan(id, now: now)
    }

    private mutating func replanPreBookings(of unit: String, cancelling reason: String?, now: Int64) -> [DispatchAction] {
        (taxis[unit]?.preBookings ?? []).sorted().flatMap { replan($0, from: unit, cancelling: reason, now: now) }
    }

    /// A live status from the taxi, made after it accepted, that lists a held job neither among its
    /// pre-bookings nor as its job or next job: the unit dropped it.
    private mutating func replanDropped(by unit: String, after status: StatusMessage, now: Int64) -> [DispatchAction] {
        guard status.online, let t = status.t?.milliseconds, let taxi = taxis[unit] else { return [] }
        let listed = Set((status.upcoming ?? []).map(\.job) + [status.job, status.next].compactMap { $0 })
        let held = taxi.preBookings.union(taxi.stackedJob.map { [$0] } ?? [])
        let dropped = held.filter { !listed.contains($0) && t >= requests[$0]?.heldSince ?? .max }.sorted()
        return dropped.flatMap { job in
            [.log(.init(level: .warning, text: "\(unit) no longer lists \(job)"))] + replan(job, from: unit, cancelling: nil, now: now)
        }
    }

    /// Marks the taxi on or off line; a taxi holding pre-bookings that goes offline has
    /// `preBookingOfflineS` to come back before they go to other taxis.
    private mutating func online(_ unit: String, _ online: Bool, now: Int64) -> [DispatchAction] {
        let wasOnline = taxis[unit]?.online ?? false
        taxis[unit, default: Taxi()].online = online
        guard online != wasOnline, taxis[unit]?.preBookings.isEmpty == false else { return [] }
        if online { return [.cancelTimer(.holderOffline(unit: unit))] }
        guard settings.preBookingOfflineS > 0 else { return [] }
        return [.startTimer(.holderOffline(unit: unit), at: now.saturatingAdd(Int64(settings.preBookingOfflineS.saturatingMultiply(1000))))]
    }

    private mutating func holderStayedOffline(_ unit: String, now: Int64) -> [DispatchAction] {
        guard taxis[unit]?.online == false, taxis[unit]?.preBookings.isEmpty == false else { return [] }
        return [.log(.init(level: .warning, text: "\(unit) offline for \(settings.preBookingOfflineS) s: its pre-bookings go to other taxis"))]
            + replanPreBookings(of: unit, cancelling: "taxi_offline", now: now)
    }

    // MARK: - Queues

    /// Puts a taxi at the end of its zone's queue when it is waiting there, and takes it out of
    /// every queue otherwise. Idempotent: a taxi already queued in its zone keeps its place.
    private mutating func reconcile(_ unit: String) -> [DispatchAction] {
        let taxi = taxis[unit, default: Taxi()]
        let current = queues.first { $0.value.contains(unit) }?.key
        guard taxi.online, taxi.state == .available, taxi.offeredJob == nil, taxi.stackedJob == nil, let zone = taxi.zone else {
            removeFromQueues(unit)
            return []
        }
        guard current != zone else { return [] }
        removeFromQueues(unit)
        queues[zone, default: []].append(unit)
        return [.log(.init(level: .info, text: "\(unit) queued in \(zone) at position \(queues[zone]!.count)"))]
    }

    private mutating func removeFromQueues(_ unit: String) {
        for zone in queues.keys { queues[zone]?.removeAll { $0 == unit } }
    }
}

extension Dictionary where Key == Dispatcher.ProbeKey, Value == Dispatcher.ReplyProbe {
    /// The round trip split into the driver's think time and the rest, once all four clocks are
    /// known; the probe is then dropped.
    mutating func removeIfComplete(_ key: Key) -> (transitMs: Int64, thinkMs: Int64, offerLegMs: Int64, replyLegMs: Int64)? {
        guard let probe = self[key], let received = probe.offerReceivedAt, let made = probe.replyMadeAt,
              let arrived = probe.replyReceivedAt else { return nil }
        self[key] = nil
        let thinkMs = made.saturatingSubtract(received)
        let offerLegMs = received.saturatingSubtract(probe.offerSentAt)
        let replyLegMs = arrived.saturatingSubtract(made)
        return (offerLegMs.saturatingAdd(replyLegMs), thinkMs, offerLegMs, replyLegMs)
    }
}
