import TaxiProtocol

/// One driver on one taxi, the dispatcher's side (docs/protocol.md, "One driver, one taxi"): which
/// login holds each driver, and the `driver/logout`s that end the others. The later login wins, by
/// the units' `login_t` (unit clocks, GPS time), not by arrival: a login made offline and delivered
/// late loses to the login the driver made since on another taxi.
public struct DriverLogins: Sendable {
    public struct Login: Sendable, Equatable {
        public var unit: String
        /// Unit clock of the login, ms.
        public var loginT: Int64

        public init(unit: String, loginT: Int64) {
            self.unit = unit
            self.loginT = loginT
        }
    }

    /// Per driver, the login that holds the driver.
    public private(set) var holders: [String: Login] = [:]
    /// Logouts sent and not yet answered, by id.
    private var unanswered: [String: (unit: String, logout: DriverLogout)] = [:]
    /// Per unit, a logout refused on duty: sent again once the unit's status says off duty.
    private var waitingOffDuty: [String: DriverLogout] = [:]
    private var sent = 0

    public init() {}

    /// `driver` logged in on `unit` at `loginT`.
    mutating func loggedIn(_ driver: String, on unit: String, at loginT: Int64) -> [DispatchAction] {
        let login = Login(unit: unit, loginT: loginT)
        guard let holder = holders[driver], holder.unit != unit else {
            holders[driver] = login
            return [.log(.init(level: .info, text: "\(driver) logged in on \(unit)"))]
        }
        // A tie goes to the login heard last.
        if loginT >= holder.loginT {
            holders[driver] = login
            return [.log(.init(level: .info, text: "\(driver) logged in on \(unit); logging out \(holder.unit)"))] + logout(driver, of: holder, elsewhere: unit)
        }
        return [.log(.init(level: .info, text: "\(driver) logged in on \(unit) before \(holder.unit); logging out \(unit)"))]
            + logout(driver, of: login, elsewhere: holder.unit)
    }

    /// `driver` logged out of `unit`, the login of `loginT` (nil: not named).
    mutating func loggedOut(_ driver: String, of unit: String, loginT: Int64?, obeying id: String?) -> [DispatchAction] {
        if let holder = holders[driver], holder.unit == unit, loginT == nil || loginT == holder.loginT { holders[driver] = nil }
        if waitingOffDuty[unit]?.driver == driver { waitingOffDuty[unit] = nil }
        if let id { unanswered[id] = nil }
        return [.log(.init(level: .info, text: "\(driver) logged out of \(unit)" + (id.map { " (\($0))" } ?? "")))]
    }

    /// The unit did not obey a logout: on duty it is sent again off duty; any other answer closes it.
    mutating func refused(_ refusal: LogoutRefusedEvent, by unit: String) -> [DispatchAction] {
        let sentLogout = refusal.logout.flatMap { unanswered.removeValue(forKey: $0) }
        if refusal.reason == .onDuty, let sentLogout { waitingOffDuty[unit] = sentLogout.logout }
        let problem = refusal.problem.map { ": \($0)" } ?? ""
        return [.log(.init(level: .warning, text: "\(unit) refused logout \(refusal.logout ?? "(unread)"): \(refusal.reason.rawValue)\(problem)"))]
    }

    /// A unit's status: off duty with the driver still logged in, a logout refused on duty goes again.
    mutating func status(of unit: String, state: StateName, driver: String?) -> [DispatchAction] {
        guard let waiting = waitingOffDuty[unit] else { return [] }
        guard driver == waiting.driver else {
            waitingOffDuty[unit] = nil
            return []
        }
        guard state == .offDuty else { return [] }
        waitingOffDuty[unit] = nil
        guard let loginT = waiting.loginT else { return [] }
        return [.log(.init(level: .info, text: "\(unit) off duty: logging out \(waiting.driver) again"))]
            + logout(waiting.driver, of: Login(unit: unit, loginT: loginT), elsewhere: waiting.elsewhere)
    }

    private mutating func logout(_ driver: String, of login: Login, elsewhere: String) -> [DispatchAction] {
        sent += 1
        let logout = DriverLogout(id: "logout-\(sent)-\(driver)", driver: driver, loginT: login.loginT, elsewhere: elsewhere)
        unanswered[logout.id] = (login.unit, logout)
        return [.logout(unit: login.unit, logout)]
    }
}
