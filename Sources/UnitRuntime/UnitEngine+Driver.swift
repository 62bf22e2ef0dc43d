import DriverDevices
import DriverDisplay
import FleetControl
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import LocalCache
import Logging
import UnitConfig
import UnitCore

/// Who drives: login, logout and the driver's preferences (`DriverSession`), stored in the
/// session's own tables, named in every message (`StepPerformer.driver`) and the status.
extension UnitEngine {
    static func restoringSession(store: LocalCache, configuration: UnitConfiguration, logger: Logger) -> DriverSession {
        do {
            return DriverSession(restoring: try store.driverSession(), lockout: configuration.driver.lockout)
        } catch {
            // Nobody logged in is the safe reading: the driver logs in again.
            logger.error("cannot read the driver session; nobody is logged in", metadata: ["error": "\(error)"])
            return DriverSession(lockout: configuration.driver.lockout)
        }
    }

    /// Login, logout, `lang` and `alert`.
    @discardableResult
    func handleSession(_ input: SessionInput) -> DriverAnswer {
        if case .language(let name) = input, !languageInstalled(name) { return DriverAnswer(told: refused(.unknownLanguage), refused: true) }
        let drivers = configuration.driver.drivers
        let store = self.store
        let outcome = session.handle(
            input, state: machine.state.name, now: clockMs(),
            verify: { DriverRoster.verify(driver: $0, pin: $1, in: drivers) },
            preferences: { (try? store.driverPreferences($0)) ?? DriverPreferences() },
            installed: input == .nextLanguage ? installedLanguages() : [], unitLanguage: configuration.unit.language)
        // A new language shows itself; a new alert style is silent until the next alert: it is said.
        let choosesAlert = if case .alert = input { true } else { input == .nextAlert }
        let refusal = if case .refused = outcome { true } else { false }
        return DriverAnswer(told: perform(outcome, saysAlertStyle: choosesAlert), refused: refusal)
    }

    /// A badge reader read `number`: the badge's driver logs in, or is asked for the PIN
    /// (`[input.badge] pin`). The number is never logged.
    private func badgeRead(_ number: String) {
        let badges = configuration.driver.badges
        let outcome = session.badge(
            state: machine.state.name, now: clockMs(), pinRequired: configuration.input.badge?.pin ?? false,
            identify: { DriverRoster.identify(badge: number, in: badges) })
        for line in perform(outcome) { logger.info("badge read: \(line)") }
    }

    private func perform(_ outcome: DriverSession.Outcome, saysAlertStyle: Bool = false) -> [String] {
        if outcome.changesSession {
            do {
                try store.saveDriverSession(session.record)
            } catch {
                // The session holds until the next start; after it the driver logs in again.
                logger.error("cannot store the driver session", metadata: ["error": "\(error)"])
            }
        }
        switch outcome {
        case .loggedIn(let driver):
            driverChanged()
            logger.notice("driver logged in", metadata: ["driver": "\(driver)"])
            return ["Logged in: \(driver)"]
        case .loggedOut(let driver):
            driverChanged()
            logger.notice("driver logged out", metadata: ["driver": "\(driver)"])
            return ["Logged out: \(driver)"]
        case .preferences(let driver, let preferences):
            do {
                try store.saveDriverPreferences(preferences, for: driver)
            } catch {
                logger.error("cannot store the driver's preferences", metadata: ["error": "\(error)"])
                return ["NOT STORED: \(error)"]
            }
            applyDriverPreferences()
            if saysAlertStyle { panel.alertStyleChosen(preferences.alert ?? .bell) }
            return ["Preferences of \(driver): language \(preferences.language ?? "-"), alert \(preferences.alert?.rawValue ?? "-")"]
        case .promptLogin:
            // Only a terminal has keys to type on; `taxiunitctl press` gives `login <id> <pin>`.
            guard devices?.terminal != nil else { return ["login needs a driver id and a PIN: login <id> <pin>"] }
            loginEntry = LoginEntry(at: clockMs())
            return ["Type the driver id, ENTER, the PIN, ENTER"]
        case .promptPIN(let driver):
            // `[input.badge] pin` requires a terminal (UnitConfig): its login screen asks.
            loginEntry = LoginEntry(pinOf: driver, at: clockMs())
            return ["Badge of \(driver): type the PIN, ENTER"]
        case .refused(let refusal):
            return refused(refusal)
        }
    }

    /// A badge read, dropped line noise, or a terminal key while a login is typed: true when the login
    /// took it. The PIN
    /// and the badge number are passed on, never logged.
    func typeLogin(_ press: DriverPress) -> Bool {
        if let badge = press.badge {
            badgeRead(badge)
            return true
        }
        if press.discarded {
            logger.notice("the serial terminal dropped a burst of line noise", metadata: ["login": "\(loginEntry != nil)"])
            panel.inputDiscarded()
        }
        let key: LoginEntry.Key
        switch press.typed {
        case _ where press.discarded: key = .lost
        case "\n": key = .enter
        case "\u{8}": key = .erase
        case let typed?: key = .character(typed)
        case nil: return false
        }
        guard var entry = loginEntry else { return false }
        let now = clockMs()
        guard !entry.expired(at: now), machine.state.name == .offDuty else {
            loginEntry = nil
            return false
        }
        switch entry.type(key, at: now) {
        case .typing:
            loginEntry = entry
        case .cancelled:
            loginEntry = nil
        case .submit(let input):
            loginEntry = nil
            handleSession(input)
        }
        return true
    }

    private func refused(_ refusal: DriverRefusal) -> [String] {
        logger.info("driver input refused: \(refusal)")
        panel.sessionRefused(refusal)
        return [refusal.description]
    }

    private func driverChanged() {
        loginEntry = nil
        machine.driverLoggedIn = session.driver != nil
        performer.driver = session.driver
        applyDriverPreferences()
        publishStatus()
    }

    /// The terminal in the logged-in driver's language and alert style, else the configuration's.
    func applyDriverPreferences() {
        let preferences = session.driver.flatMap { try? store.driverPreferences($0) } ?? DriverPreferences()
        let catalogues = configuration.unit.catalogues
        let shown = preferences.language.map { devices?.useLanguage($0, catalogues: catalogues) == true } ?? false
        if !shown { devices?.useLanguage(configuration.unit.language, catalogues: catalogues) }
        devices?.terminal?.setRingsBell((preferences.alert ?? .bell) == .bell)
    }

    /// The catalogues in `[unit] catalogues` that load.
    private func installedLanguages() -> [String] {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: configuration.unit.catalogues)) ?? []
        return files.filter { $0.hasSuffix(".toml") }.map { String($0.dropLast(5)) }
            .filter { SessionInput.isLanguage($0) && languageInstalled($0) }
    }

    private func languageInstalled(_ name: String) -> Bool {
        (try? MessageCatalogue.load(language: name, directory: configuration.unit.catalogues)) != nil
    }
}
