import TaxiProtocol
import UnitCore

/// Fixes that come alone are committed at most once per `window` (`[store] position_commit_ms`).
///
/// A receiver at 5-20 Hz would otherwise cost a write transaction per fix: CPU, WAL writes and
/// wear of the board's eMMC or SD card. A fix that comes within `window` of the last commit waits
/// here, in memory, and is stored (and queued for `pos`) by the next commit: the one when the window
/// closes, or any earlier one (a reply, an alarm, an event, shutdown), which never waits. A kill
/// loses at most the fixes of one window; with WAL and synchronous=NORMAL a power cut can lose the
/// last commits anyway, so holding them loses nothing the store promised. A fix that comes when the
/// last commit is older than `window` (a 1 Hz receiver) is committed at once.
///
/// Pure bookkeeping: the engine reads the clock and runs the timer.
struct PositionCommitWindow {
    struct HeldFix: Equatable {
        var fix: Fix
        var report: Bool
        /// The unit clock when the fix came, which decides its retention.
        var createdAt: UnitTime
    }

    var window: Duration
    private(set) var held: [HeldFix] = []
    private var lastCommit: ContinuousClock.Instant?

    init(window: Duration) {
        self.window = window
    }

    /// Whether fixes that come alone at `now` wait for a later commit. A receiver at the window's own
    /// rate (1 Hz against 1000 ms) is never held: its fixes come a little less or a little more than
    /// a window after the last commit, and holding one for a millisecond would cost a timer and a
    /// wake-up for nothing. So only a fix within `window` less a tenth waits.
    func holds(at now: ContinuousClock.Instant) -> Bool {
        guard let lastCommit else { return false }
        return now - lastCommit < window - window / 10
    }

    /// Keeps `fixes` for the next commit. Returns when the window closes if these are the first
    /// fixes held in it: the engine then starts the timer that commits them.
    mutating func hold(_ fixes: [HeldFix]) -> ContinuousClock.Instant? {
        let first = held.isEmpty
        held += fixes
        guard first, !held.isEmpty, let lastCommit else { return nil }
        return lastCommit + window
    }

    /// Whether the held fixes are due at `now` (a timer of an earlier window may fire late).
    func isDue(at now: ContinuousClock.Instant) -> Bool {
        guard !held.isEmpty, let lastCommit else { return false }
        return now - lastCommit >= window
    }

    /// Hands over the held fixes for a commit starting at `now`; the window restarts from it.
    mutating func takeForCommit(at now: ContinuousClock.Instant) -> [HeldFix] {
        lastCommit = now
        defer { held = [] }
        return held
    }
}
