import FleetControl
import TaxiProtocol
import UnitConfig
import UnitCore

/// An input to the unit, in the one order the engine sees them.
public enum UnitInput: Sendable {
    /// What the job machine takes: fixes, the dispatcher's messages, its timers, a restart.
    case job(UnitEvent)
    /// A button, a terminal key or `taxiunitctl press`. `key`: a terminal key, which a login
    /// being typed takes first; `command`: what the key or word means otherwise.
    case driver(DriverCommand?, key: LoginEntry.Key?, context: SessionContext, at: UnitTime)
    /// A badge reader read this number.
    case badge(String, context: SessionContext, at: UnitTime)
    case fleetConfig(FleetConfigEvent)
    /// A message on the unit's `cmd` topic; `at`: the unit clock, ms.
    case fleetCommand(payload: [UInt8], topic: String, at: UnitTime)
    /// A message on `cmd` refused unread (over the size limit, or poison); `at`: the unit clock, ms.
    case fleetCommandRefusedUnread(FleetRejection, at: UnitTime)
    /// A message on `driver/logout`, as read at the edge: the dispatcher logs the driver out.
    case driverLogout(Result<DriverLogout, DriverLogout.Problem>, at: UnitTime)
}

/// What the shell knows about the driver's surroundings when an input arrives: read from the
/// store and the file system, which the core does not touch.
public struct SessionContext: Sendable, Equatable {
    /// The logged-in driver's stored preferences.
    public var preferences: DriverPreferences
    /// The catalogues that load, for `lang`.
    public var installedLanguages: [String]
    /// A terminal with keys is fitted: a login can be typed on it.
    public var hasTerminal: Bool

    public init(preferences: DriverPreferences = DriverPreferences(), installedLanguages: [String] = [], hasTerminal: Bool = false) {
        self.preferences = preferences
        self.installedLanguages = installedLanguages
        self.hasTerminal = hasTerminal
    }
}

/// The one core above the unit's machines: it owns the job machine, the driver session, the fleet
/// configuration machine and the command gate, takes every input and returns one `UnitStep`.
/// Settings in force are its state: a document applied here rebuilds what derives from them
/// (position pipeline, reporting, zones, seats, lockout, canned messages) in the same step.
/// Pure: no IO, clock, threads or logging.
public struct UnitCoordinator: Sendable {
    public private(set) var machine: UnitStateMachine
    public private(set) var session: DriverSession
    public private(set) var fleetConfig: FleetConfigMachine
    public private(set) var commands: CommandGate
    /// The id and PIN being typed on the terminal, while it asks for them.
    public private(set) var loginEntry: LoginEntry?
    /// The fare and payment screen as last typed; it belongs to its ride alone.
    private var openFare: FareEntry?

    /// The fare and payment screen, while it asks at clear: nil once its ride is no longer on board
    /// (cleared another way, from `taxiunitctl press`).
    public var fareEntry: FareEntry? {
        guard case .onBoard(let job, _) = machine.state, openFare?.job == job.id else { return nil }
        return openFare
    }

    public init(machine: UnitStateMachine, session: DriverSession, fleetConfig: FleetConfigMachine, commands: CommandGate) {
        self.machine = machine
        self.session = session
        self.fleetConfig = fleetConfig
        self.commands = commands
        self.machine.driverLoggedIn = session.driver != nil
    }

    /// The configuration in force: the local file with the fleet's documents laid over it.
    public var configuration: UnitConfiguration { fleetConfig.configuration }

    /// Right after the start: re-arm what the restored state promised, resume a rollback trial.
    public mutating func start(at now: UnitTime) -> UnitStep {
        var step = handle(.job(.resumed(at: now)))
        append(fleetConfig.startupActions(now: now), to: &step)
        return step
    }

    /// The store gave the open alarm's `sos` message this id, so acknowledgements can be matched.
    public mutating func alarmStored(messageID id: String) {
        machine.alarmStored(messageID: id)
    }

    public mutating func handle(_ input: UnitInput) -> UnitStep {
        switch input {
        case .job(let event):
            return UnitStep(job: machine.handle(event), driver: session.driver)
        case .driver(let command, let key, let context, let now):
            if let key, let step = typeLogin(key, context: context, at: now) { return step }
            if let key, let step = typeFare(key, command: command, at: now) { return step }
            if key != nil, case .job(.clear)? = command?.action, let step = openFareEntry(context: context) { return step }
            switch command?.action {
            case .session(let input)?:
                return sessionStep(input, context: context, at: now)
            case .job(let input)?:
                return UnitStep(job: machine.handle(.driver(input, at: now)), driver: session.driver)
            case nil:
                return UnitStep(driver: session.driver)
            }
        case .badge(let number, let context, let now):
            let badges = configuration.driver.badges
            let outcome = session.badge(
                state: machine.state.name, now: now, pinRequired: configuration.input.badge?.pin ?? false,
                identify: { DriverRoster.identify(badge: number, in: badges) })
            return sessionStep(outcome, context: context, alertChosen: false, at: now)
        case .fleetConfig(let event):
            var step = UnitStep(driver: session.driver)
            append(fleetConfig.handle(event), to: &step)
            return step
        case .fleetCommand(let payload, let topic, let now):
            var step = UnitStep(driver: session.driver)
            step.command = command(commands.admit(payload, topic: topic, now: now), at: now)
            return step
        case .fleetCommandRefusedUnread(let rejection, let now):
            var step = UnitStep(driver: session.driver)
            step.command = command(CommandGate.refuseUnread(rejection), at: now)
            return step
        case .driverLogout(let received, let now):
            return dispatcherLogout(received, at: now)
        }
    }

    // MARK: Fare and payment at clear

    /// The terminal's clear key on board opens the fare and payment screen; nil when it clears at
    /// once (no terminal, no payment methods configured, nobody on board).
    private mutating func openFareEntry(context: SessionContext) -> UnitStep? {
        let settings = machine.settings
        guard context.hasTerminal, !settings.payments.isEmpty, case .onBoard(let job, _) = machine.state else { return nil }
        let entry = FareEntry(job: job.id, known: job.fare, payments: settings.payments, currency: settings.currency)
        openFare = entry
        var step = UnitStep(driver: session.driver)
        step.job.driver = [.told(entry.known == nil ? "Type the fare, ENTER, then pick the payment" : "Pick the payment")]
        return step
    }

    /// A terminal key while the fare and payment screen is open: every key belongs to it. Nil when
    /// none is open, or its ride is no longer on board (cleared from `taxiunitctl press`).
    private mutating func typeFare(_ key: LoginEntry.Key, command: DriverCommand?, at now: UnitTime) -> UnitStep? {
        guard var entry = fareEntry else {
            openFare = nil
            return nil
        }
        let fareKey: FareEntry.Key
        if case .job(.clear)? = command?.action {
            fareKey = .clear
        } else {
            switch key {
            case .character(let character): fareKey = (character.isASCII ? character.wholeNumberValue : nil).map(FareEntry.Key.digit) ?? .other
            case .enter: fareKey = .enter
            case .erase: fareKey = .erase
            case .lost: fareKey = .lost
            }
        }
        switch entry.type(fareKey) {
        case .typing:
            openFare = entry
            return UnitStep(driver: session.driver)
        case .cancelled:
            openFare = nil
            var step = UnitStep(driver: session.driver)
            step.job.driver = [.told("Still on board")]
            return step
        case .submit(let settlement):
            let step = UnitStep(job: machine.handle(.driver(.clearSettled(settlement), at: now)), driver: session.driver)
            // A refused clear (a payment required) leaves the screen open for the pick.
            openFare = machine.state.name == .onBoard ? entry : nil
            return step
        }
    }

    // MARK: The driver's session

    /// A key while a login is typed; nil when no login takes it (none is typed, it timed out, or
    /// the unit is no longer off duty).
    private mutating func typeLogin(_ key: LoginEntry.Key, context: SessionContext, at now: UnitTime) -> UnitStep? {
        guard var entry = loginEntry else { return nil }
        guard !entry.expired(at: now), machine.state.name == .offDuty else {
            loginEntry = nil
            return nil
        }
        switch entry.type(key, at: now) {
        case .typing:
            loginEntry = entry
            return UnitStep(driver: session.driver)
        case .cancelled:
            loginEntry = nil
            return UnitStep(driver: session.driver)
        case .submit(let input):
            loginEntry = nil
            return sessionStep(input, context: context, at: now)
        }
    }

    private mutating func sessionStep(_ input: SessionInput, context: SessionContext, at now: UnitTime) -> UnitStep {
        if case .language(let name) = input, !context.installedLanguages.contains(name) {
            return sessionStep(.refused(.unknownLanguage), context: context, alertChosen: false, at: now)
        }
        let drivers = configuration.driver.drivers
        let endedLogin = session.loggedInAt
        let outcome = session.handle(
            input, state: machine.state.name, now: now, verify: { DriverRoster.verify(driver: $0, pin: $1, in: drivers) },
            preferences: { _ in context.preferences }, installed: input == .nextLanguage ? context.installedLanguages : [],
            unitLanguage: configuration.unit.language)
        let alertChosen = if case .alert = input { true } else { input == .nextAlert }
        return sessionStep(outcome, context: context, alertChosen: alertChosen, at: now, endedLogin: endedLogin)
    }

    /// `endedLogin`: the unit clock of the login a logout ended.
    private mutating func sessionStep(
        _ outcome: DriverSession.Outcome, context: SessionContext, alertChosen: Bool, at now: UnitTime, endedLogin: UnitTime? = nil
    ) -> UnitStep {
        var step = UnitStep()
        if outcome.changesSession { step.session = session.record }
        switch outcome {
        case .loggedIn(let driver):
            driverChanged(&step)
            step.sessionEvent = .loggedIn(driver)
            step.job.messages = [.driverSession(DriverSessionEvent(type: .login, t: now, loginT: session.loggedInAt), driver: driver)]
            step.job.driver = [.told("Logged in: \(driver)")]
        case .loggedOut(let driver):
            driverChanged(&step)
            step.sessionEvent = .loggedOut(driver)
            step.job.messages = [.driverSession(DriverSessionEvent(type: .logout, t: now, loginT: endedLogin, reason: .driver), driver: driver)]
            step.job.driver = [.told("Logged out: \(driver)")]
        case .preferences(let driver, let preferences):
            step.preferences = .init(driver: driver, preferences: preferences)
            step.sessionEvent = .preferences(driver: driver, preferences, alertChosen: alertChosen)
            step.job.driver = [
                .told("Preferences of \(driver): language \(preferences.language ?? "-"), alert \(preferences.alert?.rawValue ?? "-")")
            ]
        case .promptLogin:
            // Only a terminal has keys to type on; `taxiunitctl press` gives `login <id> <pin>`.
            guard context.hasTerminal else {
                step.job.driver = [.told("login needs a driver id and a PIN: login <id> <pin>")]
                break
            }
            loginEntry = LoginEntry(at: now)
            step.sessionEvent = .loginPrompted
            step.job.driver = [.told("Type the driver id, ENTER, the PIN, ENTER")]
        case .promptPIN(let driver):
            // `[input.badge] pin` requires a terminal (UnitConfig): its login screen asks.
            loginEntry = LoginEntry(pinOf: driver, at: now)
            step.sessionEvent = .loginPrompted
            step.job.driver = [.told("Badge of \(driver): type the PIN, ENTER")]
        case .refused(let refusal):
            step.sessionEvent = .refused(refusal)
            step.job.driver = [.refused(refusal)]
        }
        step.driver = session.driver
        return step
    }

    /// The dispatcher's `driver/logout`: obeyed through the session, or refused; either way the
    /// dispatcher is answered on `event`, and the driver is told about the other unit.
    private mutating func dispatcherLogout(_ received: Result<DriverLogout, DriverLogout.Problem>, at now: UnitTime) -> UnitStep {
        var step = UnitStep(driver: session.driver)
        let logout: DriverLogout
        switch received {
        case .failure(let problem):
            step.job.messages = [.logoutRefused(LogoutRefusedEvent(t: now, logout: problem.id, reason: .invalid, problem: problem.reason))]
            step.job.notes = ["malformed driver/logout: \(problem.reason)"]
            return step
        case .success(let read):
            logout = read
        }
        switch session.dispatcherLogout(logout, state: machine.state.name) {
        case .refused(let reason):
            step.job.messages = [.logoutRefused(LogoutRefusedEvent(t: now, logout: logout.id, reason: reason))]
            step.job.notes = ["driver/logout \(logout.id) refused: \(reason.rawValue)"]
            // On duty the driver keeps the taxi, and is told to log out once off duty.
            if reason == .onDuty, let driver = session.driver {
                step.sessionEvent = .loggedInElsewhere(driver: driver, unit: logout.elsewhere, loggedOut: false)
                step.job.driver = [.told("\(driver) is logged in on \(logout.elsewhere): log out when off duty")]
            }
            return step
        case .loggedOut(let driver, let loginT):
            step.session = session.record
            driverChanged(&step)
            step.sessionEvent = .loggedInElsewhere(driver: driver, unit: logout.elsewhere, loggedOut: true)
            step.job.messages = [
                .driverSession(
                    DriverSessionEvent(type: .logout, t: now, loginT: loginT, reason: logout.reason, elsewhere: logout.elsewhere, logout: logout.id),
                    driver: driver)
            ]
            step.job.driver = [.told("Logged out: \(driver) is logged in on \(logout.elsewhere)")]
            step.driver = session.driver
            return step
        }
    }

    private mutating func driverChanged(_ step: inout UnitStep) {
        loginEntry = nil
        machine.driverLoggedIn = session.driver != nil
        step.job.status = machine.status
    }

    // MARK: Fleet documents

    private mutating func append(_ actions: [FleetConfigAction], to step: inout UnitStep) {
        for action in actions {
            switch action {
            case .commit(let scope, let record, let ack):
                step.fleetRecords.append(.init(scope: scope, record: record))
                if let ack { step.acks.append(ack) }
            case .acknowledge(let ack):
                step.acks.append(ack)
            case .use(let next, let reconnect):
                step.job += machine.use(next.unitSettings)
                machine.useCannedMessages(next.messages.canned)
                session.configure(lockout: next.driver.lockout)
                step.configuration = .init(configuration: next, reconnect: reconnect)
            case .startRollbackTimer(let after):
                step.rollbackTimer = .start(after: after)
            case .cancelRollbackTimer:
                step.rollbackTimer = .cancel
            case .ignore(let scope, let why):
                step.debugNotes.append("fleet config ignored (\(scope.rawValue)): \(why)")
            }
        }
    }

    // MARK: Commands

    private func command(_ decision: CommandDecision, at now: UnitTime) -> CommandOutcome {
        switch decision {
        case .ignore(let id):
            return .ignore(id: id)
        case .refuse(let refusal):
            return .refuse(refusal)
        case .execute(let command):
            switch command.action {
            case .report:
                // The machine's last fix: off duty and private it is in no other place.
                return .execute(command, machine.lastFix.map { .report(PositionPoint($0)) } ?? .noFixToReport)
            case .status:
                return .execute(command, .status)
            case .purge(let days):
                return .execute(command, .purge(before: now - .seconds(days.saturatingMultiply(86_400))))
            case .reconnect:
                return .execute(command, .reconnect)
            }
        }
    }
}
