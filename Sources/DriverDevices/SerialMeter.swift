import DriverKeys
import Logging
import Platform
import Synchronization

/// A taximeter on a serial line (`[input.meter]` with a `serial` port): raw 8N1 termios, lines in,
/// nothing out, on its own thread. What the lines mean is the `MeterLineDecoder`'s; its system
/// calls are in `DeviceLine`.
public final class SerialMeter: BackgroundAdapter {
    public let presses: AsyncStream<DriverPress>
    private let sink: AsyncStream<DriverPress>.Continuation
    private let line: DeviceLine
    private let baud: Int
    private let meterProtocol: MeterProtocol
    private let logger: Logger
    /// Lines the decoders dropped since the start, over every reopening of the port.
    private let garbage = Atomic<Int>(0)

    public init(path: String, baud: Int, protocol meterProtocol: MeterProtocol, retryIntervalS: Double = 3, logger: Logger) {
        self.baud = baud
        self.meterProtocol = meterProtocol
        self.logger = logger
        line = DeviceLine(path: path, role: "serial meter", threadName: "serial-meter", retryIntervalS: retryIntervalS, logger: logger)
        (presses, sink) = AsyncStream.makeStream(of: DriverPress.self, bufferingPolicy: .bufferingNewest(256))
    }

    /// Lines the meter sent that the decoder could not use.
    public var garbageLines: Int { garbage.load(ordering: .relaxed) }

    public func start() {
        line.start(open: open, serve: serve)
    }

    /// Returns once the thread has closed the port; `presses` then ends.
    public func stop() {
        line.stop()
        sink.finish()
    }

    private func open(_ path: String) -> Result<Int32, DeviceError> {
        DeviceLine.openSerialPort(path, baud: baud)
    }

    /// A reopened port starts a fresh decoder: half a line from before is gone. Its first hired or
    /// vacant is the state the meter was found in (docs/protocol.md, "Taximeter").
    private func serve(_ fd: Int32) -> DeviceLine.Served {
        var decoder = meterProtocol.makeDecoder()
        var found = false
        var buffer = [UInt8](repeating: 0, count: 256)
        // Once per opening: a meter on the wrong baud rate sends nothing but garbage, and the
        // count in the status goes on.
        var garbageLogged = false
        while !line.stopping {
            switch line.readSerial(fd, into: &buffer, timeoutUs: 1_000_000) {
            case .lost(let reason): return .lost(reason)
            case .nothing, .timedOut: continue
            case .bytes(let count):
                let before = decoder.garbageLines
                for reading in decoder.receive(buffer[..<count]) {
                    let first = !found && reading.isFlag
                    if first { found = true }
                    sink.yield(DriverPress(command: nil, source: "meter", meter: reading, meterFound: first))
                }
                let dropped = decoder.garbageLines - before
                if dropped > 0 {
                    garbage.add(dropped, ordering: .relaxed)
                    if !garbageLogged {
                        logger.notice("the meter sent lines its protocol cannot use; dropped and counted (meter_lines_dropped)")
                        garbageLogged = true
                    }
                }
            }
        }
        return .stopped
    }
}
