import LocalCache
import Logging

/// Breaks a crash loop whose cause no check foresaw: every start is counted in the store before
/// anything else is loaded, and the count is cleared once the unit has run `settledAfter`. When
/// starts keep dying early, what the unit restores is set aside so the next start comes up in a
/// safe state: after 3 such starts the snapshot (the unit starts off duty) and the fleet's
/// documents (it runs on its local file), after 5 also the positions waiting to be sent. Alarms,
/// replies and events are never set aside: the driver was told they were sent.
enum CrashLoopBreaker {
    static let key = "early_starts"
    static let settledAfter = Duration.seconds(60)
    static let setAsideStateAt = 3
    static let setAsidePositionsAt = 5

    static func started(store: LocalCache, at time: Int64, logger: Logger) {
        let earlier = ((try? store.loadValue(Int.self, forKey: key)) ?? nil) ?? 0
        let starts = max(0, earlier).saturatingAdd(1)
        do {
            try store.write(.full) { try $0.saveValue(starts, forKey: key) }
        } catch {
            logger.error("cannot count this start", metadata: ["error": "\(error)"])
        }
        guard starts >= setAsideStateAt else { return }
        let reason = "\(starts - 1) starts in a row ended within \(settledAfter)"
        logger.critical("CRASH LOOP: setting aside the stored state and fleet documents; starting off duty on the local configuration", metadata: ["reason": "\(reason)"])
        do {
            try store.setAsideValue(forKey: UnitEngine.snapshotKey, kind: .snapshot, reason: reason, at: time)
            try store.setAsideFleetConfig(reason: reason, at: time)
            if starts >= setAsidePositionsAt {
                logger.critical("CRASH LOOP: setting aside the positions waiting to be sent")
                try store.setAsideQueuedPositions(reason: reason, at: time)
            }
        } catch {
            logger.error("cannot set aside the stored state", metadata: ["error": "\(error)"])
        }
    }

    static func settled(store: LocalCache, logger: Logger) {
        do {
            try store.write(.normal) { try $0.saveValue(0, forKey: key) }
        } catch {
            logger.error("cannot clear the start count", metadata: ["error": "\(error)"])
        }
    }
}
