import ControlSocket
import Foundation
import Platform
import TaxiProtocol
import UnitCore

/// What the unit says of itself: the status `taxiunitctl` reads, the retained status' birth
/// facts, and the periodic telemetry.
extension EngineLoop {
    func currentStatus() -> ControlStatus {
        let depth = performer.depth()
        let stored = (try? store.positionCount()) ?? -1
        let age = lastFix.map { (ContinuousClock.now - $0.receivedAt) / .seconds(1) }
        let machine = core.machine
        let status = machine.status
        var control = ControlStatus(
            unit: configuration.unit.id,
            state: status.state.rawValue,
            gps: .init(connected: gpsConnected, lastFixAgeS: age, lastFixTime: lastFix?.fix.time.milliseconds),
            broker: ControlStatus.Broker(
                connected: broker.connected, since: broker.since, lastError: broker.lastError,
                downForS: brokerDownSince.map { (ContinuousClock.now - $0) / .seconds(1) }),
            outbox: .init(
                depth: depth.total, inFlight: performer.inFlight, alarm: depth.alarm, reply: depth.reply, event: depth.event,
                position: depth.position, positionsThinned: depth.thinned, positionsDropped: depth.dropped),
            storedPositions: stored,
            pauseReason: status.pauseReason?.rawValue,
            job: ControlDesk.jobStatus(machine.state, cancelRequest: machine.snapshot.cancelRequest, now: clockNow()),
            seatsLeft: status.seatsLeft,
            sosPending: machine.snapshot.panic != nil,
            config: fleetConfigStatus,
            clock: machine.positions.clock.reading(at: clock.sample()).source.rawValue,
            zone: zone,
            aside: asideCounts(),
            refused: [
                "fixes_out_of_range": machine.positions.fixesOutOfRange, "inbound_over_rate": inboundFlow.droppedSinceStart,
                "inbox_full": inbox.droppedInputs,
            ].merging(devices?.serialMeter.map { ["meter_lines_dropped": $0.garbageLines] } ?? [:]) { $1 },
            runningForS: (ContinuousClock.now - startedAt) / .seconds(1),
            volatileStore: options.volatileStore,
            store: performer.diskStatus,
            ignition: status.ignitionOn.map { $0 ? "on" : "off" },
            meter: configuration.input.meter == nil ? nil : machine.meterHired.map { $0 ? "hired" : "vacant" } ?? "unknown"
        )
        let now = clockNow()
        let upcoming = machine.snapshot.upcoming.map { ControlDesk.queuedJobStatus($0.job, now: now) }
        control.upcoming = upcoming.isEmpty ? nil : upcoming
        control.next = machine.snapshot.next.map { ControlDesk.queuedJobStatus($0, now: now) }
        control.shift = machine.shift.map { shift in
            let counters = shift.counters(at: now)
            return ControlStatus.Shift(
                startedAt: shift.startedAt.milliseconds, onDutyS: counters.onDuty.wholeSeconds, drivingS: counters.driving.wholeSeconds,
                continuousDrivingS: counters.continuousDriving.wholeSeconds)
        }
        return control
    }

    /// The periodic telemetry: gauges read now, then every metric published retained on
    /// `telemetry` and, if configured, written for node_exporter's textfile collector.
    func publishTelemetry() {
        guard let registry = options.telemetry else { return }
        let depth = performer.depth()
        metrics.carryOver(
            fixesRefused: core.machine.positions.fixesOutOfRange, inboundOverRate: inboundFlow.droppedSinceStart, inboxFull: inbox.droppedInputs)
        metrics.outboxDepth.record(depth.total)
        metrics.outboxInFlight.record(performer.inFlight)
        metrics.gpsdConnected.record(gpsConnected ? 1 : 0)
        metrics.brokerConnected.record(broker.connected ? 1 : 0)
        // -1 before the first fix: a gauge has no "none", and an age is never negative.
        metrics.lastFixAgeS.record(lastFix.map { (ContinuousClock.now - $0.receivedAt) / .seconds(1) } ?? -1)
        metrics.volatileStore.record(options.volatileStore == nil ? 0 : 1)
        metrics.setAside.record(asideCounts().values.reduce(0) { $0.saturatingAdd($1) })
        let snapshot = registry.snapshot()
        if broker.connected {
            let message = TelemetryMessage(
                unit: configuration.unit.id, t: clockNow(), uptimeS: Self.wholeUnits(ContinuousClock.now - startedAt, of: .seconds(1)),
                counters: snapshot.counters, gauges: snapshot.gauges)
            do {
                // QoS 0 and not through the outbox: the next one replaces a lost one, and a backlog
                // of old snapshots would tell the fleet nothing.
                _ = try mqtt.publish(
                    topic: configuration.unitTopicBase + UnitTopic.telemetry.rawValue, payload: Array(JSONEncoder.wire.encode(message)),
                    qos: 0, retain: true)
            } catch {
                logger.debug("telemetry not published now", metadata: ["error": "\(error)"])
            }
        }
        if let path = configuration.telemetry.textfile {
            do {
                // Readable by all: the unit's UMask=0077 would keep node_exporter, another user, out, and
                // the counts are no secret.
                try replaceFile(
                    at: path, contents: Array(snapshot.prometheusText(unit: configuration.unit.id, fleet: configuration.unit.fleet, help: UnitMetrics.help).utf8),
                    mode: 0o644)
            } catch {
                logger.warning("cannot write the telemetry textfile", metadata: ["path": "\(path)", "error": "\(error)"])
            }
        }
    }

    /// The retained status is the unit's birth message: what it speaks and runs, since when, and
    /// how fresh its position is (docs/protocol.md, "status").
    func addBirthFacts(to status: inout StatusMessage) {
        status.wireProtocol = SoftwareVersion.wireProtocol
        status.software = SoftwareVersion.software
        status.configVersions = Dictionary(uniqueKeysWithValues: core.fleetConfig.versions.map { ($0.key.rawValue, $0.value) })
        status.uptimeS = Self.wholeUnits(ContinuousClock.now - startedAt, of: .seconds(1))
        status.fixAgeMs = lastFix.map { Self.wholeUnits(ContinuousClock.now - $0.receivedAt, of: .milliseconds(1)) }
        status.store = options.volatileStore == nil ? .persistent : .volatile
    }

    /// A monotonic span in whole units, rounded down, held within 0...Int64.max.
    static func wholeUnits(_ span: Duration, of unit: Duration) -> Int64 {
        max(0, Int64(roundingChecked: (span / unit).rounded(.down)) ?? .max)
    }
}
