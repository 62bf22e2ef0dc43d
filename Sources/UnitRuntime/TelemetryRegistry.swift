import CoreMetrics
import Foundation
import Synchronization
import UnitCore

/// The daemon's swift-metrics backend: keeps each metric's current value in memory, for the
/// retained `telemetry` message and node_exporter's textfile (docs/protocol.md, "telemetry").
/// Counters add up; recorders and gauges keep their last value; timers their last duration in
/// seconds. A metric's name is its label with its dimensions' names and values appended
/// (`label_name_value`): the unit publishes a handful of them, not a time series database.
public final class TelemetryRegistry: MetricsFactory, Sendable {
    private struct Metrics {
        var counters: [String: CounterBox] = [:]
        var gauges: [String: GaugeBox] = [:]
    }

    private let metrics = Mutex(Metrics())

    public init() {}

    /// The values now, by name.
    public func snapshot() -> TelemetrySnapshot {
        let (counters, gauges) = metrics.withLock { ($0.counters, $0.gauges) }
        return TelemetrySnapshot(counters: counters.mapValues(\.value), gauges: gauges.mapValues(\.value))
    }

    static func name(_ label: String, _ dimensions: [(String, String)]) -> String {
        ([label] + dimensions.flatMap { [$0.0, $0.1] }).joined(separator: "_")
    }

    public func makeCounter(label: String, dimensions: [(String, String)]) -> CounterHandler {
        let name = Self.name(label, dimensions)
        return metrics.withLock {
            if let box = $0.counters[name] { return box }
            let box = CounterBox()
            $0.counters[name] = box
            return box
        }
    }

    public func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> RecorderHandler {
        gauge(Self.name(label, dimensions))
    }

    public func makeTimer(label: String, dimensions: [(String, String)]) -> TimerHandler {
        gauge(Self.name(label, dimensions))
    }

    private func gauge(_ name: String) -> GaugeBox {
        metrics.withLock {
            if let box = $0.gauges[name] { return box }
            let box = GaugeBox()
            $0.gauges[name] = box
            return box
        }
    }

    public func destroyCounter(_ handler: CounterHandler) {
        metrics.withLock { $0.counters = $0.counters.filter { $0.value !== handler } }
    }

    public func destroyRecorder(_ handler: RecorderHandler) {
        metrics.withLock { $0.gauges = $0.gauges.filter { $0.value !== handler } }
    }

    public func destroyTimer(_ handler: TimerHandler) {
        metrics.withLock { $0.gauges = $0.gauges.filter { $0.value !== handler } }
    }

    private final class CounterBox: CounterHandler, Sendable {
        private let count = Mutex<Int64>(0)

        var value: Int64 { count.withLock { $0 } }

        func increment(by amount: Int64) {
            // Saturates: a counter that wrapped would read as a reset to the fleet's dashboards.
            count.withLock { $0 = $0.addingReportingOverflow(amount).overflow ? .max : $0 + amount }
        }

        func reset() { count.withLock { $0 = 0 } }
    }

    private final class GaugeBox: RecorderHandler, TimerHandler, Sendable {
        private let last = Mutex<Double>(0)

        var value: Double { last.withLock { $0 } }

        func record(_ value: Int64) { last.withLock { $0 = Double(value) } }
        func record(_ value: Double) { last.withLock { $0 = value } }
        func recordNanoseconds(_ duration: Int64) { last.withLock { $0 = Double(duration) / 1e9 } }
    }
}

public struct TelemetrySnapshot: Sendable, Equatable {
    public var counters: [String: Int64]
    public var gauges: [String: Double]

    public init(counters: [String: Int64], gauges: [String: Double]) {
        self.counters = counters
        self.gauges = gauges
    }

    /// node_exporter's text format (textfile collector): `taxiunitd_` names, counters as `_total`,
    /// names in base units (a wire name's `_s` is `_seconds`), `# HELP` from `help` by name and
    /// `# TYPE` for each, the unit and fleet as labels, finite values only, sorted; and
    /// `taxiunitd_build_info` (1, the release and the protocol as labels).
    public func prometheusText(unit: String, fleet: String, help: [String: String]) -> String {
        let labels = "fleet=\"\(Self.escaped(fleet))\",unit=\"\(Self.escaped(unit))\""
        var lines: [String] = []
        func add(_ name: String, _ type: String, _ text: String?, _ sample: String) {
            if let text { lines.append("# HELP \(name) \(Self.escapedHelp(text))") }
            lines += ["# TYPE \(name) \(type)", sample]
        }
        let build = "taxiunitd_build_info"
        add(build, "gauge", "The release this unit runs and the protocol it speaks; always 1.",
               "\(build){\(labels),protocol=\"\(SoftwareVersion.wireProtocol)\",version=\"\(Self.escaped(SoftwareVersion.software))\"} 1")
        for (name, value) in counters.sorted(by: { $0.key < $1.key }) {
            let metric = "taxiunitd_\(Self.metricName(name))_total"
            add(metric, "counter", help[name], "\(metric){\(labels)} \(value)")
        }
        for (name, value) in gauges.sorted(by: { $0.key < $1.key }) where value.isFinite {
            let metric = "taxiunitd_\(Self.metricName(name))"
            add(metric, "gauge", help[name], "\(metric){\(labels)} \(value)")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Prometheus names allow `[a-zA-Z0-9_:]`; anything else becomes `_`. Seconds are written out,
    /// as Prometheus's base unit is named (`_s`, the wire's short form, is not one).
    static func metricName(_ name: String) -> String {
        let safe = String(name.unicodeScalars.map { scalar -> Character in
            scalar.isASCII && (scalar.properties.isAlphabetic || scalar.properties.numericType != nil || scalar == "_") ? Character(scalar) : "_"
        })
        return safe.hasSuffix("_s") ? safe + "econds" : safe
    }

    /// Help text escapes `\` and newlines.
    static func escapedHelp(_ value: String) -> String {
        value.replacing("\\", with: "\\\\").replacing("\n", with: "\\n")
    }

    /// Label values escape `\`, `"` and newlines.
    static func escaped(_ value: String) -> String {
        escapedHelp(value).replacing("\"", with: "\\\"")
    }
}
