import Foundation
import LocalCache
import Logging

/// Breaks a crash loop whose cause no check foresaw: every start is counted in the store before
/// anything else is loaded, and the count is cleared once the unit has run `settledAfter` or
/// stopped cleanly. Only starts within one boot of the board count (the kernel's boot id): power
/// cuts while a taxi's engine is cranked reboot the board and are no crash. When
/// starts keep dying early, what the unit restores is set aside so the next start comes up in a
/// safe state: after 3 such starts the snapshot (the unit starts off duty) and the fleet's
/// documents (it runs on its local file). Nothing waiting to be sent is set aside: alarms,
/// replies and events were promised to the driver, and queued positions cannot stop a start any
/// more (a row that cannot be read or packed is set aside on its own, by the pump).
enum CrashLoopBreaker {
    static let key = "early_starts"
    /// Starts that died early, in the boot they happened in.
    struct Count: Codable, Equatable {
        var boot: String
        var starts: Int
    }
    static let settledAfter = Duration.seconds(60)
    static let setAsideStateAt = 3

    static func started(store: LocalCache, at time: Int64, logger: Logger, boot: String = bootID()) {
        let earlier = ((try? store.loadValue(Count.self, forKey: key)) ?? nil).flatMap { $0.boot == boot ? $0.starts : nil } ?? 0
        let starts = max(0, earlier).saturatingAdd(1)
        do {
            try store.write(.full) { try $0.saveValue(Count(boot: boot, starts: starts), forKey: key) }
        } catch {
            logger.error("cannot count this start", metadata: ["error": "\(error)"])
        }
        guard starts >= setAsideStateAt else { return }
        let reason = "\(starts - 1) starts in a row ended within \(settledAfter)"
        logger.critical("CRASH LOOP: setting aside the stored state and fleet documents; starting off duty on the local configuration", metadata: ["reason": "\(reason)"])
        do {
            try store.setAsideValue(forKey: UnitEngine.snapshotKey, kind: .snapshot, reason: reason, at: time)
            try store.setAsideFleetConfig(reason: reason, at: time)
        } catch {
            logger.error("cannot set aside the stored state", metadata: ["error": "\(error)"])
        }
    }

    static func settled(store: LocalCache, logger: Logger, boot: String = bootID()) {
        do {
            try store.write(.normal) { try $0.saveValue(Count(boot: boot, starts: 0), forKey: key) }
        } catch {
            logger.error("cannot clear the start count", metadata: ["error": "\(error)"])
        }
    }

    /// Changes with every boot; empty where the kernel does not say (then every start counts).
    static func bootID() -> String {
        (try? String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
    }
}
