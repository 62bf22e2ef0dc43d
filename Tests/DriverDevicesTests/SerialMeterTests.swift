import DriverDevices
import DriverKeys
import TestHarness
import Testing

/// The serial meter adapter on a real PTY pair made by socat: the test is the meter.
@Suite(.serialized) struct SerialMeterTests {
    /// The first hired or vacant on each opening of the port is the state found; a fare before it
    /// is not, and after it every reading is a change. Unplugged and back, the next one is found again.
    @Test func theFirstFlagOnEachOpeningIsTheStateFound() async throws {
        let scratch = try ScratchDirectory()
        let pair = try await SerialPair(in: scratch, name: "meter")
        let logs = LogRecorder()
        let meter = SerialMeter(path: pair.unitPath, baud: 9600, protocol: .text, retryIntervalS: 0.2, logger: logs.logger)
        let collector = PressCollector(meter.presses)
        meter.start()
        defer { meter.stop() }
        func readings() -> [String] {
            collector.presses.map { press in
                let what = switch press.meter {
                case .hired?: "hired"
                case .vacant?: "vacant"
                case .fare?: "fare"
                case nil: "none"
                }
                return press.meterFound ? "found \(what)" : what
            }
        }
        try await waitUntil("the port opened", timeoutS: 10, detail: { logs.messages.joined(separator: "\n") }) {
            logs.count(containing: "serial meter opened") == 1
        }
        try await pair.type(Array("FARE 100 EUR\nHIRED\nHIRED\nVACANT\n".utf8))
        try await waitUntil("four readings", timeoutS: 10, detail: { "\(readings())" }) { readings().count == 4 }
        #expect(readings() == ["fare", "found hired", "hired", "vacant"])

        pair.stop()
        try await waitUntil("the loss logged", timeoutS: 10, detail: { logs.messages.joined(separator: "\n") }) {
            logs.count(containing: "serial meter lost") == 1
        }
        try await pair.start()
        try await waitUntil("the port back", timeoutS: 10, detail: { logs.messages.joined(separator: "\n") }) {
            logs.count(containing: "serial meter is back") == 1
        }
        try await pair.type(Array("VACANT\nHIRED\n".utf8))
        try await waitUntil("six readings", timeoutS: 10, detail: { "\(readings())" }) { readings().count == 6 }
        #expect(readings().suffix(2) == ["found vacant", "hired"])
    }
}
