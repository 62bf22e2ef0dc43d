import TaxiProtocol
import UnitCore

/// Machines in a given state, as the shell would have driven them there.
enum Scenario {
    static let pickup = Place(lat: 46.948, lon: 7.4474, address: "Bahnhofplatz 1")

    static func machine(in state: StateName) -> UnitStateMachine {
        var machine = UnitStateMachine(settings: UnitSettings(seats: 4))
        let start = now - .seconds(600)
        let offer = JobOffer(job: "J-1842", pickup: pickup, respondWithinS: 3600)
        var events: [UnitEvent] = []
        switch state {
        case .offDuty: break
        case .available: events = [.driver(.duty, at: start)]
        case .paused: events = [.driver(.duty, at: start), .driver(.pause(.break), at: start)]
        case .offered: events = [.driver(.duty, at: start), .inbound(.offer(offer), receivedAt: start)]
        case .enRoute: events = [.driver(.duty, at: start), .inbound(.offer(offer), receivedAt: start), .driver(.accept, at: start)]
        case .atPickup:
            events = [.driver(.duty, at: start), .inbound(.offer(offer), receivedAt: start), .driver(.accept, at: start), .driver(.arrived, at: start)]
        case .onBoard:
            events = [
                .driver(.duty, at: start), .inbound(.offer(offer), receivedAt: start), .driver(.accept, at: start), .driver(.arrived, at: start),
                .driver(.passengersOnBoard(nil), at: start),
            ]
        }
        for event in events { _ = machine.handle(event) }
        return machine
    }
}
