import Foundation
import Metrics
import Testing
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
        let text = TelemetrySnapshot(counters: ["fixes_received": 4], gauges: ["outbox_depth": 3, "odd-name": 1, "nan": .nan])
            .prometheusText(unit: "T1", fleet: "demo")
        #expect(text == """
            # TYPE taxiunitd_fixes_received_total counter
            taxiunitd_fixes_received_total{fleet="demo",unit="T1"} 4
            # TYPE taxiunitd_odd_name gauge
            taxiunitd_odd_name{fleet="demo",unit="T1"} 1.0
            # TYPE taxiunitd_outbox_depth gauge
            taxiunitd_outbox_depth{fleet="demo",unit="T1"} 3.0

            """)
    }

    @Test func theTextfileIsReplacedWholeAndNoTemporaryIsLeft() throws {
        let directory = NSTemporaryDirectory() + "taxiunitd-textfile-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/taxiunitd.prom"
        try UnitEngine.writeAtomically("a 1\n", to: path)
        try UnitEngine.writeAtomically("b 2\n", to: path)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "b 2\n")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["taxiunitd.prom"])
        #expect(throws: (any Error).self) { try UnitEngine.writeAtomically("c\n", to: directory + "/missing/taxiunitd.prom") }
    }
}
