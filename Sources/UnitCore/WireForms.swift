import TaxiProtocol

// The core's values as the protocol's messages: the protocol knows nothing of the core, so what
// turns a fix, a status or a ride into wire form is here.

extension PositionPoint {
    public init(_ fix: Fix, staleAge: Duration? = nil) {
        self.init(t: fix.time.milliseconds, lat: fix.latitude, lon: fix.longitude, spd: fix.speed, hdg: fix.track, acc: fix.accuracy)
        stale = staleAge.map { _ in true }
        age = staleAge?.wholeMilliseconds
    }
}

extension Coordinate {
    public init(_ fix: Fix) {
        self.init(lat: fix.latitude, lon: fix.longitude)
    }
}

extension OwnTracksLocation {
    public init(_ fix: Fix, tid: String) {
        self.init(
            timeMs: fix.time.milliseconds, latitude: fix.latitude, longitude: fix.longitude, accuracyM: fix.accuracy, speedMS: fix.speed, course: fix.track,
            altitudeM: fix.altitude, tid: tid)
    }
}

extension StatusMessage {
    public init(
        online: Bool, unit: String, status: UnitStatus, zone: String?, t: UnitTime?, outbox: OutboxDepth? = nil, aside: [String: Int]? = nil,
        driver: String? = nil
    ) {
        self.init(
            online: online, unit: unit, state: status.state, reason: status.pauseReason, job: status.job, zone: zone, seatsLeft: status.seatsLeft,
            ignition: status.ignitionOn.map { $0 ? "on" : "off" }, t: t, outbox: outbox, aside: aside, driver: driver)
        upcoming = status.upcoming.isEmpty ? nil : status.upcoming
        next = status.next
    }
}

extension ZoneEventMessage {
    public init(unit: String, seq: Int64, id: String, t: UnitTime, change: ZoneChange, driver: String? = nil) {
        self.init(ZoneEvent(t: t, zone: change.to, zoneLeft: change.from), unit: unit, seq: seq, id: id, driver: driver)
    }
}

extension IgnitionEventMessage {
    public init(unit: String, seq: Int64, id: String, t: UnitTime, change: IgnitionChange, driver: String? = nil) {
        self.init(IgnitionEvent(t: t, ignition: change.on ? "on" : "off", state: change.state), unit: unit, seq: seq, id: id, driver: driver)
    }
}

extension SoonClearEventMessage {
    public init(unit: String, seq: Int64, id: String, t: UnitTime, soonClear: SoonClear, driver: String? = nil) {
        self.init(SoonClearEvent(t: t, job: soonClear.job, clearInMin: soonClear.minutes), unit: unit, seq: seq, id: id, driver: driver)
    }
}

extension CancelRequestEventMessage {
    public init(unit: String, seq: Int64, id: String, request: CancelRequest, state: StateName, driver: String? = nil) {
        self.init(CancelRequestEvent(t: request.at, job: request.job, reason: request.reason, state: state), unit: unit, seq: seq, id: id, driver: driver)
    }
}

extension RideMessage {
    /// `distanceM`: what the unit measured, nil when it could not.
    public init(_ ride: RideSummary, distanceM: Double?, unit: String, seq: Int64, id: String, driver: String? = nil) {
        let body = FinishedRide(
            job: ride.job, passengers: ride.passengers,
            pickup: Stop(t: ride.pickupTime, at: ride.pickupFix.map(Coordinate.init)), drop: Stop(t: ride.dropTime, at: ride.dropFix.map(Coordinate.init)),
            distanceM: distanceM.flatMap { Int64(roundingChecked: $0) }.map { max(0, $0) }, waitingS: ride.waiting.map { max(.zero, $0).wholeSeconds },
            fare: ride.fare, payment: ride.payment)
        self.init(body, unit: unit, seq: seq, id: id, driver: driver)
    }
}

extension ShiftEventMessage {
    public init(unit: String, seq: Int64, id: String, report: ShiftReport, driver: String? = nil) {
        let counters = report.counters
        let body = ShiftEvent(
            t: report.at, what: report.what.rawValue, shiftS: counters.length.wholeSeconds, onDutyS: counters.onDuty.wholeSeconds,
            drivingS: counters.driving.wholeSeconds, continuousDrivingS: counters.continuousDriving.wholeSeconds, odometerKm: report.odometerKm,
            limit: report.limit?.rawValue, breakS: report.breakLength?.wholeSeconds)
        self.init(body, unit: unit, seq: seq, id: id, driver: driver)
    }
}
