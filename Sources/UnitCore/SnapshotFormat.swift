import TaxiProtocol

/// The state snapshot as the store keeps it (`unit_snapshot`). Its format belongs to the store, not
/// to Swift's names or to the wire: every key is spelled out here, and wire types inside it (`Place`,
/// `Fix`, `JobReply`) are written through their own stored forms, so a change to the protocol
/// cannot change what units in the field have on disk.
///
/// Version 1 is exactly what release 038dd7a wrote with synthesized `Codable` (its files are in
/// Tests/Fixtures/release-038dd7a/snapshots) plus the version, `"v":1`; without `v` it is 1.
/// A release that changes the shape writes the next version and keeps reading every earlier one. A
/// snapshot of a version this release does not know fails to decode, and the unit sets it aside.
///
/// Version 2 is version 1 plus optional keys, each absent when it has no value: the job's
/// `dropoff` and `passenger`, the ride start's `arrivedAt`, and the snapshot's `freeSeats` and
/// `reminder`. A version 1 snapshot therefore reads as the same state with none of them.
///
/// Version 3 is version 2 plus the driver's pending `cancelRequest`, the job's `appliedUpdates`
/// and its optional `fare` (`StoredFare`), each absent when there is none; a version 1 or 2
/// snapshot reads as having none. An earlier release refuses it (and sets it aside) rather than
/// losing the request unseen. Format 3 also keeps the pre-bookings (`upcoming`), the stacked `next`
/// job and the `sideOffer` being answered beside the job in hand, each absent when there is none.
/// The driver's open `shift` (`Shift`, its spans in milliseconds) is an
/// optional key of version 3 too, absent without a shift. Format 3 as written is frozen in
/// Tests/Fixtures/release-d770513/snapshots.
extension UnitSnapshot: Codable {
    /// The format this release writes.
    static let formatVersion = 3
    /// Every format this release reads.
    static let readableVersions = 1...3

    private enum CodingKeys: String, CodingKey {
        case version = "v"
        case state, panic, answeredOffers, freeSeats, reminder, cancelRequest, appliedUpdates, upcoming, next, sideOffer, shift
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let version = try container.decodeIfPresent(Int.self, forKey: .version) ?? 1
        guard Self.readableVersions.contains(version) else {
            throw DecodingError.dataCorruptedError(
                forKey: .version, in: container,
                debugDescription: "snapshot format \(version); this release reads formats \(Self.readableVersions.lowerBound) to \(Self.readableVersions.upperBound)")
        }
        // The walking skeleton stored the state's name (`{"state":"off_duty"}`): an updated unit
        // starts where it was.
        if let legacy = try? container.decode(String.self, forKey: .state) {
            switch legacy {
            case "off_duty": state = .offDuty
            case "available": state = .available
            default:
                throw DecodingError.dataCorruptedError(forKey: .state, in: container, debugDescription: "unknown state \(legacy)")
            }
        } else {
            state = try container.decode(DriverState.self, forKey: .state)
        }
        panic = try container.decodeIfPresent(Panic.self, forKey: .panic)
        answeredOffers = try container.decodeIfPresent([AnsweredOffer].self, forKey: .answeredOffers) ?? []
        // Read back from the disk: a count no taxi has is refused rather than trusted.
        freeSeats = try container.decodeIfPresent(Int.self, forKey: .freeSeats)
        if let freeSeats, !(0...99).contains(freeSeats) {
            throw DecodingError.dataCorruptedError(forKey: .freeSeats, in: container, debugDescription: "free seats \(freeSeats) out of range")
        }
        reminder = try container.decodeIfPresent(Reminder.self, forKey: .reminder)
        cancelRequest = try container.decodeIfPresent(CancelRequest.self, forKey: .cancelRequest)
        appliedUpdates = try container.decodeIfPresent([AppliedUpdate].self, forKey: .appliedUpdates) ?? []
        upcoming = try container.decodeIfPresent([Reservation].self, forKey: .upcoming) ?? []
        next = try container.decodeIfPresent(Job.self, forKey: .next)
        sideOffer = try container.decodeIfPresent(PendingOffer.self, forKey: .sideOffer)
        shift = try container.decodeIfPresent(Shift.self, forKey: .shift)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(Self.formatVersion, forKey: .version)
        try container.encode(state, forKey: .state)
        try container.encodeIfPresent(panic, forKey: .panic)
        try container.encode(answeredOffers, forKey: .answeredOffers)
        try container.encodeIfPresent(freeSeats, forKey: .freeSeats)
        try container.encodeIfPresent(reminder, forKey: .reminder)
        try container.encodeIfPresent(cancelRequest, forKey: .cancelRequest)
        if !appliedUpdates.isEmpty { try container.encode(appliedUpdates, forKey: .appliedUpdates) }
        if !upcoming.isEmpty { try container.encode(upcoming, forKey: .upcoming) }
        try container.encodeIfPresent(next, forKey: .next)
        try container.encodeIfPresent(sideOffer, forKey: .sideOffer)
        try container.encodeIfPresent(shift, forKey: .shift)
    }
}

extension Shift: Codable {
    private enum CodingKeys: String, CodingKey {
        case startedAt, startOdometerKm, onDutyBeforeMs, onDutySince, drivingMs, continuousDrivingMs, lastFixAt, restingSince, warned
    }

    private enum WarningKeys: String, CodingKey {
        case limit, reached, minutesLeft
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        func span(_ key: CodingKeys) throws -> Duration {
            let milliseconds = try container.decode(Int64.self, forKey: key)
            // Read back from the disk: a negative span is refused rather than trusted.
            guard milliseconds >= 0 else { throw DecodingError.dataCorruptedError(forKey: key, in: container, debugDescription: "negative span") }
            return .milliseconds(milliseconds)
        }
        var warnings: [ShiftWarning] = []
        if var list = try? container.nestedUnkeyedContainer(forKey: .warned) {
            while !list.isAtEnd {
                let warning = try list.nestedContainer(keyedBy: WarningKeys.self)
                let stored = try warning.decode(String.self, forKey: .limit)
                guard let limit = ShiftLimit(rawValue: stored) else {
                    throw DecodingError.dataCorruptedError(forKey: .limit, in: warning, debugDescription: "unknown shift limit \(stored)")
                }
                warnings.append(ShiftWarning(
                    limit: limit, reached: try warning.decode(Bool.self, forKey: .reached), minutesLeft: try warning.decode(Int.self, forKey: .minutesLeft)))
            }
        }
        self.init(
            startedAt: try container.decode(UnitTime.self, forKey: .startedAt), startOdometerKm: try container.decodeIfPresent(Int.self, forKey: .startOdometerKm),
            onDutyBefore: try span(.onDutyBeforeMs), onDutySince: try container.decodeIfPresent(UnitTime.self, forKey: .onDutySince),
            driving: try span(.drivingMs), continuousDriving: try span(.continuousDrivingMs),
            lastFixAt: try container.decodeIfPresent(UnitTime.self, forKey: .lastFixAt),
            restingSince: try container.decodeIfPresent(UnitTime.self, forKey: .restingSince), warned: warnings)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(startedAt, forKey: .startedAt)
        try container.encodeIfPresent(startOdometerKm, forKey: .startOdometerKm)
        try container.encode(onDutyBefore.wholeMilliseconds, forKey: .onDutyBeforeMs)
        try container.encodeIfPresent(onDutySince, forKey: .onDutySince)
        try container.encode(driving.wholeMilliseconds, forKey: .drivingMs)
        try container.encode(continuousDriving.wholeMilliseconds, forKey: .continuousDrivingMs)
        try container.encodeIfPresent(lastFixAt, forKey: .lastFixAt)
        try container.encodeIfPresent(restingSince, forKey: .restingSince)
        if !warned.isEmpty {
            var list = container.nestedUnkeyedContainer(forKey: .warned)
            for warning in warned {
                var entry = list.nestedContainer(keyedBy: WarningKeys.self)
                // The wire name, spelled here: the store keeps it whatever the enum becomes.
                let stored = switch warning.limit {
                case .continuousDriving: "continuous_driving"
                case .shiftLength: "shift_length"
                }
                try entry.encode(stored, forKey: .limit)
                try entry.encode(warning.reached, forKey: .reached)
                try entry.encode(warning.minutesLeft, forKey: .minutesLeft)
            }
        }
    }
}

/// One key per state, holding an object with the state's values: `_0` for the unlabelled one, then
/// the labelled ones (the shape Swift synthesizes for an enum with associated values).
extension DriverState: Codable {
    private enum CodingKeys: String, CodingKey {
        case offDuty, available, paused, offered, enRoute, atPickup, onBoard
    }

    private enum ValueKeys: String, CodingKey {
        case value = "_0"
        case arrivedAt, since
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        guard container.allKeys.count == 1, let key = container.allKeys.first else {
            throw DecodingError.typeMismatch(DriverState.self, DecodingError.Context(
                codingPath: container.codingPath, debugDescription: "one state expected, found \(container.allKeys.map(\.stringValue))"))
        }
        let values = try container.nestedContainer(keyedBy: ValueKeys.self, forKey: key)
        switch key {
        case .offDuty: self = .offDuty
        case .available: self = .available
        case .paused: self = .paused(try values.decode(PauseReason.self, forKey: .value))
        case .offered: self = .offered(try values.decode(PendingOffer.self, forKey: .value))
        case .enRoute: self = .enRoute(try values.decode(Job.self, forKey: .value))
        case .atPickup: self = .atPickup(try values.decode(Job.self, forKey: .value), arrivedAt: try values.decode(UnitTime.self, forKey: .arrivedAt))
        case .onBoard: self = .onBoard(try values.decode(Job.self, forKey: .value), since: try values.decode(RideStart.self, forKey: .since))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        switch self {
        case .offDuty:
            _ = container.nestedContainer(keyedBy: ValueKeys.self, forKey: .offDuty)
        case .available:
            _ = container.nestedContainer(keyedBy: ValueKeys.self, forKey: .available)
        case .paused(let reason):
            var values = container.nestedContainer(keyedBy: ValueKeys.self, forKey: .paused)
            try values.encode(reason, forKey: .value)
        case .offered(let offer):
            var values = container.nestedContainer(keyedBy: ValueKeys.self, forKey: .offered)
            try values.encode(offer, forKey: .value)
        case .enRoute(let job):
            var values = container.nestedContainer(keyedBy: ValueKeys.self, forKey: .enRoute)
            try values.encode(job, forKey: .value)
        case .atPickup(let job, let arrivedAt):
            var values = container.nestedContainer(keyedBy: ValueKeys.self, forKey: .atPickup)
            try values.encode(job, forKey: .value)
            try values.encode(arrivedAt, forKey: .arrivedAt)
        case .onBoard(let job, let since):
            var values = container.nestedContainer(keyedBy: ValueKeys.self, forKey: .onBoard)
            try values.encode(job, forKey: .value)
            try values.encode(since, forKey: .since)
        }
    }
}

extension Job: Codable {
    private enum CodingKeys: String, CodingKey {
        case id, pickup, passengers, meetingTime, shared, note, addedPickups, dropoff, passenger, fare
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            id: try container.decode(String.self, forKey: .id),
            pickup: try container.decode(StoredPlace.self, forKey: .pickup).place,
            passengers: try container.decode(Int.self, forKey: .passengers),
            meetingTime: try container.decodeIfPresent(UnitTime.self, forKey: .meetingTime),
            shared: try container.decode(Bool.self, forKey: .shared),
            note: try container.decodeIfPresent(String.self, forKey: .note),
            addedPickups: try container.decode([StoredPlace].self, forKey: .addedPickups).map(\.place),
            dropoff: try container.decodeIfPresent(StoredPlace.self, forKey: .dropoff)?.place,
            passenger: try container.decodeIfPresent(StoredPassenger.self, forKey: .passenger)?.passenger,
            fare: try container.decodeIfPresent(StoredFare.self, forKey: .fare)?.fare)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(StoredPlace(pickup), forKey: .pickup)
        try container.encode(passengers, forKey: .passengers)
        try container.encodeIfPresent(meetingTime, forKey: .meetingTime)
        try container.encode(shared, forKey: .shared)
        try container.encodeIfPresent(note, forKey: .note)
        try container.encode(addedPickups.map(StoredPlace.init), forKey: .addedPickups)
        try container.encodeIfPresent(dropoff.map(StoredPlace.init), forKey: .dropoff)
        try container.encodeIfPresent(passenger.map(StoredPassenger.init), forKey: .passenger)
        try container.encodeIfPresent(fare.map(StoredFare.init), forKey: .fare)
    }
}

extension PendingOffer: Codable {
    private enum CodingKeys: String, CodingKey {
        case job, receivedAt, deadline
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            job: try container.decode(Job.self, forKey: .job), receivedAt: try container.decode(UnitTime.self, forKey: .receivedAt),
            deadline: try container.decode(UnitTime.self, forKey: .deadline))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(job, forKey: .job)
        try container.encode(receivedAt, forKey: .receivedAt)
        try container.encode(deadline, forKey: .deadline)
    }
}

extension Reservation: Codable {
    private enum CodingKeys: String, CodingKey {
        case job, meetingTime
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(job: try container.decode(Job.self, forKey: .job), meetingTime: try container.decode(UnitTime.self, forKey: .meetingTime))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(job, forKey: .job)
        try container.encode(meetingTime, forKey: .meetingTime)
    }
}

extension RideStart: Codable {
    private enum CodingKeys: String, CodingKey {
        case time, fix, arrivedAt
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            time: try container.decode(UnitTime.self, forKey: .time), fix: try container.decodeIfPresent(StoredFix.self, forKey: .fix)?.fix,
            arrivedAt: try container.decodeIfPresent(UnitTime.self, forKey: .arrivedAt))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(time, forKey: .time)
        try container.encodeIfPresent(fix.map(StoredFix.init), forKey: .fix)
        try container.encodeIfPresent(arrivedAt, forKey: .arrivedAt)
    }
}

extension Reminder: Codable {
    private enum CodingKeys: String, CodingKey {
        case job, at
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(job: try container.decode(String.self, forKey: .job), at: try container.decode(UnitTime.self, forKey: .at))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(job, forKey: .job)
        try container.encode(at, forKey: .at)
    }
}

extension AnsweredOffer: Codable {
    private enum CodingKeys: String, CodingKey {
        case job, reply, lastSentAt
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            job: try container.decode(String.self, forKey: .job), reply: try container.decodeIfPresent(StoredReply.self, forKey: .reply)?.reply,
            lastSentAt: try container.decodeIfPresent(UnitTime.self, forKey: .lastSentAt))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(job, forKey: .job)
        try container.encodeIfPresent(reply.map(StoredReply.init), forKey: .reply)
        try container.encodeIfPresent(lastSentAt, forKey: .lastSentAt)
    }
}

extension CancelRequest: Codable {
    private enum CodingKeys: String, CodingKey {
        case job, reason, at
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let stored = try container.decode(String.self, forKey: .reason)
        guard let reason = CancelReason(rawValue: stored) else {
            throw DecodingError.dataCorruptedError(forKey: .reason, in: container, debugDescription: "unknown cancel reason \(stored)")
        }
        self.init(job: try container.decode(String.self, forKey: .job), reason: reason, at: try container.decode(UnitTime.self, forKey: .at))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(job, forKey: .job)
        // The wire name, spelled here: the store keeps it whatever the protocol's enum becomes.
        let stored = switch reason {
        case .passengerUnreachable: "passenger_unreachable"
        case .vehicleProblem: "vehicle_problem"
        case .other: "other"
        }
        try container.encode(stored, forKey: .reason)
        try container.encode(at, forKey: .at)
    }
}

extension AppliedUpdate: Codable {
    private enum CodingKeys: String, CodingKey {
        case key, reply, lastSentAt
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            key: try container.decode(String.self, forKey: .key), reply: try container.decode(StoredReply.self, forKey: .reply).reply,
            lastSentAt: try container.decodeIfPresent(UnitTime.self, forKey: .lastSentAt))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(key, forKey: .key)
        try container.encode(StoredReply(reply), forKey: .reply)
        try container.encodeIfPresent(lastSentAt, forKey: .lastSentAt)
    }
}

extension Panic: Codable {
    private enum CodingKeys: String, CodingKey {
        case raisedAt, messageID
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(raisedAt: try container.decode(UnitTime.self, forKey: .raisedAt), messageID: try container.decodeIfPresent(String.self, forKey: .messageID))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(raisedAt, forKey: .raisedAt)
        try container.encodeIfPresent(messageID, forKey: .messageID)
    }
}

/// A pickup inside the snapshot.
private struct StoredPlace: Codable {
    var place: Place

    init(_ place: Place) {
        self.place = place
    }

    private enum CodingKeys: String, CodingKey {
        case lat, lon, address
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        place = Place(
            lat: try container.decode(Double.self, forKey: .lat), lon: try container.decode(Double.self, forKey: .lon),
            address: try container.decodeIfPresent(String.self, forKey: .address))
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(place.lat, forKey: .lat)
        try container.encode(place.lon, forKey: .lon)
        try container.encodeIfPresent(place.address, forKey: .address)
    }
}

/// A job's passenger inside the snapshot (format 2).
private struct StoredPassenger: Codable {
    var passenger: Passenger

    init(_ passenger: Passenger) {
        self.passenger = passenger
    }

    private enum CodingKeys: String, CodingKey {
        case name, phone, pickupCode
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        passenger = Passenger(
            name: try container.decodeIfPresent(String.self, forKey: .name), phone: try container.decodeIfPresent(String.self, forKey: .phone),
            pickupCode: try container.decodeIfPresent(String.self, forKey: .pickupCode))
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(passenger.name, forKey: .name)
        try container.encodeIfPresent(passenger.phone, forKey: .phone)
        try container.encodeIfPresent(passenger.pickupCode, forKey: .pickupCode)
    }
}

/// The fix a ride started with, inside the snapshot.
private struct StoredFix: Codable {
    var fix: Fix

    init(_ fix: Fix) {
        self.fix = fix
    }

    private enum CodingKeys: String, CodingKey {
        case time, latitude, longitude, speed, track, accuracy
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        fix = Fix(
            time: try container.decode(UnitTime.self, forKey: .time), latitude: try container.decode(Double.self, forKey: .latitude),
            longitude: try container.decode(Double.self, forKey: .longitude), speed: try container.decodeIfPresent(Double.self, forKey: .speed),
            track: try container.decodeIfPresent(Double.self, forKey: .track), accuracy: try container.decodeIfPresent(Double.self, forKey: .accuracy))
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(fix.time, forKey: .time)
        try container.encode(fix.latitude, forKey: .latitude)
        try container.encode(fix.longitude, forKey: .longitude)
        try container.encodeIfPresent(fix.speed, forKey: .speed)
        try container.encodeIfPresent(fix.track, forKey: .track)
        try container.encodeIfPresent(fix.accuracy, forKey: .accuracy)
    }
}

/// An answer the unit gave, inside the snapshot. The topic and code are stored as their wire
/// names, which the protocol (docs/protocol.md) freezes as well.
private struct StoredReply: Codable {
    var reply: JobReply

    init(_ reply: JobReply) {
        self.reply = reply
    }

    private enum CodingKeys: String, CodingKey {
        case job, re, reply, reason, t, update
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        reply = JobReply(
            job: try container.decode(String.self, forKey: .job), re: try container.decode(InboundTopic.self, forKey: .re),
            reply: try container.decode(ReplyCode.self, forKey: .reply), reason: try container.decodeIfPresent(String.self, forKey: .reason),
            t: try container.decode(UnitTime.self, forKey: .t), update: try container.decodeIfPresent(String.self, forKey: .update))
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(reply.job, forKey: .job)
        try container.encode(reply.re, forKey: .re)
        try container.encode(reply.reply, forKey: .reply)
        try container.encodeIfPresent(reply.reason, forKey: .reason)
        try container.encode(reply.t, forKey: .t)
        try container.encodeIfPresent(reply.update, forKey: .update)
    }
}

/// A job's fare inside the snapshot (format 3): `amount` in minor units, `currency`, and `source`
/// spelled as the store's own words. Read back from the disk, a fare out of `FareLimits` is refused.
struct StoredFare: Codable {
    var fare: Fare

    init(_ fare: Fare) {
        self.fare = fare
    }

    private enum CodingKeys: String, CodingKey {
        case amount, currency, source
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let amount = try container.decode(Int64.self, forKey: .amount)
        let currency = try container.decode(String.self, forKey: .currency)
        if let problem = FareLimits.check(fare: amount, currency: currency) {
            throw DecodingError.dataCorruptedError(forKey: .amount, in: container, debugDescription: problem)
        }
        let source: FareSource
        switch try container.decode(String.self, forKey: .source) {
        case "meter": source = .meter
        case "quoted": source = .quoted
        case "typed": source = .typed
        case let other: throw DecodingError.dataCorruptedError(forKey: .source, in: container, debugDescription: "unknown fare source \(other)")
        }
        fare = Fare(amount: amount, currency: currency, source: source)
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(fare.amount, forKey: .amount)
        try container.encode(fare.currency, forKey: .currency)
        let source = switch fare.source {
        case .meter: "meter"
        case .quoted: "quoted"
        case .typed: "typed"
        }
        try container.encode(source, forKey: .source)
    }
}
