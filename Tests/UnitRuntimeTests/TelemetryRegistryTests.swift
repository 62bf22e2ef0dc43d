import Foundation
import Metrics
import Testing
import UnitCore
@testable import UnitRuntime

/// The in-process swift-metrics backend and the node_exporter text it writes.
@Suite struct TelemetryRegistryTests {
    @Test func countersAddUpAndGaugesKeepTheLastValue() {
        let registry = TelemetryRegistry()
        let fixes = Counter(label: "fixes_received", factory: registry)
        fixes.increment()
        fixes.increment(by: 2)
        Counter(label: "fixes_received", factory: registry).increment()
        let depth = Gauge(label: "outbox_depth", factory: registry)
        depth.record(12)
        depth.record(3)
        Timer(label: "drain", factory: registry).recordMilliseconds(250)
        Counter(label: "dropped", dimensions: [("class", "position")], factory: registry).increment(by: Int64.max)
        Counter(label: "dropped", dimensions: [("class", "position")], factory: registry).increment()
        #expect(registry.snapshot() == TelemetrySnapshot(
            counters: ["fixes_received": 4, "dropped_class_position": .max], gauges: ["outbox_depth": 3, "drain": 0.25]))
    }

    @Test func runningTotalsKeptElsewhereAreCarriedOverAsIncrements() {
        let registry = TelemetryRegistry()
        var metrics = UnitMetrics(factory: registry)
        metrics.carryOver(fixesRefused: 3, inboundOverRate: 0, inboxFull: 1)
        metrics.carryOver(fixesRefused: 5, inboundOverRate: 7, inboxFull: 1)
        let counters = registry.snapshot().counters
        #expect(counters["fixes_refused"] == 5 && counters["inbound_over_rate"] == 7 && counters["inbox_full"] == 1, "\(counters)")
    }

    @Test func theTextfileIsNodeExportersFormat() {
        let text = TelemetrySnapshot(counters: ["fixes_received": 4], gauges: ["outbox_depth": 3, "odd-name": 1, "nan": .nan, "age_s": 0.5])
            .prometheusText(unit: "T1", fleet: "demo", help: ["fixes_received": "Fixes.", "outbox_depth": "Waiting \\ now\nand then."])
        #expect(text == """
            # HELP taxiunitd_build_info The release this unit runs and the protocol it speaks; always 1.
            # TYPE taxiunitd_build_info gauge
            taxiunitd_build_info{fleet="demo",unit="T1",protocol="\(SoftwareVersion.wireProtocol)",version="\(SoftwareVersion.software)"} 1
            # HELP taxiunitd_fixes_received_total Fixes.
            # TYPE taxiunitd_fixes_received_total counter
            taxiunitd_fixes_received_total{fleet="demo",unit="T1"} 4
            # TYPE taxiunitd_age_seconds gauge
            taxiunitd_age_seconds{fleet="demo",unit="T1"} 0.5
            # TYPE taxiunitd_odd_name gauge
            taxiunitd_odd_name{fleet="demo",unit="T1"} 1.0
            # HELP taxiunitd_outbox_depth Waiting \\\\ now\\nand then.
            # TYPE taxiunitd_outbox_depth gauge
            taxiunitd_outbox_depth{fleet="demo",unit="T1"} 3.0

            """)
    }

    /// Every metric the unit records, as Prometheus's own linter reads the textfile: HELP and TYPE
    /// for each, base units, counters ending in `_total` (`promtool check metrics`, Debian's
    /// `prometheus` package).
    @Test func everyMetricOfTheUnitPassesPromtool() throws {
        let registry = TelemetryRegistry()
        var metrics = UnitMetrics(factory: registry)
        metrics.carryOver(fixesRefused: 1, inboundOverRate: 0, inboxFull: 0)
        let snapshot = registry.snapshot()
        #expect(snapshot.counters.count + snapshot.gauges.count == 16, "\(snapshot)")
        for name in Array(snapshot.counters.keys) + Array(snapshot.gauges.keys) {
            #expect(UnitMetrics.help[name] != nil, "\(name) has no help")
        }
        let text = snapshot.prometheusText(unit: "T1", fleet: "demo", help: UnitMetrics.help)
        #expect(try Self.promtool(text) == (0, ""))
        // And the check can fail: a metric without help, a unit Prometheus does not use.
        let unhelped = TelemetrySnapshot(counters: [:], gauges: ["drain_milliseconds": 2]).prometheusText(unit: "T1", fleet: "demo", help: [:])
        let refused = try Self.promtool(unhelped)
        #expect(refused.status != 0 && refused.output.contains("no help text"), "\(refused)")
    }

    /// `promtool check metrics` on `text` (its standard input): exit status and what it said.
    static func promtool(_ text: String) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/promtool")
        process.arguments = ["check", "metrics"]
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = output
        try process.run()
        input.fileHandleForWriting.write(Data(text.utf8))
        try input.fileHandleForWriting.close()
        let said = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: said, as: UTF8.self))
    }
}
