import FleetControl
import TaxiProtocol
import Testing
import UnitConfig
import UnitCoordination
import UnitCore

/// The one core: a fleet document, a login and a command are each one input and one step, and
/// what the step announces is already in force in the core when the shell gets it.
@Suite struct UnitCoordinatorTests {
    let fleet = FleetFixture()
    let now: UnitTime = 1_800_000_000_000

    func coordinator() throws -> UnitCoordinator {
        let fleetConfig = try fleet.machine()
        let trust = fleetConfig.trust
        return UnitCoordinator(
            machine: UnitStateMachine(settings: fleetConfig.configuration.unitSettings), session: DriverSession(), fleetConfig: fleetConfig,
            commands: CommandGate(trust: trust))
    }

    func key(_ typed: LoginEntry.Key, terminal: Bool = true) -> UnitInput {
        .driver(nil, key: typed, context: SessionContext(hasTerminal: terminal), at: now)
    }

    @Test func aDocumentIsInForceInTheStepThatAcknowledgesIt() throws {
        var core = try coordinator()
        #expect(core.machine.settings.positions.offDutyPositions)
        let step = core.handle(.fleetConfig(try fleet.config(4, #"{"reporting":{"interval_s":1},"privacy":{"off_duty_positions":false}}"#, at: now)))
        #expect(step.acks == [ConfigAck(scope: .fleet, version: 4, result: .applied)])
        #expect(step.fleetRecords.map(\.scope) == [.fleet])
        #expect(step.configuration?.configuration == core.configuration)
        // The ack and the settings it announces are one step: the machine already runs on them.
        #expect(core.machine.settings == core.configuration.unitSettings)
        #expect(!core.machine.settings.positions.offDutyPositions)
        #expect(core.configuration.reporting.rule(for: "available").intervalS == 1)
        #expect(step.durability == .promised)
    }

    @Test func aRejectedDocumentChangesNothingAndIsStillAnswered() throws {
        var core = try coordinator()
        let before = core.machine.settings
        let step = core.handle(.fleetConfig(try fleet.config(4, #"{"reporting":{"interval_s":"fast"}}"#, at: now)))
        #expect(step.acks.map(\.result) == [.rejected])
        #expect(step.configuration == nil && step.fleetRecords.isEmpty)
        #expect(core.machine.settings == before)
        #expect(step.durability == .stored)
    }

    @Test func aLoginTypedOnTheTerminalIsTakenKeyByKeyAndAWrongOneIsCountedOnce() throws {
        var core = try coordinator()
        let prompt = core.handle(.driver(DriverCommand(text: "login", action: .session(.loginPrompt)), key: nil, context: SessionContext(hasTerminal: true), at: now))
        #expect(prompt.sessionEvent == .loginPrompted)
        #expect(core.loginEntry != nil)
        for typed: LoginEntry.Key in [.character("D"), .character("7"), .enter, .character("1"), .character("2")] {
            let step = core.handle(key(typed))
            #expect(step == UnitStep(), "a key typed into the login changes nothing else")
        }
        // A key lost on the line empties the PIN: it is never submitted short.
        _ = core.handle(key(.lost))
        #expect(core.loginEntry?.pin == "")
        for digit in "2468" { _ = core.handle(key(.character(digit))) }
        let submitted = core.handle(key(.enter))
        #expect(submitted.sessionEvent == .refused(.wrongLogin))
        #expect(submitted.session == DriverSessionRecord(driver: nil, failures: 1, lockedUntil: nil))
        #expect(submitted.durability == .promised)
        #expect(core.loginEntry == nil)
    }

    /// The driver's words as a key or `taxiunitctl press` gives them: one input, one step each.
    func press(_ core: inout UnitCoordinator, _ words: String, at time: UnitTime) throws -> UnitStep {
        let command = try DriverCommand.parse(words).get()
        return core.handle(.driver(command, key: nil, context: SessionContext(hasTerminal: true), at: time))
    }

    @Test func aCancelRequestIsOneStoredStepAndTheAnswerAnother() throws {
        var core = try coordinator()
        _ = try press(&core, "duty", at: now)
        _ = core.handle(.job(.inbound(.offer(JobOffer(job: "J1", pickup: Place(lat: 46.5, lon: 7.5))), receivedAt: now)))
        _ = try press(&core, "accept", at: now + .milliseconds(1000))
        let asked = try press(&core, "drop unreachable", at: now + .milliseconds(2000))
        #expect(asked.job.messages == [.cancelRequest(CancelRequest(job: "J1", reason: .passengerUnreachable, at: now + .milliseconds(2000)), state: .enRoute)])
        #expect(asked.durability == .promised)
        #expect(core.machine.snapshot.cancelRequest?.job == "J1")
        let again = try press(&core, "drop vehicle", at: now + .milliseconds(3000))
        #expect(again.job.refusals == [.dropAlreadyAsked])
        #expect(again.durability == .nothingToStore)
        // A refusal delivered twice: answered twice alike, shown once.
        let refusal = JobUpdate(job: "J1", update: "U1", cancelRefused: true)
        let refused = core.handle(.job(.inbound(.update(refusal), receivedAt: now + .milliseconds(4000))))
        #expect(refused.job.cancelAnswer?.confirmed == false)
        let redelivered = core.handle(.job(.inbound(.update(refusal), receivedAt: now + .milliseconds(5000))))
        #expect(redelivered.job.replies == refused.job.replies)
        #expect(redelivered.job.cancelAnswer == nil)
        #expect(core.machine.state.name == .enRoute)
    }

    @Test func withoutATerminalALoginMustBeGivenWhole() throws {
        var core = try coordinator()
        let step = core.handle(.driver(DriverCommand(text: "login", action: .session(.loginPrompt)), key: nil, context: SessionContext(), at: now))
        #expect(step.job.told == ["login needs a driver id and a PIN: login <id> <pin>"])
        #expect(core.loginEntry == nil && step.session == nil)
    }

    @Test func anExecutedCommandCarriesWhatItDoesAndIsStoredWithItsReply() throws {
        var core = try coordinator()
        let purge = try fleet.signed(#"{"id":"c1","cmd":"purge","days":2,"expires_at":\#(now + .milliseconds(60_000))}"#, topic: fleet.commandTopic)
        let step = core.handle(.fleetCommand(payload: purge, topic: fleet.commandTopic, at: now))
        #expect(step.command == .execute(FleetCommand(id: "c1", name: "purge", action: .purge(days: 2), expiresAt: now + .milliseconds(60_000)), .purge(before: now - .seconds(2 * 86_400))))
        #expect(step.durability == .promised)
        #expect(core.handle(.fleetCommand(payload: purge, topic: fleet.commandTopic, at: now + .milliseconds(1))).command == .ignore(id: "c1"))

        let report = try fleet.signed(#"{"id":"c2","cmd":"report","expires_at":\#(now + .milliseconds(60_000))}"#, topic: fleet.commandTopic)
        let reported = core.handle(.fleetCommand(payload: report, topic: fleet.commandTopic, at: now))
        #expect(reported.command == .execute(FleetCommand(id: "c2", name: "report", action: .report, expiresAt: now + .milliseconds(60_000)), .noFixToReport))

        let refused = core.handle(.fleetCommand(payload: Array("{}".utf8), topic: fleet.commandTopic, at: now))
        guard case .refuse = refused.command else {
            Issue.record("an unsigned command is refused: \(String(describing: refused.command))")
            return
        }
        #expect(refused.durability == .stored)
    }
}

/// One driver on one taxi: the coordinator announces logins and obeys or answers `driver/logout`.
@Suite struct DispatcherLogoutCoordinatorTests {
    let fleet = FleetFixture()
    let now: UnitTime = 1_800_000_000_000

    func coordinator(driver: String? = "D1", loggedInAt: UnitTime? = 1_799_999_000_000) throws -> UnitCoordinator {
        let fleetConfig = try fleet.machine()
        return UnitCoordinator(
            machine: UnitStateMachine(settings: fleetConfig.configuration.unitSettings),
            session: DriverSession(restoring: DriverSessionRecord(driver: driver, loggedInAt: loggedInAt)), fleetConfig: fleetConfig,
            commands: CommandGate(trust: fleetConfig.trust))
    }

    func logout(_ id: String = "out-1", driver: String = "D1", loginT: Int64? = 1_799_999_000_000) -> UnitInput {
        .driverLogout(.success(DriverLogout(id: id, driver: driver, loginT: loginT, elsewhere: "T7")), at: now)
    }

    @Test func theDriverIsLoggedOutToldWhyAndTheDispatcherAnswered() throws {
        var core = try coordinator()
        let step = core.handle(logout())
        #expect(core.session.driver == nil && !core.machine.driverLoggedIn)
        #expect(step.session == DriverSessionRecord(driver: nil))
        #expect(step.sessionEvent == .loggedInElsewhere(driver: "D1", unit: "T7", loggedOut: true))
        #expect(step.job.told == ["Logged out: D1 is logged in on T7"])
        #expect(step.job.status != nil, "the retained status drops the driver")
        #expect(step.driver == nil)
        #expect(step.job.messages == [
            .driverSession(
                DriverSessionEvent(type: .logout, t: now, loginT: 1_799_999_000_000, reason: .loggedInElsewhere, elsewhere: "T7", logout: "out-1"),
                driver: "D1")
        ])
        #expect(step.durability == .promised)
        // The same logout again, as after a redelivery: answered, nothing changes.
        let again = core.handle(logout())
        #expect(again.session == nil && again.sessionEvent == nil)
        #expect(again.job.messages == [.logoutRefused(LogoutRefusedEvent(t: now, logout: "out-1", reason: .notLoggedIn))])
    }

    @Test func aLogoutForAnotherLoginOrDriverChangesNothing() throws {
        var core = try coordinator()
        for (input, reason) in [(logout(loginT: 1_700_000_000_000), LogoutRefusedEvent.Reason.otherLogin), (logout(driver: "D2"), .otherDriver)] {
            let step = core.handle(input)
            #expect(step.session == nil && step.sessionEvent == nil && step.job.status == nil)
            #expect(step.job.messages == [.logoutRefused(LogoutRefusedEvent(t: now, logout: "out-1", reason: reason))])
            #expect(step.driver == "D1")
        }
        #expect(core.session.driver == "D1")
    }

    @Test func onDutyTheDriverIsToldAndKeepsTheTaxi() throws {
        var core = try coordinator()
        _ = core.handle(.driver(try DriverCommand.parse("duty").get(), key: nil, context: SessionContext(), at: now))
        #expect(core.machine.state == .available)
        let step = core.handle(logout())
        #expect(core.session.driver == "D1" && step.session == nil)
        #expect(step.sessionEvent == .loggedInElsewhere(driver: "D1", unit: "T7", loggedOut: false))
        #expect(step.job.messages == [.logoutRefused(LogoutRefusedEvent(t: now, logout: "out-1", reason: .onDuty))])
        #expect(step.job.told == ["D1 is logged in on T7: log out when off duty"])
    }

    @Test func anUnreadableLogoutIsAnsweredInvalid() throws {
        var core = try coordinator()
        let step = core.handle(.driverLogout(.failure(DriverLogout.Problem(id: "out-9", reason: "driver must be 1-32 letters, digits, - or _")), at: now))
        #expect(core.session.driver == "D1" && step.session == nil)
        #expect(step.job.messages == [
            .logoutRefused(LogoutRefusedEvent(t: now, logout: "out-9", reason: .invalid, problem: "driver must be 1-32 letters, digits, - or _"))
        ])
    }

    @Test func aLoginIsAnnouncedWithItsTime() throws {
        var core = try coordinator(driver: nil, loggedInAt: nil)
        let credential = try #require(DriverRoster.hash(pin: "1234", rounds: 1000)).text
        _ = core.handle(.fleetConfig(try fleet.config(3, #"{"driver":{"drivers":{"D1":"\#(credential)"}}}"#, at: now)))
        let step = core.handle(.driver(try DriverCommand.parse("login D1 1234").get(), key: nil, context: SessionContext(), at: now))
        #expect(core.session.driver == "D1" && core.session.loggedInAt == now)
        #expect(step.session?.loggedInAt == now)
        #expect(step.job.messages == [.driverSession(DriverSessionEvent(type: .login, t: now, loginT: now), driver: "D1")])
    }

    @Test func theDriversOwnLogoutIsAnnouncedWithItsLogin() throws {
        var core = try coordinator()
        let step = core.handle(.driver(try DriverCommand.parse("logout").get(), key: nil, context: SessionContext(), at: now))
        #expect(step.job.messages == [
            .driverSession(DriverSessionEvent(type: .logout, t: now, loginT: 1_799_999_000_000, reason: .driver), driver: "D1")
        ])
    }
}
