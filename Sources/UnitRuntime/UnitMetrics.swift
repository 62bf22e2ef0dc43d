import CoreMetrics

/// The unit's counters and gauges, recorded through swift-metrics (docs/protocol.md, "telemetry",
/// lists them). Counted where the engine sees the event; counts that an adapter or the state
/// machine keeps themselves are carried over as differences at each telemetry tick.
struct UnitMetrics {
    let fixesReceived: Counter
    let fixesRefused: Counter
    let messagesPublished: Counter
    let messagesAcknowledged: Counter
    /// PUBACKs with a reason code of 0x80 or more (MQTT 5): the broker did not take the message.
    let messagesRefused: Counter
    let brokerConnects: Counter
    let brokerDisconnects: Counter
    let inboundOverRate: Counter
    let inboxFull: Counter

    let outboxDepth: Gauge
    let outboxInFlight: Gauge
    let gpsdConnected: Gauge
    let brokerConnected: Gauge
    let lastFixAgeS: Gauge
    let volatileStore: Gauge
    let setAside: Gauge

    /// What the machine, the inbound rate limit and the inbox counted at the last tick.
    private var carried = (refused: 0, overRate: 0, inboxFull: 0)

    /// `factory` nil: recorded nowhere (the engine in tests, without telemetry).
    init(factory: (any MetricsFactory)?) {
        let factory = factory ?? NOOPMetricsHandler.instance
        func counter(_ label: String) -> Counter { Counter(label: label, dimensions: [], factory: factory) }
        func gauge(_ label: String) -> Gauge { Gauge(label: label, dimensions: [], factory: factory) }
        fixesReceived = counter("fixes_received")
        fixesRefused = counter("fixes_refused")
        messagesPublished = counter("messages_published")
        messagesAcknowledged = counter("messages_acknowledged")
        messagesRefused = counter("messages_refused")
        brokerConnects = counter("broker_connects")
        brokerDisconnects = counter("broker_disconnects")
        inboundOverRate = counter("inbound_over_rate")
        inboxFull = counter("inbox_full")
        outboxDepth = gauge("outbox_depth")
        outboxInFlight = gauge("outbox_in_flight")
        gpsdConnected = gauge("gpsd_connected")
        brokerConnected = gauge("broker_connected")
        lastFixAgeS = gauge("last_fix_age_s")
        volatileStore = gauge("volatile_store")
        setAside = gauge("set_aside")
    }

    /// What each metric counts or shows, by label: the `# HELP` lines of the textfile
    /// (docs/protocol.md, "telemetry", says the same).
    static let help: [String: String] = [
        "fixes_received": "gpsd reports with a position since the start.",
        "fixes_refused": "gpsd reports refused for impossible values since the start.",
        "messages_published": "Outbox messages handed to the broker since the start, resends included.",
        "messages_acknowledged": "Outbox messages the broker acknowledged since the start.",
        "messages_refused": "PUBACKs with an MQTT 5 reason code of 0x80 or more since the start; the message is kept and sent again.",
        "broker_connects": "Connections to the broker since the start.",
        "broker_disconnects": "Connections to the broker lost since the start.",
        "inbound_over_rate": "Inbound MQTT messages dropped by the inbound rate limit since the start.",
        "inbox_full": "Inputs dropped because the engine fell behind, since the start.",
        "outbox_depth": "Messages and points waiting for the broker's acknowledgement.",
        "outbox_in_flight": "Outbox messages handed to the broker and not yet acknowledged.",
        "gpsd_connected": "1 while gpsd is connected, else 0.",
        "broker_connected": "1 while the broker is connected, else 0.",
        "last_fix_age_s": "Seconds since the last valid fix was received; -1 before the first.",
        "volatile_store": "1 while a volatile store is in use because the store could not be opened, else 0.",
        "set_aside": "Entries set aside since the store was created.",
    ]

    /// Counts kept elsewhere as running totals, turned into counter increments.
    mutating func carryOver(fixesRefused refused: Int, inboundOverRate overRate: Int, inboxFull full: Int) {
        if refused > carried.refused { fixesRefused.increment(by: refused - carried.refused) }
        if overRate > carried.overRate { inboundOverRate.increment(by: overRate - carried.overRate) }
        if full > carried.inboxFull { inboxFull.increment(by: full - carried.inboxFull) }
        carried = (max(refused, carried.refused), max(overRate, carried.overRate), max(full, carried.inboxFull))
    }
}
