import TaxiProtocol

extension PauseReason {
    /// The reason `pause next` moves on to.
    public var next: PauseReason {
        let all = Self.allCases
        return all[(all.firstIndex(of: self)! + 1) % all.count]
    }
}

/// What the driver can do. Buttons, the serial terminal and `taxiunitctl press` all parse their
/// words with `DriverInput.parse`, so every input path means the same thing.
public enum DriverInput: Sendable, Equatable, Codable {
    case duty
    case accept
    case reject(reason: String?)
    case arrived
    /// nil: the job's announced passenger count.
    case passengersOnBoard(Int?)
    case clear
    /// Clear with the payment picked and a fare typed at the terminal's fare screen (`FareEntry`),
    /// or given to `clear <payment> [fare]`.
    case clearSettled(Settlement)
    case noShow
    case pause(PauseReason)
    /// `pause next`, one key for every reason: from available, a break; while paused, the next
    /// reason (break, refuel, personal, other, break, …).
    case pauseNext
    case resume
    case sos
    /// Free seats set by hand (`seats 3`); nil: one fewer than now (a passenger got in).
    case seats(Int?)
    /// The terminal shows the job's next page of details; the machine only checks there is a job.
    case details
    /// `jobs`: the terminal shows the shift's finished rides and totals, a page per press; the
    /// machine has nothing to do with it.
    case history
    /// `bookings`: the terminal shows the accepted pre-bookings, one per press; the machine has
    /// nothing to do with it.
    case preBookings

    /// `msg`, `reply [N]`, `send`: the driver's messages (DriverMessages.swift).
    case message(MessageInput)
    /// On board: the taxi will be clear in this many minutes (nil: `[job] soon_clear_min`).
    case soonClear(minutes: Int?)
    /// En route or at the pickup: ask the dispatcher to drop the job (`drop unreachable`,
    /// `drop vehicle`, `drop` for another reason). The job stands until the dispatcher answers.
    case cancelRequest(CancelReason)
    /// `shift start [km]`, `shift end [km]`: the driver's working day (ShiftTracker.swift).
    case shift(ShiftInput)

    /// The words `drop` takes, and the reason each means.
    public static let dropReasons: [String: CancelReason] = [
        "unreachable": .passengerUnreachable, "passenger_unreachable": .passengerUnreachable,
        "vehicle": .vehicleProblem, "vehicle_problem": .vehicleProblem, "other": .other,
    ]

    /// What `soon N` may announce.
    public static let soonClearMinutes = 1...120


    /// The first word of every input, for help texts.
    public static let words = ["duty", "accept", "reject", "arrived", "pob", "clear", "noshow", "pause", "resume", "sos", "seats", "info", "msg", "reply", "send", "soon", "drop", "shift", "jobs", "bookings"]

    public enum ParseError: Error, Sendable, Equatable, CustomStringConvertible {
        case empty
        case unknown(String)
        case badArgument(input: String, problem: String)
        case unexpectedArgument(input: String)

        /// The state machine's words and the driver session's (`SessionInput`).
        private static var known: String { (DriverInput.words + SessionInput.words).joined(separator: ", ") }

        public var description: String {
            switch self {
            case .empty: "no input given; known: \(Self.known)"
            case .unknown(let word): "unknown input \"\(word)\"; known: \(Self.known)"
            case .badArgument(let input, let problem): "\(input): \(problem)"
            case .unexpectedArgument(let input): "\(input) takes no argument"
            }
        }
    }

    /// Parses `"pob 3"`, `"reject too far"`, `"pause refuel"`, … Words are case-insensitive.
    public static func parse(_ text: String) -> Result<DriverInput, ParseError> {
        let words = text.split(whereSeparator: \.isWhitespace).map(String.init)
        guard let first = words.first else { return .failure(.empty) }
        let word = first.lowercased()
        let rest = words.dropFirst().joined(separator: " ")
        let simple: [String: DriverInput] = [
            "duty": .duty, "accept": .accept, "arrived": .arrived, "noshow": .noShow,
            "resume": .resume, "sos": .sos, "info": .details, "jobs": .history, "bookings": .preBookings, "msg": .message(.read), "send": .message(.send),
        ]
        if let input = simple[word] {
            return rest.isEmpty ? .success(input) : .failure(.unexpectedArgument(input: word))
        }
        switch word {
        case "clear":
            return parseClear(rest.split(separator: " ").map(String.init))
        case "reject":
            // The reason goes to the dispatcher in the reply: bounded and printable like any text on the wire.
            if let problem = InboundMessage.checkText(rest, field: "reason") { return .failure(.badArgument(input: word, problem: problem)) }
            return .success(.reject(reason: rest.isEmpty ? nil : rest))
        case "pob":
            guard !rest.isEmpty else { return .success(.passengersOnBoard(nil)) }
            guard let count = Int(rest), count >= 1 else {
                return .failure(.badArgument(input: word, problem: "passengers must be a whole number from 1, found \"\(rest)\""))
            }
            return .success(.passengersOnBoard(count))
        case "seats":
            guard !rest.isEmpty else { return .success(.seats(nil)) }
            guard let count = Int(rest), (0...99).contains(count) else {
                return .failure(.badArgument(input: word, problem: "free seats must be a whole number from 0 to 99, found \"\(rest)\""))
            }
            return .success(.seats(count))
        case "reply":
            guard !rest.isEmpty else { return .success(.message(.choose(nil))) }
            guard let number = Int(rest), (1...MessageLimits.cannedCount.upperBound).contains(number) else {
                return .failure(.badArgument(input: word, problem: "reply must be a whole number from 1 to \(MessageLimits.cannedCount.upperBound), found \"\(rest)\""))
            }
            return .success(.message(.choose(number)))
        case "soon":
            guard !rest.isEmpty else { return .success(.soonClear(minutes: nil)) }
            guard let minutes = Int(rest), soonClearMinutes.contains(minutes) else {
                return .failure(.badArgument(
                    input: word, problem: "minutes must be a whole number from \(soonClearMinutes.lowerBound) to \(soonClearMinutes.upperBound), found \"\(rest)\""))
            }
            return .success(.soonClear(minutes: minutes))
        case "drop":
            guard !rest.isEmpty else { return .success(.cancelRequest(.other)) }
            guard let reason = dropReasons[rest.lowercased()] else {
                return .failure(.badArgument(input: word, problem: "reason must be one of unreachable, vehicle, other, found \"\(rest)\""))
            }
            return .success(.cancelRequest(reason))
        case "shift":
            return parseShift(rest.split(separator: " ").map(String.init))
        case "pause":
            guard !rest.isEmpty else { return .success(.pause(.other)) }
            if rest.lowercased() == "next" { return .success(.pauseNext) }
            guard let reason = PauseReason(rawValue: rest.lowercased()) else {
                let known = PauseReason.allCases.map(\.rawValue).joined(separator: ", ")
                return .failure(.badArgument(input: word, problem: "reason must be one of \(known), found \"\(rest)\""))
            }
            return .success(.pause(reason))
        default:
            return .failure(.unknown(first))
        }
    }

    /// `shift start`, `shift start 123456` (the odometer in whole km), `shift end [km]`.
    private static func parseShift(_ words: [String]) -> Result<DriverInput, ParseError> {
        guard let action = words.first?.lowercased(), action == "start" || action == "end", words.count <= 2 else {
            return .failure(.badArgument(input: "shift", problem: "shift takes start or end and an optional odometer in km, found \"\(words.joined(separator: " "))\""))
        }
        var odometer: Int?
        if words.count == 2 {
            guard words[1].utf8.allSatisfy({ (0x30...0x39).contains($0) }), let km = Int(words[1]), ShiftInput.odometerKm.contains(km) else {
                return .failure(.badArgument(
                    input: "shift", problem: "the odometer must be whole km from 0 to \(ShiftInput.odometerKm.upperBound), found \"\(words[1])\""))
            }
            odometer = km
        }
        return .success(.shift(action == "start" ? .start(odometerKm: odometer) : .end(odometerKm: odometer)))
    }

    /// `clear`, `clear card`, `clear cash 2350` (the fare in minor units), `clear 2350`.
    private static func parseClear(_ words: [String]) -> Result<DriverInput, ParseError> {
        guard !words.isEmpty else { return .success(.clear) }
        var settlement = Settlement()
        for word in words {
            if word.utf8.allSatisfy({ (0x30...0x39).contains($0) }) {
                guard settlement.typedFare == nil, let fare = Int64(word), FareLimits.amount.contains(fare) else {
                    return .failure(.badArgument(
                        input: "clear", problem: "the fare must be one whole number of minor units up to \(FareLimits.amount.upperBound), found \"\(word)\""))
                }
                settlement.typedFare = fare
            } else {
                let payment = word.lowercased()
                guard settlement.payment == nil, FareLimits.isPayment(payment) else {
                    return .failure(.badArgument(input: "clear", problem: "clear takes one payment method and a fare in minor units, found \"\(word)\""))
                }
                settlement.payment = payment
            }
        }
        return .success(.clearSettled(settlement))
    }
}
