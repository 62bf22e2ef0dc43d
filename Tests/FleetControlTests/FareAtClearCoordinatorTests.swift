import FleetControl
import TaxiProtocol
import Testing
import UnitConfig
import UnitCoordination
import UnitCore

/// The terminal's clear key on board opens the fare and payment screen in the core, whose keys
/// clear the ride; elsewhere, and without a terminal, clear clears at once.
@Suite struct FareAtClearCoordinatorTests {
    let fleet = FleetFixture()
    let now: UnitTime = 1_800_000_000_000
    let terminal = SessionContext(hasTerminal: true)

    func onBoard(quoting fare: Int64?, paymentRequired: Bool = false) throws -> UnitCoordinator {
        let fleetConfig = try fleet.machine()
        var settings = fleetConfig.configuration.unitSettings
        settings.paymentRequired = paymentRequired
        var core = UnitCoordinator(
            machine: UnitStateMachine(settings: settings), session: DriverSession(), fleetConfig: fleetConfig,
            commands: CommandGate(trust: fleetConfig.trust))
        let offer = JobOffer(job: "J1", pickup: Place(lat: 46.5, lon: 7.5), fare: fare, currency: fare.map { _ in "EUR" })
        for input: DriverInput in [.duty] { _ = core.handle(word(input)) }
        _ = core.handle(.job(.inbound(.offer(offer), receivedAt: now)))
        for input: DriverInput in [.accept, .arrived, .passengersOnBoard(1)] { _ = core.handle(word(input)) }
        #expect(core.machine.state.name == .onBoard)
        return core
    }

    func word(_ input: DriverInput) -> UnitInput {
        .driver(DriverCommand(text: "\(input)", action: .job(input)), key: nil, context: SessionContext(), at: now)
    }

    /// A terminal key: its character, and the command it is mapped to, if any.
    func key(_ character: Character, _ command: DriverInput? = nil) -> UnitInput {
        .driver(command.map { DriverCommand(text: "\($0)", action: .job($0)) }, key: .character(character), context: terminal, at: now)
    }

    @Test func aQuotedFareIsPaidByCardWithOneKey() throws {
        var core = try onBoard(quoting: 2350)
        let opened = core.handle(key("c", .clear))
        #expect(opened.job.ride == nil && core.fareEntry?.choosingPayment == true)
        #expect(core.machine.state.name == .onBoard)
        // `2` is also `pob 2`: on the screen it is the second payment method.
        let paid = core.handle(key("2", .passengersOnBoard(2)))
        #expect(paid.job.ride?.fare == Fare(amount: 2350, currency: "EUR", source: .quoted) && paid.job.ride?.payment == "card")
        #expect(core.fareEntry == nil && core.machine.state == .available)
    }

    @Test func aTypedFareIsPaidInCash() throws {
        var core = try onBoard(quoting: nil)
        _ = core.handle(key("c", .clear))
        #expect(core.fareEntry?.choosingPayment == false)
        for digit in "1890" { #expect(core.handle(key(digit)).job == Step(), "typing changes nothing else") }
        _ = core.handle(.driver(nil, key: .enter, context: terminal, at: now))
        let paid = core.handle(key("1", .passengersOnBoard(1)))
        #expect(paid.job.ride?.fare == Fare(amount: 1890, currency: "EUR", source: .typed) && paid.job.ride?.payment == "cash")
    }

    @Test func aRequiredPaymentKeepsTheScreenOpenWhenSkipped() throws {
        var core = try onBoard(quoting: 2350, paymentRequired: true)
        _ = core.handle(key("c", .clear))
        let skipped = core.handle(key("c", .clear))
        #expect(skipped.job.refusals == [.paymentRequired] && skipped.job.ride == nil)
        #expect(core.fareEntry != nil && core.machine.state.name == .onBoard)
        #expect(core.handle(key("3")).job.ride?.payment == "account")
    }

    /// The fixture's unit has no serial terminal, where a required payment would be picked.
    @Test func aDocumentRequiringAPaymentWithoutATerminalIsRejected() throws {
        var core = try onBoard(quoting: nil)
        let step = core.handle(.fleetConfig(try fleet.config(4, #"{"job":{"payment_required":true}}"#, at: now)))
        #expect(step.acks.map(\.result) == [.rejected])
        #expect(!core.machine.settings.paymentRequired)
    }

    @Test func aRideClearedFromTheControlSocketTakesItsScreenAlong() throws {
        var core = try onBoard(quoting: nil)
        _ = core.handle(key("c", .clear))
        #expect(core.fareEntry != nil)
        let cleared = core.handle(word(.clearSettled(Settlement(payment: "cash", typedFare: 700))))
        #expect(cleared.job.ride?.fare?.amount == 700 && core.fareEntry == nil)
        // The next key is an ordinary key again: `d` goes off duty.
        _ = core.handle(key("d", .duty))
        #expect(core.machine.state == .offDuty)
    }

    @Test func withoutATerminalOrAfterEraseNothingIsAsked() throws {
        var core = try onBoard(quoting: 2350)
        _ = core.handle(key("c", .clear))
        _ = core.handle(.driver(nil, key: .erase, context: terminal, at: now))
        #expect(core.fareEntry == nil && core.machine.state.name == .onBoard, "erase closes the screen: still on board")
        let cleared = core.handle(word(.clear))
        #expect(cleared.job.ride?.payment == nil && cleared.job.ride?.fare?.amount == 2350 && core.fareEntry == nil)
    }
}
