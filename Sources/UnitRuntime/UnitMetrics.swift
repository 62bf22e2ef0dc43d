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

    /// Counts kept elsewhere as running totals, turned into counter increments.
    mutating func carryOver(fixesRefused refused: Int, inboundOverRate overRate: Int, inboxFull full: Int) {
        if refused > carried.refused { fixesRefused.increment(by: refused - carried.refused) }
        if overRate > carried.overRate { inboundOverRate.increment(by: overRate - carried.overRate) }
        if full > carried.inboxFull { inboxFull.increment(by: full - carried.inboxFull) }
        carried = (max(refused, carried.refused), max(overRate, carried.overRate), max(full, carried.inboxFull))
    }
}
