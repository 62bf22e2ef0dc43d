import TaxiProtocol
import Testing
import UnitCore

@Suite struct DriverSessionTests {
    /// Accepts driver 42 with PIN 1234; 7 is on the list with another PIN.
    static func verify(_ id: String, _ pin: String) -> LoginVerdict {
        switch (id, pin) {
        case ("42", "1234"): .accepted
        case ("42", _), ("7", _): .wrongPIN
        default: .unknownDriver
        }
    }

    func login(_ session: inout DriverSession, _ id: String, _ pin: String, state: StateName = .offDuty, at now: UnitTime) -> DriverSession.Outcome {
        session.handle(.login(driver: id, pin: pin), state: state, now: now, verify: Self.verify, preferences: { _ in DriverPreferences() })
    }

    @Test func aRightPINLogsInAndLogoutEndsTheShiftOffDutyOnly() {
        var session = DriverSession()
        #expect(login(&session, "42", "1234", at: 0) == .loggedIn("42"))
        #expect(session.driver == "42")
        #expect(login(&session, "7", "0000", at: 1) == .refused(.alreadyLoggedIn))
        let onDuty = session.handle(.logout, state: .available, now: 2, verify: Self.verify, preferences: { _ in DriverPreferences() })
        #expect(onDuty == .refused(.offDutyFirst))
        #expect(session.handle(.logout, state: .offDuty, now: 3, verify: Self.verify, preferences: { _ in DriverPreferences() }) == .loggedOut("42"))
        #expect(session.driver == nil)
        #expect(session.handle(.logout, state: .offDuty, now: 4, verify: Self.verify, preferences: { _ in DriverPreferences() }) == .refused(.notLoggedIn))
    }

    @Test func loginIsOnlyOffDutyAndIsNotCheckedOtherwise() {
        var session = DriverSession()
        var asked = false
        let outcome = session.handle(
            .login(driver: "42", pin: "1234"), state: .available, now: 0, verify: { _, _ in asked = true; return .accepted },
            preferences: { _ in DriverPreferences() })
        #expect(outcome == .refused(.offDutyFirst))
        #expect(!asked)
    }

    @Test func anUnknownDriverAndAWrongPINGetTheSameRefusal() {
        var session = DriverSession()
        #expect(login(&session, "42", "9999", at: 0) == .refused(.wrongLogin))
        #expect(login(&session, "nobody", "1234", at: 0) == .refused(.wrongLogin))
    }

    @Test func threeWrongPINsLockWithAGrowingLockAndTheRightOneResets() {
        var session = DriverSession(lockout: PINLockout(freeTries: 3, firstLock: .milliseconds(30_000), longest: .milliseconds(100_000)))
        #expect(login(&session, "42", "0000", at: 0) == .refused(.wrongLogin))
        #expect(login(&session, "7", "0000", at: 0) == .refused(.wrongLogin))
        // The third failure locks at once, for the first lock.
        #expect(login(&session, "42", "0001", at: 0) == .refused(.loginLocked(secondsLeft: 30)))
        // While locked even the right PIN is not checked.
        var asked = false
        let locked = session.handle(
            .login(driver: "42", pin: "1234"), state: .offDuty, now: 10_000, verify: { _, _ in asked = true; return .accepted },
            preferences: { _ in DriverPreferences() })
        #expect(locked == .refused(.loginLocked(secondsLeft: 20)))
        #expect(!asked)
        // Each further failure doubles the lock, up to the longest.
        #expect(login(&session, "42", "0002", at: 30_000) == .refused(.loginLocked(secondsLeft: 60)))
        #expect(login(&session, "42", "0003", at: 90_000) == .refused(.loginLocked(secondsLeft: 100)))
        #expect(login(&session, "42", "0004", at: 190_000) == .refused(.loginLocked(secondsLeft: 100)))
        #expect(login(&session, "42", "1234", at: 290_000) == .loggedIn("42"))
        #expect(session.lockout.failures == 0)
        #expect(session.lockout.lockedUntil == nil)
    }

    @Test func manyFailuresNeverOverflowTheLock() {
        var lockout = PINLockout(freeTries: 1, firstLock: .milliseconds(1), longest: .milliseconds(Int64.max))
        for _ in 0..<200 { lockout.failed(at: .max - .milliseconds(5)) }
        #expect(lockout.lockedUntil == .max)
        #expect(lockout.failures == 200)
    }

    @Test func theSessionAndItsLockSurviveARestartAndAFutureLockIsBounded() {
        var session = DriverSession(lockout: PINLockout(freeTries: 1, firstLock: .milliseconds(1000), longest: .milliseconds(5000)))
        _ = login(&session, "42", "0000", at: 0)
        var restored = DriverSession(restoring: session.record, lockout: PINLockout(freeTries: 1, firstLock: .milliseconds(1000), longest: .milliseconds(5000)))
        #expect(login(&restored, "42", "1234", at: 500) == .refused(.loginLocked(secondsLeft: 1)))
        // A lock from a store written with a clock far ahead lasts no longer than the longest lock.
        var ahead = DriverSession(restoring: DriverSessionRecord(failures: 9, lockedUntil: 9_000_000_000_000), lockout: PINLockout(firstLock: .milliseconds(1000), longest: .milliseconds(5000)))
        #expect(login(&ahead, "42", "1234", at: 0) == .refused(.loginLocked(secondsLeft: 5)))
        #expect(login(&ahead, "42", "1234", at: 5000) == .loggedIn("42"))
        // A stored driver id that is not one is nobody.
        #expect(DriverSession(restoring: DriverSessionRecord(driver: "x y\u{7}")).driver == nil)
    }

    @Test func preferencesNeedADriverAndKeepTheOtherSetting() {
        var session = DriverSession()
        let stored = DriverPreferences(language: "it", alert: nil)
        #expect(session.handle(.alert(.blink), state: .offDuty, now: 0, verify: Self.verify, preferences: { _ in stored }) == .refused(.notLoggedIn))
        _ = login(&session, "42", "1234", at: 0)
        let outcome = session.handle(.alert(.blink), state: .available, now: 0, verify: Self.verify, preferences: { _ in stored })
        #expect(outcome == .preferences(driver: "42", DriverPreferences(language: "it", alert: .blink)))
    }

    @Test(arguments: [
        ("login 42 1234", SessionInput.login(driver: "42", pin: "1234")), ("LOGOUT", .logout), ("lang zu", .language("zu")),
        ("alert BLINK", .alert(.blink)),
    ])
    func sessionWordsParse(text: String, input: SessionInput) {
        #expect(SessionInput.parse(text) == .success(input))
    }

    @Test(arguments: ["login 42", "login 42 12", "login 42 12a4", "login 4/2 1234", "login 42 1234 5", "logout now", "lang", "lang ../x",
                      "lang EN", "alert loud", "login \(String(repeating: "9", count: 33)) 1234", "login 42 1234567890123"])
    func wrongSessionWordsAreRefusedWithoutEchoingThePIN(text: String) throws {
        let result = try #require(SessionInput.parse(text))
        guard case .failure(let problem) = result else { Issue.record("\(text) parsed"); return }
        #expect(!problem.description.contains("1234"))
    }

    @Test func otherWordsAreNotSessionWords() {
        #expect(SessionInput.parse("duty") == nil)
        #expect(SessionInput.parse("") == nil)
    }

    @Test func requireLoginRefusesDutyWithoutADriver() {
        var machine = UnitStateMachine(settings: UnitSettings(requireLogin: true))
        #expect(machine.handle(.driver(.duty, at: 0)).refusals == [.loginRequired])
        #expect(machine.state == .offDuty)
        machine.driverLoggedIn = true
        #expect(machine.handle(.driver(.duty, at: 1)).refusals.isEmpty)
        #expect(machine.state == .available)
        var free = UnitStateMachine()
        #expect(free.handle(.driver(.duty, at: 0)).refusals.isEmpty)
    }
}

@Suite struct LoginEntryTests {
    func type(_ entry: inout LoginEntry, _ text: String, at now: UnitTime = 0) -> [LoginEntry.Outcome] {
        text.map { character in
            switch character {
            case "\n": entry.type(.enter, at: now)
            case "<": entry.type(.erase, at: now)
            default: entry.type(.character(character), at: now)
            }
        }
    }

    @Test func theIdThenThePINAreTypedAndSubmitted() {
        var entry = LoginEntry(at: 0)
        #expect(type(&entry, "D-0x<41 7").allSatisfy { $0 == .typing })
        #expect(entry.driver == "D-0417", "a space is no id character")
        // ENTER on an empty PIN or a short one does nothing; letters are no digits.
        #expect(type(&entry, "\n\n12a\n").allSatisfy { $0 == .typing })
        #expect(entry.onPIN && entry.pin == "12")
        #expect(type(&entry, "46\n").last == .submit(.login(driver: "D-0417", pin: "1246")))
    }

    @Test func eraseGoesBackAndCancelsOnAnEmptyId() {
        var entry = LoginEntry(at: 0)
        _ = type(&entry, "42\n1<")
        #expect(entry.onPIN && entry.pin.isEmpty)
        _ = type(&entry, "<")
        #expect(!entry.onPIN && entry.driver == "42")
        #expect(type(&entry, "<<<").last == .cancelled)
    }

    @Test func fieldsAreBoundedAndAnIdleEntryExpires() {
        var entry = LoginEntry(at: 0)
        _ = type(&entry, String(repeating: "9", count: 100) + "\n" + String(repeating: "1", count: 100), at: 1000)
        #expect(entry.driver.count == 32 && entry.pin.count == 12)
        #expect(!entry.expired(at: 1000 + LoginEntry.idle - .milliseconds(1)))
        #expect(entry.expired(at: 1000 + LoginEntry.idle))
    }

    @Test func aLoginPromptIsOnlyOfferedWhenALoginCouldBeTried() {
        var session = DriverSession(lockout: PINLockout(freeTries: 1))
        let prompt = { (session: inout DriverSession, state: StateName) in
            session.handle(.loginPrompt, state: state, now: 0, verify: DriverSessionTests.verify, preferences: { _ in DriverPreferences() })
        }
        #expect(prompt(&session, .available) == .refused(.offDutyFirst))
        #expect(prompt(&session, .offDuty) == .promptLogin)
        _ = session.handle(.login(driver: "42", pin: "0000"), state: .offDuty, now: 0, verify: DriverSessionTests.verify, preferences: { _ in DriverPreferences() })
        #expect(prompt(&session, .offDuty) == .refused(.loginLocked(secondsLeft: 30)))
        #expect(SessionInput.parse("login") == .success(.loginPrompt))
    }
}

@Suite struct PreferenceKeysTests {
    @Test func langNextGoesRoundTheInstalledCataloguesInNameOrder() {
        #expect(DriverPreferences.language(after: "en", installed: ["zu", "it", "en"]) == "it")
        #expect(DriverPreferences.language(after: "zu", installed: ["zu", "it", "en"]) == "en")
        #expect(DriverPreferences.language(after: "de", installed: ["zu", "it", "en"]) == "en")
        #expect(DriverPreferences.language(after: "en", installed: []) == nil)
        var session = DriverSession()
        _ = session.handle(.login(driver: "42", pin: "1234"), state: .offDuty, now: 0, verify: DriverSessionTests.verify, preferences: { _ in DriverPreferences() })
        let next = session.handle(
            .nextLanguage, state: .available, now: 0, verify: DriverSessionTests.verify, preferences: { _ in DriverPreferences(alert: .blink) },
            installed: ["en", "it", "zu"], unitLanguage: "it")
        #expect(next == .preferences(driver: "42", DriverPreferences(language: "zu", alert: .blink)))
        let toggled = session.handle(.nextAlert, state: .available, now: 0, verify: DriverSessionTests.verify, preferences: { _ in DriverPreferences() })
        #expect(toggled == .preferences(driver: "42", DriverPreferences(alert: .blink)))
        #expect(SessionInput.parse("lang NEXT") == .success(.nextLanguage))
        #expect(SessionInput.parse("alert next") == .success(.nextAlert))
    }
}

@Suite struct BadgeSessionTests {
    @Test func aKnownBadgeLogsItsDriverInOffDutyOnly() {
        var session = DriverSession()
        var asked = false
        #expect(session.badge(state: .available, now: 0, pinRequired: false, identify: { asked = true; return "42" }) == .refused(.offDutyFirst))
        #expect(!asked, "a badge is not checked on duty")
        #expect(session.badge(state: .offDuty, now: 1, pinRequired: false, identify: { "42" }) == .loggedIn("42"))
        #expect(session.driver == "42")
        #expect(session.badge(state: .offDuty, now: 2, pinRequired: false, identify: { "7" }) == .refused(.alreadyLoggedIn))
    }

    @Test func unknownBadgesCountAsWrongLoginsAndLockLikeThem() {
        var session = DriverSession(lockout: PINLockout(freeTries: 2, firstLock: .milliseconds(30_000)))
        #expect(session.badge(state: .offDuty, now: 0, pinRequired: false, identify: { nil }) == .refused(.wrongLogin))
        #expect(session.badge(state: .offDuty, now: 1, pinRequired: false, identify: { nil }) == .refused(.loginLocked(secondsLeft: 30)))
        var asked = false
        #expect(session.badge(state: .offDuty, now: 2, pinRequired: false, identify: { asked = true; return "42" }) == .refused(.loginLocked(secondsLeft: 30)))
        #expect(!asked, "a locked terminal checks no badge")
        #expect(session.badge(state: .offDuty, now: 30_001, pinRequired: false, identify: { "42" }) == .loggedIn("42"))
        #expect(session.lockout.failures == 0)
    }

    @Test func withAPINTheBadgeOnlyNamesTheDriverAndClearsNoFailures() {
        var session = DriverSession()
        _ = session.badge(state: .offDuty, now: 0, pinRequired: true, identify: { nil })
        #expect(session.badge(state: .offDuty, now: 1, pinRequired: true, identify: { "42" }) == .promptPIN(driver: "42"))
        #expect(session.driver == nil)
        #expect(session.lockout.failures == 1)
        var entry = LoginEntry(pinOf: "42", at: 1)
        #expect(entry.driver == "42" && entry.onPIN)
        for digit in "1234" { _ = entry.type(.character(digit), at: 2) }
        guard case .submit(let input) = entry.type(.enter, at: 3) else { Issue.record("no submit"); return }
        #expect(input == .login(driver: "42", pin: "1234"))
        let outcome = session.handle(input, state: .offDuty, now: 4, verify: DriverSessionTests.verify, preferences: { _ in DriverPreferences() })
        #expect(outcome == .loggedIn("42"))
        #expect(session.lockout.failures == 0)
    }
}
