import ControlSocket
import DriverDevices
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import GPSReader
import LocalCache
import Logging
import ServiceLifecycle
import Synchronization
import TaxiProtocol
import UnitConfig
import UnitCore

/// Everything that can happen to the unit, in the one order the engine sees it.
enum EngineInput: Sendable {
    /// `arrivedAt`: the monotonic clock when the reader handed it over; a fix may wait in the inbox.
    case gps(GPSDEvent, arrivedAt: Duration)
    case mqtt(BrokerLink.Event)
    case control(ControlRequest, reply: CheckedContinuation<ControlResponse, Never>)
    case healthProbe(EngineProbe)
    /// A button or the serial terminal.
    case driver(DriverPress)
    /// `generation` tells a restarted timer from a stale firing of the one it replaced.
    case timerFired(TimerID, generation: UInt64)
    case maintenance
    case shutdownRequested
    case shutdownDeadline
    case fleetRollbackDue
    /// The position commit window closed: the fixes held in it are committed.
    case commitWindowClosed
    /// The unit has run `CrashLoopBreaker.settledAfter`: this start did not crash early.
    case startSettled
    /// Time to publish the telemetry (`[telemetry] interval_s`).
    case telemetryDue
    /// `[mqtt] max_publish_rate` lets the outbox send again.
    case outboxDue
}

/// The engine as the rest of the daemon sees it: an inbox that every input goes through, the
/// control socket's requests and the watchdog's probes, all answered from inside the loop. The
/// loop itself (`EngineLoop`) is built here, from what the store restores, and handed to `run()`,
/// which owns it: nothing else can reach its state.
public final class UnitEngine: Service, Sendable {
    let inbox = EngineInbox<EngineInput>()
    private let loop: Mutex<EngineLoop?>

    /// `local` is the validated local file; fleet documents stored in `store` are laid over it.
    /// `devices`: the driver's buttons and terminal; their presses come in, the terminal is shown
    /// every new `DriverView`.
    public convenience init(
        local: ConfigValue, store: LocalCache, mqtt: BrokerLink, gpsd: GPSDConnection, logger: Logger, devices: DriverDeviceSet? = nil,
        options: EngineOptions = EngineOptions()
    ) throws {
        try self.init(local: local, store: store, broker: mqtt, fixes: gpsd, logger: logger, devices: devices, options: options)
    }

    init(
        local: ConfigValue, store: LocalCache, broker: any BrokerPort, fixes: any FixSource, logger: Logger,
        devices: DriverDeviceSet? = nil, options: EngineOptions = EngineOptions()
    ) throws {
        loop = Mutex(
            try EngineLoop(local: local, store: store, broker: broker, fixes: fixes, logger: logger, devices: devices, options: options, inbox: inbox))
    }

    static var snapshotKey: String { EngineLoop.snapshotKey }

    /// For the control socket: answered from inside the engine loop, so it sees a consistent state.
    public func handleControl(_ bytes: [UInt8]) async -> [UInt8] {
        let response: ControlResponse
        do {
            let request = try JSONDecoder().decode(ControlRequest.self, from: Data(bytes))
            response = await withCheckedContinuation { reply in
                inbox.post(.control(request, reply: reply))
            }
        } catch {
            response = .failure("malformed request: \(error)")
        }
        return (try? Array(JSONEncoder().encode(response))) ?? Array(#"{"ok":false,"error":"encoding"}"#.utf8)
    }

    /// For the systemd watchdog: the probe is answered when the loop gets to it.
    public func probe() -> EngineProbe {
        let probe = EngineProbe()
        inbox.post(.healthProbe(probe))
        return probe
    }

    struct AlreadyRan: Error, CustomStringConvertible {
        var description: String { "the engine runs once" }
    }

    public func run() async throws {
        guard let loop = loop.withLock({ $0.take() }) else { throw AlreadyRan() }
        await loop.run()
    }
}
