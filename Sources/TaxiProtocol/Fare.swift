/// A ride's price: an exact count of the currency's minor units (cents), never a binary fraction,
/// with its ISO 4217 code (docs/protocol.md, "Fares").
public struct Fare: Sendable, Equatable, Codable {
    /// Minor units of `currency` (2350 EUR is 23.50 €; 2350 JPY is 2350 ¥).
    public var amount: Int64
    /// ISO 4217 alphabetic code: three upper-case letters.
    public var currency: String
    public var source: FareSource

    public init(amount: Int64, currency: String, source: FareSource) {
        self.amount = amount
        self.currency = currency
        self.source = source
    }

    /// `EUR 23.50`: the amount with the currency's decimals, `separator` between the units and the
    /// minor units.
    public func formatted(decimalSeparator separator: String = ".") -> String {
        "\(currency) \(Fare.decimal(amount, currency: currency, separator: separator))"
    }

    /// The minor units written with the currency's decimals (`2350` → `23.50`).
    public static func decimal(_ amount: Int64, currency: String, separator: String = ".") -> String {
        let digits = FareLimits.minorDigits(currency)
        guard digits > 0 else { return String(amount) }
        var divisor: Int64 = 1
        for _ in 0..<digits { divisor *= 10 }
        let fraction = String(amount.magnitude % UInt64(divisor))
        let sign = amount < 0 ? "-" : ""
        return "\(sign)\(amount.magnitude / UInt64(divisor))\(separator)\(String(repeating: "0", count: digits - fraction.count))\(fraction)"
    }
}

/// Where the fare the ride carries came from.
public enum FareSource: String, Sendable, Codable, CaseIterable {
    /// The taximeter reported it to the unit.
    case meter
    /// The offer's `fare`: agreed with the passenger at booking.
    case quoted
    /// The driver typed it at clear.
    case typed
}

/// What a fare and a payment may be, on the wire and at the terminal.
public enum FareLimits {
    /// Minor units: from nothing to 99 999 999 (999 999.99 in a currency with cents), which the
    /// terminal shows on one row with its code.
    public static let amount: ClosedRange<Int64> = 0...99_999_999
    /// Digits the driver may type: the amount's upper bound has eight.
    public static let typedDigits = 8
    /// A payment method's name: 1–16 bytes of `a`–`z`, `0`–`9`, `_`, `-` (it goes on the wire as it is).
    public static let paymentBytes = 1...16
    /// Methods the terminal offers, one digit key each.
    public static let payments = 1...4

    /// An ISO 4217 alphabetic code's shape. The list itself changes over the years; a code the unit
    /// does not know is shown with two decimals.
    public static func isCurrency(_ code: String) -> Bool {
        code.utf8.count == 3 && code.utf8.allSatisfy { (0x41...0x5A).contains($0) }
    }

    public static func isPayment(_ name: String) -> Bool {
        paymentBytes.contains(name.utf8.count) && name.utf8.allSatisfy { byte in
            (0x61...0x7A).contains(byte) || (0x30...0x39).contains(byte) || byte == 0x5F || byte == 0x2D
        }
    }

    /// ISO 4217's minor unit: the digits after the decimal separator. Two unless listed.
    public static func minorDigits(_ currency: String) -> Int {
        switch currency {
        case "BIF", "CLP", "DJF", "GNF", "ISK", "JPY", "KMF", "KRW", "PYG", "RWF", "UGX", "UYI", "VND", "VUV", "XAF", "XOF", "XPF": 0
        case "BHD", "IQD", "JOD", "KWD", "LYD", "OMR", "TND": 3
        case "CLF", "UYW": 4
        default: 2
        }
    }

    /// Why `fare` and `currency` as a message carries them cannot be used; nil when they can.
    public static func check(fare: Int64?, currency: String?) -> String? {
        switch (fare, currency) {
        case (nil, nil): return nil
        case (nil, _?): return "currency is given without fare"
        case (_?, nil): return "fare is given without currency"
        case (let fare?, let currency?):
            if !amount.contains(fare) { return "fare must be from \(amount.lowerBound) to \(amount.upperBound) minor units" }
            if !isCurrency(currency) { return "currency must be an ISO 4217 code of three upper-case letters" }
            return nil
        }
    }
}
