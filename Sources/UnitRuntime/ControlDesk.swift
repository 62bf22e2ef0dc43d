import ControlSocket
import LocalCache
import Logging
import TaxiProtocol
import UnitCore

/// What a driver input did: what the driver is told, and whether it was refused.
struct DriverAnswer {
    var told: [String]
    var refused: Bool
}

/// Answers `taxiunitctl` over the control socket. Called from inside the engine loop, so every
/// answer sees one consistent state; what it needs of the engine is passed in.
struct ControlDesk {
    let store: LocalCache
    let logLevel: LogLevelControl?
    let logger: Logger

    /// `status`: the unit's status now. `press`: feeds a driver input to the machine and returns
    /// what the driver was told; a refused input is answered `ok: false` with the reason as message. `inFlight`: the outbox rows libmosquitto holds. `configLayers`:
    /// the fleet's documents in force.
    func answer(
        _ request: ControlRequest, status: () -> ControlStatus, press: (String) -> Result<DriverAnswer, DriverInput.ParseError>,
        inFlight: Set<Int64>, configLayers: () -> [ControlConfigLayer]
    ) -> ControlResponse {
        switch request.cmd {
        case .status:
            return ControlResponse(ok: true, status: status())
        case .press:
            switch press(request.input ?? "") {
            case .failure(let problem):
                return .failure(problem.description)
            case .success(let answer):
                let told = answer.told.joined(separator: "; ")
                return ControlResponse(ok: !answer.refused, error: answer.refused ? "refused: \(told)" : nil, message: told)
            }
        case .outbox:
            return outboxListing(limitPerClass: request.limit ?? 10, inFlight: inFlight)
        case .jobs:
            return rideHistory(last: request.limit ?? 20)
        case .config:
            return ControlResponse(ok: true, layers: configLayers())
        case .logLevel:
            return answerLogLevel(request.input)
        }
    }

    /// Sets the level when one is named (until the next start: `[log] level` and `--log-level`
    /// stay what a start uses), and answers the level in force.
    private func answerLogLevel(_ wanted: String?) -> ControlResponse {
        guard let logLevel else { return .failure("this daemon's log level cannot be changed while it runs") }
        if let wanted {
            guard let level = Logger.Level(rawValue: wanted) else {
                let levels = Logger.Level.allCases.map(\.rawValue).joined(separator: ", ")
                return .failure("unknown log level \(LogExcerpt.of(wanted, limit: 40)); one of \(levels)")
            }
            let before = logLevel.current()
            // Said at the more verbose of the two levels, so that the change itself is in the log.
            if level > .notice { logger.notice("log level changed", metadata: ["from": "\(before)", "to": "\(level)"]) }
            logLevel.set(level)
            if level <= .notice { logger.notice("log level changed", metadata: ["from": "\(before)", "to": "\(level)"]) }
        }
        return ControlResponse(ok: true, message: logLevel.current().rawValue)
    }

    private func outboxListing(limitPerClass: Int, inFlight: Set<Int64>) -> ControlResponse {
        do {
            let overview = try store.outboxOverview(limitPerClass: max(0, limitPerClass))
            return ControlResponse(ok: true, outbox: ControlOutboxListing(
                depthByClass: Self.byClassName(overview.depth),
                oldest: overview.oldest.map {
                    ControlOutboxEntry(
                        messageClass: "\($0.messageClass)", topic: $0.topic, id: $0.messageID, createdAt: $0.createdAt.milliseconds,
                        inFlight: inFlight.contains($0.rowID))
                }))
        } catch {
            return .failure("cannot read the outbox: \(error)")
        }
    }

    private func rideHistory(last: Int) -> ControlResponse {
        do {
            let rides = try store.rides().suffix(max(0, last)).reversed().map { ride in
                ControlRide(
                    job: ride.job, passengers: ride.passengers, pickupTime: ride.pickupTime.milliseconds, dropTime: ride.dropTime.milliseconds,
                    pickupPosition: ride.pickupPosition.map { .init(lat: $0.lat, lon: $0.lon) },
                    dropPosition: ride.dropPosition.map { .init(lat: $0.lat, lon: $0.lon) }, distanceM: ride.distanceM,
                    fare: ride.fare?.amount, currency: ride.fare?.currency, fareSource: ride.fare?.source.rawValue, payment: ride.payment,
                    pickupAddress: ride.pickupAddress)
            }
            let outcomes = try store.jobOutcomes(last: max(0, last)).map {
                ControlJobOutcome(job: $0.job, endedAt: $0.time.milliseconds, outcome: $0.outcome.rawValue)
            }
            return ControlResponse(ok: true, rides: rides, jobOutcomes: outcomes)
        } catch {
            return .failure("cannot read the ride history: \(error)")
        }
    }

    /// Every class named, zero included, so scripts need not guess.
    private static func byClassName(_ depth: [MessageClass: Int]) -> [String: Int] {
        Dictionary(uniqueKeysWithValues: MessageClass.allCases.map { ("\($0)", depth[$0] ?? 0) })
    }

    /// The countdowns the terminal shows: time left to answer an offer, time to a reservation.
    static func jobStatus(_ state: DriverState, cancelRequest: CancelRequest?, now: UnitTime) -> ControlStatus.Job? {
        guard let job = state.job else { return nil }
        func secondsUntil(_ time: UnitTime) -> Int { Int(clamping: max(.zero, time - now).wholeSeconds) }
        var offerSecondsLeft: Int?
        if case .offered(let offer) = state { offerSecondsLeft = secondsUntil(offer.deadline) }
        return ControlStatus.Job(
            id: job.id, pickup: job.pickup.address ?? "\(job.pickup.lat), \(job.pickup.lon)", passengers: job.passengers,
            offerSecondsLeft: offerSecondsLeft, meetingTime: job.meetingTime?.milliseconds, meetingInS: job.meetingTime.map(secondsUntil),
            shared: job.shared, note: job.note, cancelRequested: cancelRequest.flatMap { $0.job == job.id ? $0.reason.rawValue : nil })
    }

    /// A pre-booking or the stacked job, as `status` and `jobs --upcoming` list it.
    static func queuedJobStatus(_ job: Job, now: UnitTime) -> ControlStatus.Job {
        ControlStatus.Job(
            id: job.id, pickup: job.pickup.label, passengers: job.passengers, offerSecondsLeft: nil,
            meetingTime: job.meetingTime?.milliseconds, meetingInS: job.meetingTime.map { Int(clamping: max(.zero, $0 - now).wholeSeconds) },
            shared: job.shared, note: job.note)
    }
}
