import StrictJSON

/// Job messages on the wire (docs/protocol.md, "Jobs"). Inbound types are validated here, before
/// the state machine sees them, so the machine only ever handles well-formed requests.

public struct Coordinate: Sendable, Equatable, Codable {
    public var lat: Double
    public var lon: Double

    public init(lat: Double, lon: Double) {
        self.lat = lat
        self.lon = lon
    }

    /// Great-circle distance in metres.
    public func distance(to other: Coordinate) -> Double {
        Geodesy.distanceM(latitude: lat, longitude: lon, toLatitude: other.lat, longitude: other.lon)
    }

    /// Length of the path through `points`, in order.
    public static func pathLength(_ points: [Coordinate]) -> Double {
        zip(points, points.dropFirst()).reduce(0) { $0 + $1.0.distance(to: $1.1) }
    }
}

/// A place to pick someone up.
public struct Place: Sendable, Equatable, Codable {
    public var lat: Double
    public var lon: Double
    public var address: String?

    public init(lat: Double, lon: Double, address: String? = nil) {
        self.lat = lat
        self.lon = lon
        self.address = address
    }

    public var coordinate: Coordinate { Coordinate(lat: lat, lon: lon) }

    public var label: String { address ?? "\(lat), \(lon)" }
}

/// `job/offer`: the dispatcher proposes a job.
public struct JobOffer: Sendable, Equatable, Codable {
    public var job: String
    public var pickup: Place
    /// The answer window; the unit's `[job] offer_timeout_s` when absent.
    public var respondWithinS: Double?
    public var passengers: Int?
    /// Reservations: when the customer expects the taxi, ms since the epoch.
    public var meetingTime: Int64?
    public var shared: Bool?
    public var note: String?
    /// Where the ride goes, when the booking says.
    public var dropoff: Place?
    /// Who to pick up.
    public var passenger: Passenger?
    /// Dispatcher clock when the offer was made, ms; lets the unit recognise an offer that waited
    /// in the broker longer than its answer window.
    public var t: Int64?
    /// The price agreed at booking, in minor units of `currency` (`FareLimits`); both or neither.
    public var fare: Int64?
    public var currency: String?
    /// `true`: the job to start after the ride on board (a taxi with passengers answers it instead of
    /// `busy`); a free taxi takes it as any offer.
    public var next: Bool?

    enum CodingKeys: String, CodingKey {
        case job, pickup, passengers, shared, note, dropoff, passenger, t, fare, currency, next
        case respondWithinS = "respond_within_s"
        case meetingTime = "meeting_time"
    }

    public init(
        job: String, pickup: Place, respondWithinS: Double? = nil, passengers: Int? = nil, meetingTime: Int64? = nil,
        shared: Bool? = nil, note: String? = nil, dropoff: Place? = nil, passenger: Passenger? = nil, t: Int64? = nil,
        fare: Int64? = nil, currency: String? = nil, next: Bool? = nil
    ) {
        self.next = next
        self.job = job
        self.pickup = pickup
        self.respondWithinS = respondWithinS
        self.passengers = passengers
        self.meetingTime = meetingTime
        self.shared = shared
        self.note = note
        self.dropoff = dropoff
        self.passenger = passenger
        self.t = t
        self.fare = fare
        self.currency = currency
    }

    /// The offer's fare as the driver and the ride carry it; nil without one.
    public var quotedFare: Fare? {
        guard let fare, let currency else { return nil }
        return Fare(amount: fare, currency: currency, source: .quoted)
    }
}

/// `job/offer.passenger`: who the driver picks up. Every field is optional.
public struct Passenger: Sendable, Equatable, Codable {
    public var name: String?
    /// For the driver to call; digits, spaces, `+ - ( )` only.
    public var phone: String?
    /// What the passenger tells the driver to prove the booking is theirs.
    public var pickupCode: String?

    enum CodingKeys: String, CodingKey {
        case name, phone
        case pickupCode = "pickup_code"
    }

    public init(name: String? = nil, phone: String? = nil, pickupCode: String? = nil) {
        self.name = name
        self.phone = phone
        self.pickupCode = pickupCode
    }
}

/// `job/cancel`: the passenger withdrew.
public struct JobCancel: Sendable, Equatable, Codable {
    public var job: String
    public var reason: String?

    public init(job: String, reason: String? = nil) {
        self.job = job
        self.reason = reason
    }
}

/// `job/update`: shared rides. Either field may be given, or both.
public struct JobUpdate: Sendable, Equatable, Codable {
    public var job: String
    /// The job's new passenger count.
    public var passengers: Int?
    /// A further pickup; its passengers add to the job's.
    public var addPickup: AddedPickup?
    public var note: String?
    /// The dispatcher's id for this update, echoed in the unit's answer so it can be matched.
    public var update: String?
    /// `true`: the dispatcher refuses the driver's cancel request; the job goes on. A refusal
    /// rides on `job/update` rather than `job/cancel` so that a unit that does not know the field
    /// answers `invalid` instead of dropping the job.
    public var cancelRefused: Bool?
    /// A pre-booking's new meeting time, ms since the epoch (unit clock).
    public var meetingTime: Int64?

    public struct AddedPickup: Sendable, Equatable, Codable {
        public var lat: Double
        public var lon: Double
        public var address: String?
        public var passengers: Int?

        public init(lat: Double, lon: Double, address: String? = nil, passengers: Int? = nil) {
            self.lat = lat
            self.lon = lon
            self.address = address
            self.passengers = passengers
        }

        public var place: Place { Place(lat: lat, lon: lon, address: address) }
    }

    enum CodingKeys: String, CodingKey {
        case job, passengers, note, update
        case addPickup = "add_pickup"
        case cancelRefused = "cancel_refused"
        case meetingTime = "meeting_time"
    }

    public init(
        job: String, passengers: Int? = nil, addPickup: AddedPickup? = nil, note: String? = nil, update: String? = nil, cancelRefused: Bool? = nil,
        meetingTime: Int64? = nil
    ) {
        self.meetingTime = meetingTime
        self.cancelRefused = cancelRefused
        self.job = job
        self.passengers = passengers
        self.addPickup = addPickup
        self.note = note
        self.update = update
    }
}

/// `sos/ack`: the dispatcher has seen the alarm. Every field is optional.
public struct SOSAck: Sendable, Equatable, Codable {
    /// The `id` of the `sos` message acknowledged.
    public var id: String?
    public var note: String?

    public init(id: String? = nil, note: String? = nil) {
        self.id = id
        self.note = note
    }
}

/// What a dispatcher sends a unit, one case per topic: what the unit decodes, and what a
/// dispatcher (dispatchsim) encodes.
public enum InboundMessage: Sendable, Equatable {
    case offer(JobOffer)
    case cancel(JobCancel)
    case update(JobUpdate)
    case sosAck(SOSAck)
    case message(TextMessage)
    case queue(QueuePosition)

    public var topic: InboundTopic {
        switch self {
        case .offer: .jobOffer
        case .cancel: .jobCancel
        case .update: .jobUpdate
        case .sosAck: .sosAck
        case .message: .msg
        case .queue: .queue
        }
    }
}

/// Why an inbound payload was refused. `job` is set when the job id (a `msg`'s `id`) could still be
/// read, so the dispatcher can be answered `invalid`.
public struct InboundProblem: Error, Sendable, Equatable {
    public var topic: InboundTopic
    public var job: String?
    public var reason: String

    /// A message the unit died handling twice, set aside unread.
    public static func poisoned(_ topic: InboundTopic) -> InboundProblem {
        InboundProblem(topic: topic, job: nil, reason: "set aside unread: the unit died twice while handling it")
    }

    /// A payload of `bytes`, over the topic's limit: refused whether it was read or not.
    public static func tooLarge(_ topic: InboundTopic, bytes: Int) -> InboundProblem {
        InboundProblem(topic: topic, job: nil, reason: "payload of \(bytes) bytes is over the \(topic.maxPayloadBytes)-byte limit")
    }

    public init(topic: InboundTopic, job: String?, reason: String) {
        self.topic = topic
        self.job = job
        self.reason = reason
    }
}

/// What an inbound message may hold (docs/protocol.md, "Limits"). Everything beyond is refused
/// before it can reach the state machine, the store or the log.
public enum InboundLimits {
    /// Job ids, alarm ids.
    public static let idBytes = 128
    /// Addresses, notes, reasons.
    public static let textBytes = 500
    public static let respondWithinS: ClosedRange<Double> = 1...3600
    /// Per offer, per update and per added pickup; the unit's seats bound them further.
    public static let passengers: ClosedRange<Int> = 1...99
    /// `t` and `meeting_time` must be within this of the unit clock.
    public static let timeWindowMs: Int64 = 366 * 86_400_000
    /// `passenger.name`.
    public static let nameBytes = 100
    /// `passenger.phone`: the longest international number (15 digits) with room for spacing.
    public static let phoneBytes = 32
    /// `passenger.pickup_code`.
    public static let pickupCodeBytes = 16
}

extension InboundTopic {
    /// The largest payload read on any inbound topic.
    public static var largestPayloadBytes: Int { allCases.map(\.maxPayloadBytes).max() ?? 0 }

    /// The largest payload read on this topic; a larger one is refused unread.
    public var maxPayloadBytes: Int {
        switch self {
        case .jobOffer, .jobCancel, .jobUpdate: 16 * 1024
        case .sosAck, .queue: 1024
        case .msg: 4 * 1024
        }
    }
}

extension InboundMessage {
    /// Decodes and checks a payload received on `topic` at unit clock `now`. Job ids may be JSON
    /// strings or integers; an integer id is handled as its decimal string. The payload must be
    /// strict JSON (UTF-8, no duplicate keys, no NaN, bounded nesting) within the topic's size; it
    /// is parsed once, and the message read from that parse.
    public static func decode(topic: InboundTopic, payload: [UInt8], now: UnitTime) -> Result<InboundMessage, InboundProblem> {
        guard payload.count <= topic.maxPayloadBytes else { return .failure(.tooLarge(topic, bytes: payload.count)) }
        let document: JSONDocument
        do {
            document = try JSONDocument.parse(payload)
        } catch {
            return .failure(InboundProblem(topic: topic, job: nil, reason: "payload is not strict JSON: \(error.message)"))
        }
        guard case .object = document else {
            return .failure(InboundProblem(topic: topic, job: nil, reason: "payload is not a JSON object"))
        }
        let idKey = idField(topic)
        let job = jobID(document[idKey]).flatMap { checkID($0, field: idKey) == nil ? $0 : nil }
        func problem(_ reason: String) -> Result<InboundMessage, InboundProblem> {
            .failure(InboundProblem(topic: topic, job: job, reason: reason))
        }
        if hasNumberOutOfRange(document) { return problem("a number is out of range") }
        if topic != .sosAck && topic != .queue {
            guard let given = document[idKey] else { return problem("\(idKey) is missing") }
            if case .string(let text) = given, let reason = checkID(text, field: idKey) { return problem(reason) }
            guard let job, !job.isEmpty else { return problem("\(idKey) must be a non-empty string or an integer") }
        }
        var normalised = document
        if let job, case .object(let members) = document {
            normalised = .object(members.map { $0.key == idKey ? (key: idKey, value: .string(job)) : $0 })
        }
        do {
            switch topic {
            case .jobOffer:
                // Money is never rounded: a fraction or an exponent is refused, not read as a number.
                if case .number(let literal)? = normalised["fare"], Int64(literal) == nil {
                    return problem("fare must be a whole number of minor units (2350 for 23.50)")
                }
                let offer = try normalised.decode(JobOffer.self)
                if let reason = check(offer, now: now) { return problem(reason) }
                return .success(.offer(offer))
            case .jobCancel:
                let cancel = try normalised.decode(JobCancel.self)
                if let reason = checkText(cancel.reason, field: "reason") { return problem(reason) }
                return .success(.cancel(cancel))
            case .jobUpdate:
                let update = try normalised.decode(JobUpdate.self)
                if let reason = check(update, now: now) { return problem(reason) }
                return .success(.update(update))
            case .sosAck:
                let ack = try normalised.decode(SOSAck.self)
                if let id = ack.id, let reason = checkID(id, field: "id") { return problem(reason) }
                if let reason = checkText(ack.note, field: "note") { return problem(reason) }
                return .success(.sosAck(ack))
            case .msg:
                let message = try normalised.decode(TextMessage.self)
                if let reason = check(message, now: now) { return problem(reason) }
                return .success(.message(message))
            case .queue:
                let queue = try normalised.decode(QueuePosition.self)
                if let reason = check(queue, now: now) { return problem(reason) }
                return .success(.queue(queue))
            }
        } catch let error as DecodingError {
            return problem(describe(error))
        } catch {
            return problem("payload cannot be read")
        }
    }

    /// A number no `Double` holds (`1e999`), anywhere in the payload, even where no field reads it.
    static func hasNumberOutOfRange(_ value: JSONDocument) -> Bool {
        switch value {
        case .object(let members): members.contains { hasNumberOutOfRange($0.value) }
        case .array(let elements): elements.contains(where: hasNumberOutOfRange)
        case .number(let literal): !(Double(literal)?.isFinite ?? false)
        case .string, .bool, .null: false
        }
    }

    /// A string, or an integer literal that fits an `Int64` (as its decimal string).
    static func jobID(_ value: JSONDocument?) -> String? {
        switch value {
        case .string(let text): text
        case .number(let literal): Int64(literal).map(String.init)
        default: nil
        }
    }

    /// Ids become MQTT payloads, log lines and terminal text: bounded and printable.
    public static func checkID(_ id: String, field: String) -> String? {
        if id.utf8.count > InboundLimits.idBytes { return "\(field) is longer than \(InboundLimits.idBytes) bytes" }
        if id.unicodeScalars.contains(where: isControl) { return "\(field) contains control characters" }
        return nil
    }

    /// Texts shown to the driver: bounded; line breaks and other control characters refused.
    public static func checkText(_ text: String?, field: String, limit: Int = InboundLimits.textBytes) -> String? {
        guard let text else { return nil }
        if text.utf8.count > limit { return "\(field) is longer than \(limit) bytes" }
        if text.unicodeScalars.contains(where: isControl) { return "\(field) contains control characters" }
        return nil
    }

    public static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
    }

    static func checkPassengers(_ passengers: Int?, field: String) -> String? {
        guard let passengers, !InboundLimits.passengers.contains(passengers) else { return nil }
        return "\(field) must be from \(InboundLimits.passengers.lowerBound) to \(InboundLimits.passengers.upperBound)"
    }

    /// Within a year of the unit clock either way.
    public static func checkTime(_ time: Int64?, field: String, now: UnitTime) -> String? {
        guard let time else { return nil }
        let distance = time.saturatingSubtract(now.milliseconds)
        guard distance.magnitude <= InboundLimits.timeWindowMs.magnitude else { return "\(field) is more than a year from the unit clock" }
        return nil
    }

    static func check(_ offer: JobOffer, now: UnitTime) -> String? {
        if let reason = checkCoordinate(lat: offer.pickup.lat, lon: offer.pickup.lon, field: "pickup") { return reason }
        if let reason = checkText(offer.pickup.address, field: "pickup.address") { return reason }
        if let window = offer.respondWithinS, !InboundLimits.respondWithinS.contains(window) {
            return "respond_within_s must be from \(Int(InboundLimits.respondWithinS.lowerBound)) to \(Int(InboundLimits.respondWithinS.upperBound))"
        }
        if let reason = checkPassengers(offer.passengers, field: "passengers") { return reason }
        if let reason = checkTime(offer.meetingTime, field: "meeting_time", now: now) { return reason }
        if let reason = checkTime(offer.t, field: "t", now: now) { return reason }
        if let dropoff = offer.dropoff {
            if let reason = checkCoordinate(lat: dropoff.lat, lon: dropoff.lon, field: "dropoff") { return reason }
            if let reason = checkText(dropoff.address, field: "dropoff.address") { return reason }
        }
        if let passenger = offer.passenger, let reason = check(passenger) { return reason }
        if let reason = FareLimits.check(fare: offer.fare, currency: offer.currency) { return reason }
        return checkText(offer.note, field: "note")
    }

    static func check(_ passenger: Passenger) -> String? {
        if let reason = checkText(passenger.name, field: "passenger.name", limit: InboundLimits.nameBytes) { return reason }
        if let phone = passenger.phone {
            if phone.utf8.count > InboundLimits.phoneBytes { return "passenger.phone is longer than \(InboundLimits.phoneBytes) bytes" }
            guard phone.contains(where: \.isNumber), phone.unicodeScalars.allSatisfy({ "0123456789+-() ".unicodeScalars.contains($0) }) else {
                return "passenger.phone may hold only digits, spaces and + - ( )"
            }
        }
        return checkText(passenger.pickupCode, field: "passenger.pickup_code", limit: InboundLimits.pickupCodeBytes)
    }

    static func check(_ update: JobUpdate, now: UnitTime) -> String? {
        if update.passengers == nil && update.addPickup == nil && update.note == nil && update.cancelRefused == nil && update.meetingTime == nil {
            return "update has none of passengers, add_pickup, note, cancel_refused, meeting_time"
        }
        if let reason = checkTime(update.meetingTime, field: "meeting_time", now: now) { return reason }
        if update.cancelRefused == false { return "cancel_refused must be true when given" }
        if let id = update.update, let reason = checkID(id, field: "update") { return reason }
        if let reason = checkPassengers(update.passengers, field: "passengers") { return reason }
        if let added = update.addPickup {
            if let reason = checkCoordinate(lat: added.lat, lon: added.lon, field: "add_pickup") { return reason }
            if let reason = checkPassengers(added.passengers, field: "add_pickup.passengers") { return reason }
            if let reason = checkText(added.address, field: "add_pickup.address") { return reason }
        }
        return checkText(update.note, field: "note")
    }

    static func checkCoordinate(lat: Double, lon: Double, field: String) -> String? {
        guard lat.isFinite, lon.isFinite, abs(lat) <= 90, abs(lon) <= 180 else {
            return "\(field) lat/lon out of range"
        }
        return nil
    }

    static func describe(_ error: DecodingError) -> String {
        func path(_ context: DecodingError.Context) -> String {
            context.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: ".")
        }
        switch error {
        case .keyNotFound(let key, let context):
            let parent = path(context)
            return "\(parent.isEmpty ? "" : parent + ".")\(key.stringValue) is missing"
        case .typeMismatch(let type, let context), .valueNotFound(let type, let context):
            return "\(path(context)) must be \(type == String.self ? "a string" : type == Bool.self ? "a boolean" : "a number")"
        case .dataCorrupted(let context):
            return "\(path(context)): \(context.debugDescription)"
        @unknown default:
            return "\(error)"
        }
    }
}

// MARK: Outbound

/// The answer to an offer. `invalid` also answers a malformed job message whose job id was readable.
public enum ReplyCode: String, Sendable, Codable, CaseIterable {
    case accept, reject, timeout, busy, expired, invalid
    /// A `job/update` applied and shown to the driver.
    case shown
}

/// What the state machine decides to answer; the shell adds `unit`, `seq` and `id` on enqueue.
public struct JobReply: Sendable, Equatable, Codable {
    public var job: String
    /// The kind of message answered: `job/offer` for the answer to an offer, `job/update` for
    /// an update shown or refused, another topic for an `invalid` answer to a refused message.
    public var re: InboundTopic
    public var reply: ReplyCode
    public var reason: String?
    /// Unit clock when the answer was decided, ms.
    public var t: UnitTime
    /// The `update` id of the `job/update` answered, when it had one.
    public var update: String?

    public init(job: String, re: InboundTopic = .jobOffer, reply: ReplyCode, reason: String? = nil, t: UnitTime, update: String? = nil) {
        self.job = job
        self.re = re
        self.reply = reply
        self.reason = reason
        self.t = t
        self.update = update
    }
}

/// One state transition, published on `event`.
public struct Transition: Sendable, Equatable, Codable {
    public var t: UnitTime
    public var from: StateName
    public var to: StateName
    public var job: String?
    /// Why: pause reason, reply code, `cancelled`, `no_show`, `arrived_by_gps`, …
    public var reason: String?

    public init(t: UnitTime, from: StateName, to: StateName, job: String? = nil, reason: String? = nil) {
        self.t = t
        self.from = from
        self.to = to
        self.job = job
        self.reason = reason
    }
}

/// The panic alarm as decided by the state machine.
public struct SOSAlarm: Sendable, Equatable, Codable {
    public var t: UnitTime
    public var state: StateName
    public var job: String?
    /// The last fix the unit had, if any.
    public var fix: PositionPoint?

    public init(t: UnitTime, state: StateName, job: String?, fix: PositionPoint?) {
        self.t = t
        self.state = state
        self.job = job
        self.fix = fix
    }
}

