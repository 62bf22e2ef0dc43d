#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Liveness
import Logging
import Synchronization
import ServiceLifecycle
import SystemdNotify

/// What the engine loop answers a health probe with: the one human line systemd shows as STATUS.
public struct EngineHealth: Sendable, Equatable {
    public var state: String
    public var online: Bool
    public var queued: Int

    public var statusLine: String {
        "\(state), \(online ? "online" : "offline"), \(queued) queued"
    }
}

/// A question posted into the engine loop; answered only if the loop is still processing events.
public final class EngineProbe: Sendable {
    private let health = Mutex<EngineHealth?>(nil)

    func answer(_ health: EngineHealth) { self.health.withLock { $0 = health } }

    public var answer: EngineHealth? { health.withLock { $0 } }
}

/// Talks to systemd: READY=1 once the engine loop answers its first probe (the store is open and the
/// configuration valid by then), WATCHDOG=1 only while the loop answers and the library threads
/// beat, STATUS= one line, STOPPING=1 on shutdown. A wedged loop or thread stops the pings, and
/// systemd (`WatchdogSec=`) restarts the daemon.
public struct SystemdWatchdogService: Service {
    let notifier: SystemdNotifier
    let probe: @Sendable () -> EngineProbe
    /// Read at each check: the broker connection is replaced when the fleet config changes it.
    let heartbeats: @Sendable () -> [Heartbeat]
    let logger: Logger

    public init(notifier: SystemdNotifier, engine: UnitEngine, heartbeats: @escaping @Sendable () -> [Heartbeat], logger: Logger) {
        self.notifier = notifier
        probe = { engine.probe() }
        self.heartbeats = heartbeats
        self.logger = logger
    }

    /// Without a watchdog, STATUS= still refreshes this often.
    static let statusIntervalS = 10.0

    public func run() async throws {
        await withGracefulShutdownHandler {
            await supervise()
        } onGracefulShutdown: { [notifier] in
            notifier.stopping()
        }
    }

    private func supervise() async {
        guard let first = await firstAnswer() else { return }
        notifier.ready(status: first.statusLine)
        // The broker is usually still being dialled at this point: "offline" would read as a failure.
        logger.info("ready", metadata: [
            "state": "\(first.state)", "broker": "\(first.online ? "connected" : "connecting")", "queued": "\(first.queued)",
        ])
        // Three checks per watchdog period: one missed answer still leaves time for the next ping.
        let interval = notifier.watchdogIntervalS.map { $0 / 3 } ?? Self.statusIntervalS
        var pending = probe()
        while !Task.isCancelledOrShuttingDown {
            do { try await cancelWhenGracefulShutdown { try await Task.sleep(for: .seconds(interval)) } } catch { return }
            let verdict = HealthVerdict(engineAnswered: pending.answer != nil, threads: heartbeats().map { ($0.name, $0.current) }, at: .now)
            switch verdict {
            case .healthy:
                notifier.watchdogPing(status: pending.answer!.statusLine)
            case .unhealthy(let reason):
                logger.error("unhealthy, withholding the watchdog ping so systemd restarts the daemon", metadata: ["reason": "\(reason)"])
                notifier.status("unhealthy: \(reason)")
            }
            pending = probe()
        }
    }

    /// Polls briefly until the loop answers once; nil if shut down first.
    private func firstAnswer() async -> EngineHealth? {
        let probe = probe()
        while !Task.isCancelledOrShuttingDown {
            if let answer = probe.answer { return answer }
            do { try await cancelWhenGracefulShutdown { try await Task.sleep(for: .milliseconds(20)) } } catch { return nil }
        }
        return nil
    }
}

extension Task where Success == Never, Failure == Never {
    static var isCancelledOrShuttingDown: Bool { isCancelled || Task.isShuttingDownGracefully }
}

extension SystemdWatchdogService: CustomStringConvertible {
    public var description: String { "SystemdWatchdogService" }
}
