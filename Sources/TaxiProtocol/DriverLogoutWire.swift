import StrictJSON

/// One driver on one taxi (docs/protocol.md, "One driver, one taxi"): the unit announces each
/// login and logout on `event`, and the dispatcher logs out a unit whose driver logged in on
/// another one with `driver/logout`.

/// `event` with `"type":"login"` or `"type":"logout"`; the envelope's `driver` is the driver who
/// logged in or out.
public typealias DriverSessionEventMessage = Envelope<DriverSessionEvent>

/// The body of a `DriverSessionEventMessage`.
public struct DriverSessionEvent: Sendable, Equatable, Codable {
    public enum Kind: String, Sendable, Equatable, Codable {
        case login
        case logout
    }

    /// Why a driver was logged out.
    public enum Reason: String, Sendable, Equatable, Codable {
        /// The driver's own `logout`.
        case driver
        /// The dispatcher's `driver/logout`: the driver logged in on another unit.
        case loggedInElsewhere = "logged_in_elsewhere"
    }

    public var type: Kind
    /// Unit clock of the login or logout.
    public var t: UnitTime
    /// Unit clock of the login the session began with: with the unit, it names the session.
    public var loginT: UnitTime?
    /// Logouts only.
    public var reason: Reason?
    /// The unit the driver logged in on, for `logged_in_elsewhere`.
    public var elsewhere: String?
    /// The `id` of the `driver/logout` this logout obeys.
    public var logout: String?

    public init(type: Kind, t: UnitTime, loginT: UnitTime?, reason: Reason? = nil, elsewhere: String? = nil, logout: String? = nil) {
        self.type = type
        self.t = t
        self.loginT = loginT
        self.reason = reason
        self.elsewhere = elsewhere
        self.logout = logout
    }

    enum CodingKeys: String, CodingKey {
        case type, t, reason, elsewhere, logout
        case loginT = "login_t"
    }
}

/// `event` with `"type":"logout_refused"`: the unit did not obey a `driver/logout`, and why.
public typealias LogoutRefusedEventMessage = Envelope<LogoutRefusedEvent>

public struct LogoutRefusedEvent: Sendable, Equatable, Codable {
    public enum Reason: String, Sendable, Equatable, Codable, CaseIterable {
        /// Nobody is logged in: the logout came late or twice.
        case notLoggedIn = "not_logged_in"
        /// Another driver is logged in.
        case otherDriver = "other_driver"
        /// The driver is logged in, but by another login than the one named (`login_t`).
        case otherLogin = "other_login"
        /// The taxi is on duty: the driver logs out off duty; the dispatcher sends the logout
        /// again when the status says `off_duty`.
        case onDuty = "on_duty"
        /// The message could not be read (`problem` says why).
        case invalid
    }

    public var type = "logout_refused"
    public var t: UnitTime
    /// The `id` of the `driver/logout` refused; omitted when it could not be read.
    public var logout: String?
    public var reason: Reason
    public var problem: String?

    public init(t: UnitTime, logout: String?, reason: Reason, problem: String? = nil) {
        self.t = t
        self.logout = logout
        self.reason = reason
        self.problem = problem
    }
}

/// `driver/logout`, dispatcher → unit: log this driver out, because of `reason`.
public struct DriverLogout: Sendable, Equatable, Codable {
    public static let topic = ContractTopic.driverLogout

    public var id: String
    public var driver: String
    /// The login to end, as the unit announced it; without it, whatever login the driver has.
    public var loginT: Int64?
    /// `logged_in_elsewhere`, the one reason a dispatcher logs a driver out.
    public var reason: DriverSessionEvent.Reason
    /// The unit the driver logged in on.
    public var elsewhere: String

    public init(id: String, driver: String, loginT: Int64?, elsewhere: String, reason: DriverSessionEvent.Reason = .loggedInElsewhere) {
        self.id = id
        self.driver = driver
        self.loginT = loginT
        self.reason = reason
        self.elsewhere = elsewhere
    }

    enum CodingKeys: String, CodingKey {
        case id, driver, reason, elsewhere
        case loginT = "login_t"
    }

    public static let maxPayloadBytes = 1024

    /// Why a payload on `driver/logout` was refused; `id` when it could still be read.
    public struct Problem: Error, Sendable, Equatable {
        public var id: String?
        public var reason: String

        public init(id: String?, reason: String) {
            self.id = id
            self.reason = reason
        }
    }

    /// Decodes and checks a payload received at unit clock `now`, as strictly as every inbound message.
    public static func decode(payload: [UInt8], now: UnitTime) -> Result<DriverLogout, Problem> {
        guard payload.count <= maxPayloadBytes else {
            return .failure(Problem(id: nil, reason: "payload of \(payload.count) bytes is over the \(maxPayloadBytes)-byte limit"))
        }
        let document: JSONDocument
        do {
            document = try JSONDocument.parse(payload)
        } catch {
            return .failure(Problem(id: nil, reason: "payload is not strict JSON: \(error.message)"))
        }
        var id: String?
        if case .string(let text)? = document["id"], !text.isEmpty, InboundMessage.checkID(text, field: "id") == nil { id = text }
        func problem(_ reason: String) -> Result<DriverLogout, Problem> { .failure(Problem(id: id, reason: reason)) }
        guard case .object = document else { return problem("payload is not a JSON object") }
        guard id != nil else { return problem("id must be a non-empty string of at most \(InboundLimits.idBytes) printable bytes") }
        if InboundMessage.hasNumberOutOfRange(document) { return problem("a number is out of range") }
        let logout: DriverLogout
        do {
            logout = try document.decode(DriverLogout.self)
        } catch let error as DecodingError {
            return problem(InboundMessage.describe(error))
        } catch {
            return problem("payload cannot be read")
        }
        guard DriverID.isValid(logout.driver) else { return problem("driver must be 1-32 letters, digits, - or _") }
        if let reason = InboundMessage.checkTime(logout.loginT, field: "login_t", now: now) { return problem(reason) }
        if logout.reason != .loggedInElsewhere { return problem("reason must be logged_in_elsewhere") }
        if logout.elsewhere.isEmpty { return problem("elsewhere must not be empty") }
        if let reason = InboundMessage.checkID(logout.elsewhere, field: "elsewhere") { return problem(reason) }
        return .success(logout)
    }
}

/// A driver id (schema `$defs/driver_id`): what a keypad or a badge reader sends, 1...32
/// characters of letters, digits, `-`, `_`.
public enum DriverID {
    public static func isValid(_ text: some StringProtocol) -> Bool {
        (1...32).contains(text.utf8.count) && text.utf8.allSatisfy { byte in
            (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || byte == 0x2D || byte == 0x5F
        }
    }
}
