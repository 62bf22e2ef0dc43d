import DispatchCore
import Foundation
import TaxiProtocol
import Testing

/// One driver on one taxi, the dispatcher's rule (docs/protocol.md, "One driver, one taxi").
@Suite struct DriverLoginsTests {
    /// Feeds a unit's `event` as the unit writes it, decoded as the dispatcher reads it.
    @discardableResult
    func event(_ h: inout Harness, _ unit: String, _ json: String) throws -> [DispatchAction] {
        let payload = #"{"id":"\#(h.id())","seq":1,"unit":"\#(unit)",\#(json)}"#
        let report = try #require(try UnitReport.decode(.event, Data(payload.utf8)))
        return h.feed(.report(unit: unit, report))
    }

    func login(_ h: inout Harness, _ unit: String, _ driver: String, at loginT: Int64) throws -> [DispatchAction] {
        try event(&h, unit, #""driver":"\#(driver)","login_t":\#(loginT),"t":\#(loginT),"type":"login""#)
    }

    func logouts(_ actions: [DispatchAction]) -> [String] {
        actions.compactMap {
            if case .logout(let unit, let logout) = $0 { "\(logout.driver)@\(unit) since \(logout.loginT ?? -1), elsewhere \(logout.elsewhere)" } else { nil }
        }
    }

    func sent(_ actions: [DispatchAction]) throws -> DriverLogout {
        try #require(actions.compactMap { if case .logout(_, let logout) = $0 { logout } else { nil } }.first)
    }

    @Test func aLaterLoginElsewhereLogsTheFirstUnitOut() throws {
        var h = Harness()
        #expect(logouts(try login(&h, "T1", "D1", at: 1_000)).isEmpty)
        let actions = try login(&h, "T2", "D1", at: 2_000)
        #expect(logouts(actions) == ["D1@T1 since 1000, elsewhere T2"])
        #expect(h.dispatcher.logins.holders["D1"] == .init(unit: "T2", loginT: 2_000))
        // The unit's logout closes it; the driver stays T2's.
        let logout = try sent(actions)
        try event(&h, "T1", #""driver":"D1","elsewhere":"T2","login_t":1000,"logout":"\#(logout.id)","reason":"logged_in_elsewhere","t":2100,"type":"logout""#)
        #expect(h.dispatcher.logins.holders["D1"] == .init(unit: "T2", loginT: 2_000))
    }

    @Test func anOlderLoginDeliveredLateLoses() throws {
        var h = Harness()
        _ = try login(&h, "T2", "D1", at: 2_000)
        // T1 logged the driver in at 1000 while its broker was down: heard only now, it loses.
        let actions = try login(&h, "T1", "D1", at: 1_000)
        #expect(logouts(actions) == ["D1@T1 since 1000, elsewhere T2"])
        #expect(h.dispatcher.logins.holders["D1"] == .init(unit: "T2", loginT: 2_000))
    }

    @Test func aLoginAgainOnTheSameUnitOrByAnotherDriverLogsNobodyOut() throws {
        var h = Harness()
        _ = try login(&h, "T1", "D1", at: 1_000)
        #expect(logouts(try login(&h, "T1", "D1", at: 3_000)).isEmpty)
        #expect(logouts(try login(&h, "T2", "D2", at: 3_500)).isEmpty)
        // D1 logged out of T1 by itself: a login on T2 afterwards logs nobody out.
        try event(&h, "T1", #""driver":"D1","login_t":3000,"reason":"driver","t":4000,"type":"logout""#)
        #expect(h.dispatcher.logins.holders["D1"] == nil)
        #expect(logouts(try login(&h, "T3", "D1", at: 5_000)).isEmpty)
    }

    @Test func aDuplicateLoginEventIsCountedOnce() throws {
        var h = Harness()
        _ = try login(&h, "T1", "D1", at: 1_000)
        let payload = #"{"driver":"D1","id":"dup","login_t":2000,"seq":1,"t":2000,"type":"login","unit":"T2"}"#
        let report = try #require(try UnitReport.decode(.event, Data(payload.utf8)))
        #expect(logouts(h.feed(.report(unit: "T2", report))).count == 1)
        #expect(logouts(h.feed(.report(unit: "T2", report))).isEmpty)
    }

    @Test func aLogoutRefusedOnDutyGoesAgainOffDuty() throws {
        var h = Harness()
        _ = try login(&h, "T1", "D1", at: 1_000)
        let first = try sent(try login(&h, "T2", "D1", at: 2_000))
        try event(&h, "T1", #""driver":"D1","logout":"\#(first.id)","reason":"on_duty","t":2100,"type":"logout_refused""#)
        #expect(logouts(statusWithDriver(&h, "T1", "available", "D1")).isEmpty, "still on duty")
        let again = statusWithDriver(&h, "T1", "off_duty", "D1")
        #expect(logouts(again) == ["D1@T1 since 1000, elsewhere T2"])
        #expect(try sent(again).id != first.id, "a new logout, not a replay")
        #expect(logouts(statusWithDriver(&h, "T1", "off_duty", "D1")).isEmpty, "sent once per refusal")
    }

    @Test func anyOtherRefusalClosesTheLogout() throws {
        var h = Harness()
        _ = try login(&h, "T1", "D1", at: 1_000)
        let first = try sent(try login(&h, "T2", "D1", at: 2_000))
        let actions = try event(&h, "T1", #""logout":"\#(first.id)","reason":"not_logged_in","t":2100,"type":"logout_refused""#)
        #expect(actions.contains { if case .log(let line) = $0 { line.text.contains("not_logged_in") } else { false } })
        #expect(logouts(statusWithDriver(&h, "T1", "off_duty", nil)).isEmpty)
    }

    func statusWithDriver(_ h: inout Harness, _ unit: String, _ state: String, _ driver: String?) -> [DispatchAction] {
        h.now += 1
        let driverField = driver.map { #","driver":"\#($0)""# } ?? ""
        let status: StatusMessage = decoded(#"{"online":true,"unit":"\#(unit)","state":"\#(state)","seats_left":4,"t":\#(h.now)\#(driverField)}"#)
        return h.feed(.report(unit: unit, .status(status)))
    }
}
