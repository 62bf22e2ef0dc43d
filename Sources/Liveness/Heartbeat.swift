#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Synchronization

/// Proof of life from a thread that runs a blocking C library loop (libmosquitto, libgps).
///
/// The thread beats each time round its loop, saying how long it may legitimately stay silent before
/// the next beat (a poll timeout, a blocking connect). The watchdog asks `isAlive` and stops pinging
/// systemd when a thread has been silent for longer than it promised: it is wedged, and a restart is
/// the only remedy.
public final class Heartbeat: Sendable {
    public let name: String
    private let reading: Mutex<HeartbeatReading>

    public init(name: String, at start: ContinuousClock.Instant = .now, allowingSilenceS: Double) {
        self.name = name
        reading = Mutex(HeartbeatReading(lastBeat: start, allowedSilence: .seconds(allowingSilenceS)))
    }

    public func beat(allowingSilenceS: Double, at now: ContinuousClock.Instant = .now) {
        reading.withLock { $0 = HeartbeatReading(lastBeat: now, allowedSilence: .seconds(allowingSilenceS)) }
    }

    /// A thread that has ended for good (shutdown) is not wedged: it beats with no limit.
    public func finished() {
        reading.withLock { $0.allowedSilence = nil }
    }

    public func isAlive(at now: ContinuousClock.Instant = .now) -> Bool {
        reading.withLock { $0.isAlive(at: now) }
    }

    public var current: HeartbeatReading { reading.withLock { $0 } }
}

/// The last beat and the promise that came with it. Pure value, so the rule is testable.
public struct HeartbeatReading: Sendable, Equatable {
    public var lastBeat: ContinuousClock.Instant
    /// nil: no limit.
    public var allowedSilence: Duration?

    public init(lastBeat: ContinuousClock.Instant, allowedSilence: Duration?) {
        self.lastBeat = lastBeat
        self.allowedSilence = allowedSilence
    }

    public func isAlive(at now: ContinuousClock.Instant) -> Bool {
        guard let allowedSilence else { return true }
        return now - lastBeat <= allowedSilence
    }
}

public enum Liveness {
    /// Added to every promise: scheduling delays on a loaded 2-core board are not a wedge.
    public static let slackS = 10.0
    /// A blocking TCP connect gives up after the kernel's SYN retries (about 127 s on Linux).
    public static let blockingConnectS = 150.0
}

/// Whether the daemon deserves a watchdog ping now. Pure, so every case is testable.
public enum HealthVerdict: Equatable, Sendable {
    case healthy
    case unhealthy(String)

    public init(engineAnswered: Bool, threads: [(name: String, reading: HeartbeatReading)], at now: ContinuousClock.Instant) {
        var problems: [String] = []
        if !engineAnswered { problems.append("the engine loop did not answer its last probe") }
        for thread in threads where !thread.reading.isAlive(at: now) {
            problems.append("thread \(thread.name) silent for \(Int((now - thread.reading.lastBeat) / .seconds(1))) s")
        }
        self = problems.isEmpty ? .healthy : .unhealthy(problems.joined(separator: "; "))
    }
}

