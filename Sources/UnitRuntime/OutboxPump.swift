import MQTTLink

/// Which outbox rows libmosquitto currently holds for us, by (session, mid). A row is only marked
/// delivered on its PUBACK; when the session ends the map is dropped and the rows are sent again.
struct OutboxPump {
    /// The fleet may change it ([mqtt] max_inflight) without a reconnect.
    var maxInFlight: Int
    private var session: MQTTSessionID?
    private var rowsByTicket: [MQTTPublishTicket: Int64] = [:]

    init(maxInFlight: Int) {
        self.maxInFlight = maxInFlight
    }

    /// nil while disconnected.
    var freeSlots: Int? {
        session == nil ? nil : maxInFlight - rowsByTicket.count
    }

    var inFlightRows: Set<Int64> { Set(rowsByTicket.values) }

    mutating func sessionStarted(_ session: MQTTSessionID) {
        self.session = session
        rowsByTicket.removeAll()
    }

    mutating func sessionEnded() {
        session = nil
        rowsByTicket.removeAll()
    }

    mutating func handedOver(_ rowID: Int64, as ticket: MQTTPublishTicket) {
        rowsByTicket[ticket] = rowID
    }

    /// The row the PUBACK is for, if it belongs to the current session.
    mutating func acknowledged(_ ticket: MQTTPublishTicket) -> Int64? {
        guard ticket.session == session else { return nil }
        return rowsByTicket.removeValue(forKey: ticket)
    }
}
