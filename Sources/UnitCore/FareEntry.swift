import TaxiProtocol

/// What the driver says at clear: how the passenger paid and, when the unit knew no fare, the fare
/// typed (minor units of `[job] currency`). Both optional: a skipped pick clears without them.
public struct Settlement: Sendable, Equatable, Codable {
    /// One of `[job] payments`.
    public var payment: String?
    public var typedFare: Int64?

    public init(payment: String? = nil, typedFare: Int64? = nil) {
        self.payment = payment
        self.typedFare = typedFare
    }
}

/// The fare and payment screen the terminal's clear key opens on board (docs/terminal.md, "Fare and
/// payment"). Without a fare from the offer or the meter the driver first types one: digits shift
/// in as minor units, `enter` goes on (without digits: no fare), `erase` takes the last digit back
/// and on none gives up. Then one digit key picks the payment (`1` the first of `payments`); the
/// clear key again skips the pick; `erase` goes back to the typing, or gives up when the fare was
/// known. Pure: the coordinator holds it while the passengers are on board.
public struct FareEntry: Sendable, Equatable {
    public let job: String
    /// The job's fare (quoted or metered); nil: the driver types one.
    public let known: Fare?
    public let payments: [String]
    /// The currency a typed fare is in.
    public let currency: String
    /// The fare typed, as digits of minor units, without leading zeros.
    public private(set) var digits = ""
    public private(set) var choosingPayment: Bool

    public enum Key: Sendable, Equatable {
        case digit(Int)
        case enter
        case erase
        /// The clear key again: skip what is asked.
        case clear
        /// Keys were lost on the way: the digits typed are dropped, so a fare missing one is never sent.
        case lost
        /// Any other key: it does nothing while the screen is open.
        case other
    }

    public enum Outcome: Sendable, Equatable {
        case typing
        case cancelled
        case submit(Settlement)
    }

    public init(job: String, known: Fare?, payments: [String], currency: String) {
        self.job = job
        self.known = known
        self.payments = payments
        self.currency = currency
        choosingPayment = known != nil
    }

    /// The fare typed so far; nil with no digits.
    public var typedFare: Int64? { digits.isEmpty ? nil : Int64(digits) }

    /// The fare the ride will carry: typed, else the job's.
    public var fare: Fare? { typedFare.map { Fare(amount: $0, currency: currency, source: .typed) } ?? known }

    public mutating func type(_ key: Key) -> Outcome {
        switch key {
        case .digit(let digit):
            if choosingPayment {
                guard (1...payments.count).contains(digit) else { return .typing }
                return .submit(Settlement(payment: payments[digit - 1], typedFare: typedFare))
            }
            guard (0...9).contains(digit), digits.count < FareLimits.typedDigits, !(digits.isEmpty && digit == 0) else { return .typing }
            digits.append(String(digit))
            return .typing
        case .enter:
            if !choosingPayment { choosingPayment = true }
            return .typing
        case .clear:
            if !choosingPayment {
                choosingPayment = true
                return .typing
            }
            return .submit(Settlement(typedFare: typedFare))
        case .erase:
            if choosingPayment {
                if known != nil { return .cancelled }
                choosingPayment = false
                return .typing
            }
            if digits.isEmpty { return .cancelled }
            digits.removeLast()
            return .typing
        case .lost:
            if !choosingPayment { digits = "" }
            return .typing
        case .other:
            return .typing
        }
    }
}
