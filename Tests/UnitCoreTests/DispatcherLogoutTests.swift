import TaxiProtocol
import Testing
import UnitCore

/// The dispatcher's `driver/logout` in the driver session: only the login it names ends, off duty.
@Suite struct DispatcherLogoutTests {
    static func verify(_ id: String, _ pin: String) -> LoginVerdict { id == "42" && pin == "1234" ? .accepted : .wrongPIN }

    func loggedIn(at time: UnitTime) -> DriverSession {
        var session = DriverSession()
        _ = session.handle(.login(driver: "42", pin: "1234"), state: .offDuty, now: time, verify: Self.verify, preferences: { _ in DriverPreferences() })
        return session
    }

    func logout(_ driver: String = "42", loginT: Int64?) -> DriverLogout {
        DriverLogout(id: "out-1", driver: driver, loginT: loginT, elsewhere: "T7")
    }

    @Test func aLoginRemembersItsTimeAndTheRecordKeepsIt() {
        let session = loggedIn(at: 5_000)
        #expect(session.loggedInAt == 5_000)
        #expect(session.record.loggedInAt == 5_000)
        #expect(DriverSession(restoring: session.record).loggedInAt == 5_000)
        #expect(DriverSession(restoring: DriverSessionRecord(loggedInAt: 5_000)).loggedInAt == nil, "no driver, no login time")
    }

    @Test func theNamedLoginIsLoggedOutOffDuty() {
        var session = loggedIn(at: 5_000)
        #expect(session.dispatcherLogout(logout(loginT: 5_000), state: .offDuty) == .loggedOut(driver: "42", loginT: 5_000))
        #expect(session.driver == nil && session.loggedInAt == nil)
        #expect(session.record.driver == nil && session.record.loggedInAt == nil)
    }

    @Test func withoutALoginTimeAnyLoginOfTheDriverEnds() {
        var session = loggedIn(at: 5_000)
        #expect(session.dispatcherLogout(logout(loginT: nil), state: .offDuty) == .loggedOut(driver: "42", loginT: 5_000))
        var stored = DriverSession(restoring: DriverSessionRecord(driver: "42"))
        #expect(stored.dispatcherLogout(logout(loginT: 9_000), state: .offDuty) == .loggedOut(driver: "42", loginT: nil))
    }

    @Test func aStaleOrReplayedLogoutChangesNothing() {
        var session = loggedIn(at: 5_000)
        #expect(session.dispatcherLogout(logout(loginT: 4_000), state: .offDuty) == .refused(.otherLogin), "an earlier login")
        #expect(session.dispatcherLogout(logout("7", loginT: 5_000), state: .offDuty) == .refused(.otherDriver))
        #expect(session.driver == "42" && session.loggedInAt == 5_000)
        #expect(session.dispatcherLogout(logout(loginT: 5_000), state: .offDuty) == .loggedOut(driver: "42", loginT: 5_000))
        #expect(session.dispatcherLogout(logout(loginT: 5_000), state: .offDuty) == .refused(.notLoggedIn), "the same logout again")
    }

    @Test func onDutyTheDriverKeepsTheTaxi() {
        for state in [StateName.available, .paused, .offered, .enRoute, .atPickup, .onBoard] {
            var session = loggedIn(at: 5_000)
            #expect(session.dispatcherLogout(logout(loginT: 5_000), state: state) == .refused(.onDuty), "\(state)")
            #expect(session.driver == "42")
        }
    }

    @Test func theDriversOwnLogoutForgetsTheLoginTime() {
        var session = loggedIn(at: 5_000)
        _ = session.handle(.logout, state: .offDuty, now: 6_000, verify: Self.verify, preferences: { _ in DriverPreferences() })
        #expect(session.loggedInAt == nil)
    }

    @Test func aLogoutIsReadStrictly() throws {
        let now: UnitTime = 1_800_000_000_000
        func read(_ json: String) -> Result<DriverLogout, DriverLogout.Problem> { DriverLogout.decode(payload: Array(json.utf8), now: now) }
        let good = #"{"driver":"D-1","elsewhere":"T7","id":"out-1","login_t":1800000000000,"reason":"logged_in_elsewhere"}"#
        #expect(try read(good).get() == DriverLogout(id: "out-1", driver: "D-1", loginT: 1_800_000_000_000, elsewhere: "T7"))
        let refused: [(String, DriverLogout.Problem)] = [
            ("[]", .init(id: nil, reason: "payload is not a JSON object")),
            (#"{"driver":"D 1","elsewhere":"T7","id":"o","reason":"logged_in_elsewhere"}"#, .init(id: "o", reason: "driver must be 1-32 letters, digits, - or _")),
            (#"{"driver":"D1","elsewhere":"T7","id":"o","reason":"driver"}"#, .init(id: "o", reason: "reason must be logged_in_elsewhere")),
            (#"{"driver":"D1","elsewhere":"","id":"o","reason":"logged_in_elsewhere"}"#, .init(id: "o", reason: "elsewhere must not be empty")),
            (#"{"driver":"D1","elsewhere":"T7","id":"o","login_t":1,"reason":"logged_in_elsewhere"}"#,
             .init(id: "o", reason: "login_t is more than a year from the unit clock")),
        ]
        for (json, problem) in refused {
            #expect(read(json) == .failure(problem), "\(json)")
        }
        guard case .failure(let missing) = read(#"{"driver":"D1","elsewhere":"T7","reason":"logged_in_elsewhere"}"#) else {
            Issue.record("a logout without an id was read")
            return
        }
        #expect(missing.id == nil)
        guard case .failure(let duplicate) = read(#"{"id":"o","id":"p"}"#) else {
            Issue.record("duplicate keys were read")
            return
        }
        #expect(duplicate.id == nil && duplicate.reason.hasPrefix("payload is not strict JSON"))
    }
}
