import TaxiProtocol
import UnitCore

/// The state machine's timers: one task per timer, which only posts the id back into the loop;
/// the generation tells a restarted timer from a stale firing of the one it replaced.
final class EngineTimers {
    /// No timer waits longer; the longest offer window is an hour.
    static let longest: Duration = .seconds(3_600)

    private let post: (TimerID, UInt64, Duration) -> Task<Void, Never>
    private var running: [TimerID: (task: Task<Void, Never>, generation: UInt64)] = [:]
    private var generation: UInt64 = 0

    /// `post`: sleeps the duration, then posts `.timerFired(id, generation)` to the engine.
    init(post: @escaping (TimerID, UInt64, Duration) -> Task<Void, Never>) {
        self.post = post
    }

    /// Capped: a unit clock that steps back (GPS time giving way to a system clock years off) must
    /// not push a deadline out of reach; a timer that fires early is re-checked by the machine.
    func start(_ id: TimerID, fireAt: UnitTime, now: UnitTime) {
        running[id]?.task.cancel()
        generation += 1
        running[id] = (post(id, generation, min(max(.zero, fireAt - now), Self.longest)), generation)
    }

    func cancel(_ id: TimerID) {
        running.removeValue(forKey: id)?.task.cancel()
    }

    /// True (and the timer forgotten) if this firing is the current one of `id`.
    func fired(_ id: TimerID, generation: UInt64) -> Bool {
        guard running[id]?.generation == generation else { return false }
        running[id] = nil
        return true
    }

    func cancelAll() {
        for timer in running.values { timer.task.cancel() }
        running.removeAll()
    }
}
