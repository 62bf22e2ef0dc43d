import TaxiProtocol

/// Who drives the taxi: logging in and out, wrong PINs rate-limited, and each driver's terminal
/// preferences. Pure: the shell checks the PIN (it hashes, UnitCore does not) through the
/// `verify` function it passes in, stores `DriverSessionRecord` and performs what the outcome says.

/// How the terminal gets the driver's attention (notices that alert, offers).
public enum AlertStyle: String, Sendable, Codable, CaseIterable {
    /// The bell rings, and again while the alert is on screen.
    case bell
    /// Silent: the alert blinks instead.
    case blink
}

/// A driver's own terminal settings; nil: the unit's configuration.
public struct DriverPreferences: Sendable, Equatable, Codable {
    /// A catalogue name (`[unit] language` values: en, it, zu or any installed catalogue).
    public var language: String?
    public var alert: AlertStyle?

    public init(language: String? = nil, alert: AlertStyle? = nil) {
        self.language = language
        self.alert = alert
    }

    /// The language after `current` among `installed`, in name order, round the end; nil when none is.
    public static func language(after current: String, installed: [String]) -> String? {
        let names = Set(installed).sorted()
        return names.first { $0 > current } ?? names.first
    }
}

/// What the driver list says of a driver id and PIN.
public enum LoginVerdict: Sendable, Equatable {
    case accepted
    /// The id is on the list and the PIN is wrong.
    case wrongPIN
    /// No such driver on the list (or no list).
    case unknownDriver
}

/// Consecutive wrong logins on this terminal, whoever they claim to be: `freeTries` are allowed, then
/// each further failure locks logins for twice as long as the last, up to `longest`. Counted per
/// terminal rather than per driver id, so that cycling through ids gains nothing.
public struct PINLockout: Sendable, Equatable, Codable {
    public var freeTries: Int
    public var firstLock: Duration
    public var longest: Duration
    public private(set) var failures: Int
    /// Unit clock; logins are refused before it.
    public private(set) var lockedUntil: UnitTime?

    public init(
        freeTries: Int = 3, firstLock: Duration = .seconds(30), longest: Duration = .seconds(3_600), failures: Int = 0, lockedUntil: UnitTime? = nil
    ) {
        self.freeTries = max(1, freeTries)
        self.firstLock = max(.milliseconds(1), firstLock)
        self.longest = max(self.firstLock, longest)
        self.failures = max(0, failures)
        self.lockedUntil = lockedUntil
    }

    /// Whole seconds left of the lock at `now`, rounded up; nil when logins are open.
    public func secondsLocked(at now: UnitTime) -> Int? {
        guard let until = lockedUntil, now < until else { return nil }
        return Int(clamping: (until - now).wholeMilliseconds.saturatingAdd(999) / 1000)
    }

    /// A lock read back from the store, or set before the unit clock stepped back, never lasts
    /// longer than `longest` from `now`.
    public mutating func bound(at now: UnitTime) {
        if let until = lockedUntil, until - now > longest { lockedUntil = now + longest }
    }

    public mutating func failed(at now: UnitTime) {
        failures = failures.saturatingAdd(1)
        let over = failures - freeTries
        guard over >= 0 else { return }
        // 2^over, without overflowing: beyond 40 doublings the cap holds anyway.
        let doublings = Int64(min(over, 40))
        let firstMs = firstLock.wholeMilliseconds, longestMs = longest.wholeMilliseconds
        let lockMs = firstMs > longestMs >> doublings ? longestMs : min(longestMs, firstMs << doublings)
        lockedUntil = now + .milliseconds(lockMs)
    }

    public mutating func succeeded() {
        failures = 0
        lockedUntil = nil
    }
}

/// What is kept of the session across restarts (the shell's own table, not the snapshot).
public struct DriverSessionRecord: Sendable, Equatable {
    public var driver: String?
    public var failures: Int
    public var lockedUntil: UnitTime?
    /// Unit clock of the driver's login: with the unit, it names the session to the dispatcher.
    public var loggedInAt: UnitTime?

    public init(driver: String? = nil, failures: Int = 0, lockedUntil: UnitTime? = nil, loggedInAt: UnitTime? = nil) {
        self.driver = driver
        self.failures = failures
        self.lockedUntil = lockedUntil
        self.loggedInAt = loggedInAt
    }
}

/// What a driver can do about the session; parsed from the same words as every input
/// (`taxiunitctl press`, terminal keys).
public enum SessionInput: Sendable, Equatable {
    case login(driver: String, pin: String)
    /// `login` alone (a terminal key): the terminal asks for the id and the PIN (`LoginEntry`).
    case loginPrompt
    case logout
    /// `lang <name>`: the logged-in driver's language.
    case language(String)
    /// `alert bell|blink`.
    case alert(AlertStyle)
    /// `lang next`, `alert next` (terminal keys): the next installed language, the other alert style.
    case nextLanguage
    case nextAlert

    public static let words = ["login", "logout", "lang", "alert"]

    /// A driver id: what a keypad or a badge reader sends, 1...32 characters of letters, digits, `-`, `_`.
    public static func isDriverID(_ text: some StringProtocol) -> Bool {
        DriverID.isValid(text)
    }

    /// A PIN: 4...12 digits.
    public static func isPIN(_ text: some StringProtocol) -> Bool {
        (4...12).contains(text.utf8.count) && text.utf8.allSatisfy { (0x30...0x39).contains($0) }
    }

    /// A badge number as a badge reader types it (`DriverKeys.BadgeSequence`): 1...32 digits and
    /// upper-case letters.
    public static func isBadgeNumber(_ text: some StringProtocol) -> Bool {
        (1...32).contains(text.utf8.count) && text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) }
    }

    /// A catalogue name: 1...16 lowercase letters, digits, `-`, `_` (also a safe file name).
    public static func isLanguage(_ text: some StringProtocol) -> Bool {
        (1...16).contains(text.utf8.count) && text.utf8.allSatisfy { byte in
            (0x30...0x39).contains(byte) || (0x61...0x7A).contains(byte) || byte == 0x2D || byte == 0x5F
        }
    }

    /// nil when `text` is not a session word (it is then a `DriverInput`); otherwise the input or
    /// why it is wrong. A PIN is never repeated in a problem.
    public static func parse(_ text: String) -> Result<SessionInput, DriverInput.ParseError>? {
        let words = text.split(whereSeparator: \.isWhitespace)
        guard let first = words.first, Self.words.contains(first.lowercased()) else { return nil }
        let word = first.lowercased()
        let rest = words.dropFirst()
        switch word {
        case "login":
            if rest.isEmpty { return .success(.loginPrompt) }
            guard rest.count == 2, isDriverID(rest[rest.startIndex]) else {
                return .failure(.badArgument(input: word, problem: "give a driver id (1-32 letters, digits, - or _) and a PIN"))
            }
            guard isPIN(rest[rest.startIndex + 1]) else { return .failure(.badArgument(input: word, problem: "a PIN is 4 to 12 digits")) }
            return .success(.login(driver: String(rest[rest.startIndex]), pin: String(rest[rest.startIndex + 1])))
        case "logout":
            return rest.isEmpty ? .success(.logout) : .failure(.unexpectedArgument(input: word))
        case "lang" where rest.count == 1 && rest.first?.lowercased() == "next":
            return .success(.nextLanguage)
        case "alert" where rest.count == 1 && rest.first?.lowercased() == "next":
            return .success(.nextAlert)
        case "lang":
            guard rest.count == 1, let name = rest.first, isLanguage(name) else {
                return .failure(.badArgument(input: word, problem: "give one language name, e.g. en, it, zu"))
            }
            return .success(.language(String(name)))
        default:
            guard rest.count == 1, let style = rest.first.flatMap({ AlertStyle(rawValue: $0.lowercased()) }) else {
                return .failure(.badArgument(input: word, problem: "alert is bell or blink"))
            }
            return .success(.alert(style))
        }
    }
}

/// The logged-in driver and the wrong-PIN lockout.
public struct DriverSession: Sendable, Equatable {
    public private(set) var driver: String?
    public private(set) var lockout: PINLockout
    /// Unit clock of the login; nil with nobody logged in, or for a login stored without it.
    public private(set) var loggedInAt: UnitTime?

    public init(restoring record: DriverSessionRecord = DriverSessionRecord(), lockout settings: PINLockout = PINLockout()) {
        driver = record.driver.flatMap { SessionInput.isDriverID($0) ? $0 : nil }
        loggedInAt = driver == nil ? nil : record.loggedInAt
        lockout = PINLockout(
            freeTries: settings.freeTries, firstLock: settings.firstLock, longest: settings.longest,
            failures: record.failures, lockedUntil: record.lockedUntil)
    }

    /// The fleet changed `[driver]`: new lock lengths, the failures so far kept.
    public mutating func configure(lockout settings: PINLockout) {
        lockout = PINLockout(
            freeTries: settings.freeTries, firstLock: settings.firstLock, longest: settings.longest,
            failures: lockout.failures, lockedUntil: lockout.lockedUntil)
    }

    public var record: DriverSessionRecord {
        DriverSessionRecord(driver: driver, failures: lockout.failures, lockedUntil: lockout.lockedUntil, loggedInAt: loggedInAt)
    }

    public enum Outcome: Sendable, Equatable {
        case loggedIn(String)
        case loggedOut(String)
        /// The terminal may ask for the id and PIN now.
        case promptLogin
        /// A badge named this driver; the terminal asks for the PIN now.
        case promptPIN(driver: String)
        /// The logged-in driver changed a preference.
        case preferences(driver: String, DriverPreferences)
        case refused(DriverRefusal)

        /// `record` changed and is stored: who is logged in, or the failures counted.
        public var changesSession: Bool {
            switch self {
            case .loggedIn, .loggedOut: true
            case .preferences, .promptLogin, .promptPIN: false
            case .refused(.wrongLogin), .refused(.loginLocked): true
            case .refused: false
            }
        }
    }

    /// A badge was read. `identify` names the badge's driver, or nil for a badge not on the list
    /// (counted as a wrong login); it is asked only when a login may be tried. With `pinRequired`
    /// the driver types the PIN next, and only that login clears the failures counted: a badge
    /// alone does not reopen PIN guessing.
    public mutating func badge(state: StateName, now: UnitTime, pinRequired: Bool, identify: () -> String?) -> Outcome {
        guard driver == nil else { return .refused(.alreadyLoggedIn) }
        guard state == .offDuty else { return .refused(.offDutyFirst) }
        lockout.bound(at: now)
        if let seconds = lockout.secondsLocked(at: now) { return .refused(.loginLocked(secondsLeft: seconds)) }
        guard let id = identify(), SessionInput.isDriverID(id) else { return wrongLogin(at: now) }
        if pinRequired { return .promptPIN(driver: id) }
        lockout.succeeded()
        driver = id
        loggedInAt = now
        return .loggedIn(id)
    }

    private mutating func wrongLogin(at now: UnitTime) -> Outcome {
        lockout.failed(at: now)
        if let seconds = lockout.secondsLocked(at: now) { return .refused(.loginLocked(secondsLeft: seconds)) }
        return .refused(.wrongLogin)
    }

    /// `state`: the unit's; a shift starts and ends off duty. `verify` is asked only when a
    /// login may be tried; `preferences` gives the logged-in driver's stored ones. `installed`: the
    /// catalogues `lang next` goes through, from `unitLanguage` for a driver who chose none.
    public mutating func handle(
        _ input: SessionInput, state: StateName, now: UnitTime, verify: (String, String) -> LoginVerdict,
        preferences: (String) -> DriverPreferences, installed: [String] = [], unitLanguage: String = "en"
    ) -> Outcome {
        switch input {
        case .loginPrompt:
            guard driver == nil else { return .refused(.alreadyLoggedIn) }
            guard state == .offDuty else { return .refused(.offDutyFirst) }
            lockout.bound(at: now)
            if let seconds = lockout.secondsLocked(at: now) { return .refused(.loginLocked(secondsLeft: seconds)) }
            return .promptLogin
        case .login(let id, let pin):
            guard driver == nil else { return .refused(.alreadyLoggedIn) }
            guard state == .offDuty else { return .refused(.offDutyFirst) }
            lockout.bound(at: now)
            if let seconds = lockout.secondsLocked(at: now) { return .refused(.loginLocked(secondsLeft: seconds)) }
            switch verify(id, pin) {
            case .accepted:
                lockout.succeeded()
                driver = id
                loggedInAt = now
                return .loggedIn(id)
            case .wrongPIN, .unknownDriver:
                // The same answer for both: the terminal does not tell which ids exist.
                return wrongLogin(at: now)
            }
        case .logout:
            guard let id = driver else { return .refused(.notLoggedIn) }
            guard state == .offDuty else { return .refused(.offDutyFirst) }
            driver = nil
            loggedInAt = nil
            return .loggedOut(id)
        case .language(let name):
            guard let id = driver else { return .refused(.notLoggedIn) }
            var chosen = preferences(id)
            chosen.language = name
            return .preferences(driver: id, chosen)
        case .nextLanguage:
            guard let id = driver else { return .refused(.notLoggedIn) }
            var chosen = preferences(id)
            guard let next = DriverPreferences.language(after: chosen.language ?? unitLanguage, installed: installed) else {
                return .refused(.unknownLanguage)
            }
            chosen.language = next
            return .preferences(driver: id, chosen)
        case .nextAlert:
            guard let id = driver else { return .refused(.notLoggedIn) }
            var chosen = preferences(id)
            chosen.alert = (chosen.alert ?? .bell) == .bell ? .blink : .bell
            return .preferences(driver: id, chosen)
        case .alert(let style):
            guard let id = driver else { return .refused(.notLoggedIn) }
            var chosen = preferences(id)
            chosen.alert = style
            return .preferences(driver: id, chosen)
        }
    }
}

extension DriverSession {
    /// What a dispatcher's `driver/logout` did.
    public enum DispatcherLogoutOutcome: Sendable, Equatable {
        /// The driver was logged out; `loginT`: the login that ended.
        case loggedOut(driver: String, loginT: UnitTime?)
        case refused(LogoutRefusedEvent.Reason)
    }

    /// The dispatcher logs the driver out (the driver logged in on another unit). Only the login
    /// it names ends: a logout for another driver, or for an earlier or later login of the same
    /// driver (a replay, or one that crossed a new login), changes nothing. A login stored without
    /// its time matches any `loginT`. On duty the driver keeps the taxi until off duty, as with
    /// the driver's own logout, so no job is left without a driver.
    public mutating func dispatcherLogout(_ logout: DriverLogout, state: StateName) -> DispatcherLogoutOutcome {
        guard let id = driver else { return .refused(.notLoggedIn) }
        guard id == logout.driver else { return .refused(.otherDriver) }
        if let named = logout.loginT, let since = loggedInAt, named != since.milliseconds { return .refused(.otherLogin) }
        guard state == .offDuty else { return .refused(.onDuty) }
        let since = loggedInAt
        driver = nil
        loggedInAt = nil
        return .loggedOut(driver: id, loginT: since)
    }
}

/// The id and PIN being typed on the terminal's keys: printable keys type, `erase` takes the last
/// character back (on an empty PIN, back to the id; on an empty id, the entry is cancelled),
/// `enter` moves from the id to the PIN and submits the PIN. Pure; the shell drops an entry left
/// untouched for `idle`.
public struct LoginEntry: Sendable, Equatable {
    public private(set) var driver = ""
    public private(set) var pin = ""
    public private(set) var onPIN = false
    /// Unit clock of the last key.
    public private(set) var lastKeyAt: UnitTime

    public static let idle: Duration = .seconds(60)

    public enum Key: Sendable, Equatable {
        case character(Character)
        case enter
        case erase
        /// Keys were lost on the way (line noise): the field being typed is emptied, so that a PIN
        /// missing a digit is never submitted and never counts as wrong.
        case lost
    }

    public enum Outcome: Sendable, Equatable {
        case typing
        case submit(SessionInput)
        case cancelled
    }

    public init(at now: UnitTime) {
        lastKeyAt = now
    }

    /// The PIN of `driver`, whom a badge named.
    public init(pinOf driver: String, at now: UnitTime) {
        self.driver = driver
        onPIN = true
        lastKeyAt = now
    }

    public func expired(at now: UnitTime) -> Bool { now - lastKeyAt >= Self.idle }

    public mutating func type(_ key: Key, at now: UnitTime) -> Outcome {
        lastKeyAt = now
        switch key {
        case .character(let character):
            if onPIN {
                if character.isASCII, character.isNumber, pin.count < 12 { pin.append(character) }
            } else if driver.count < 32, SessionInput.isDriverID(String(character)) {
                driver.append(character)
            }
            return .typing
        case .erase:
            if onPIN {
                if pin.isEmpty { onPIN = false } else { pin.removeLast() }
            } else {
                if driver.isEmpty { return .cancelled }
                driver.removeLast()
            }
            return .typing
        case .enter:
            if !onPIN {
                if !driver.isEmpty { onPIN = true }
                return .typing
            }
            guard SessionInput.isPIN(pin) else { return .typing }
            return .submit(.login(driver: driver, pin: pin))
        case .lost:
            if onPIN { pin = "" } else { driver = "" }
            return .typing
        }
    }
}
