import DriverDisplay
import LocalCache
import TaxiProtocol
import UnitCore

/// The open shift's rides as the history pages show them. Kept in memory so that the history key
/// reads nothing from the store: read once at the start, then added to from every step that ends
/// a ride.
struct ShiftHistory {
    /// The most rides that keep a page of their own; the totals count every ride of the shift.
    static let pagesKept = 20

    /// The shift the rides belong to (its start, unit clock); nil: none open when they were counted.
    private var shiftStart: UnitTime?
    private var history = DriverView.History(rides: [], driving: nil)

    /// `rides`: those the store holds for `shift`, oldest first.
    init(shift: Shift?, rides: [RideRecord]) {
        shiftStart = shift?.startedAt
        for ride in rides { history.add(Self.page(ride), pagesKept: Self.pagesKept) }
    }

    /// A ride the core just ended, in `shift` (the rides of an earlier shift are let go).
    mutating func ended(_ ride: RideSummary, in shift: Shift?) {
        if shift?.startedAt != shiftStart { self = ShiftHistory(shift: shift, rides: []) }
        let label = DriverView.HistoryRide.pickupLabel(address: ride.pickupAddress, position: ride.pickupFix.map(Coordinate.init), job: ride.job)
        history.add(DriverView.HistoryRide(dropTime: ride.dropTime, label: label, fare: ride.fare, payment: ride.payment), pagesKept: Self.pagesKept)
    }

    /// What the pages show in `shift`: its rides and driving time; empty without a shift, or for a
    /// shift that started after the rides counted.
    func history(in shift: Shift?) -> DriverView.History {
        guard let shift, shift.startedAt == shiftStart else { return DriverView.History(rides: [], driving: shift?.driving) }
        var shown = history
        shown.driving = shift.driving
        return shown
    }

    private static func page(_ ride: RideRecord) -> DriverView.HistoryRide {
        DriverView.HistoryRide(
            dropTime: ride.dropTime, label: DriverView.HistoryRide.pickupLabel(address: ride.pickupAddress, position: ride.pickupPosition, job: ride.job),
            fare: ride.fare, payment: ride.payment)
    }
}
