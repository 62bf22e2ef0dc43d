import Foundation
import LocalCache
import Logging
import TaxiProtocol
import UnitCore

/// Breaks a crash loop whose cause no check foresaw: every start is counted in the store before
/// anything else is loaded, and the count is cleared once the unit has run `settledAfter` or
/// stopped cleanly. Only starts within one boot of the board count (the kernel's boot id): power
/// cuts while a taxi's engine is cranked reboot the board and are no crash. When
/// starts keep dying early, what the unit restores is set aside so the next start comes up in a
/// safe state, least first: after 3 such starts the fleet's documents (it runs on its local file);
/// after 4 the inbound message the last run died handling, if it died handling one
/// (`PoisonGuard`), else the snapshot; after 5 the snapshot in any case (it starts off duty; an
/// open job it held is told dropped, to the driver and the dispatcher). Nothing waiting to be sent
/// is set aside: alarms,
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
    /// Starts in a row that died early before the fleet's documents are set aside.
    static let setAsideFleetDocumentsAfter = 3
    /// ... and before the message in hand, or else the snapshot, is set aside too.
    static let setAsideSnapshotAfter = 4

    /// The job a set-aside snapshot held, and its state then.
    struct DroppedJob: Equatable {
        var job: String
        var state: StateName
    }

    /// Counts this start; returns the open job it had to drop, if any.
    static func started(store: LocalCache, at time: UnitTime, logger: Logger, poison: PoisonGuard, boot: String = bootID()) -> DroppedJob? {
        let earlier = ((try? store.loadValue(Count.self, forKey: key)) ?? nil).flatMap { $0.boot == boot ? $0.starts : nil } ?? 0
        // The count includes this start; the ones before it died early.
        let diedEarly = max(0, earlier)
        do {
            try store.write(.full) { try $0.saveValue(Count(boot: boot, starts: diedEarly.saturatingAdd(1)), forKey: key) }
        } catch {
            logger.error("cannot count this start", metadata: ["error": "\(error)"])
        }
        guard diedEarly >= setAsideFleetDocumentsAfter else { return nil }
        let reason = "\(diedEarly) starts in a row ended within \(settledAfter)"
        // The message the last run died handling goes before the state, once.
        let messageFirst = diedEarly == setAsideSnapshotAfter
            && (poison.setAsideAtStart != nil || poison.setAsideInHand(reason: "crash loop: " + reason, at: time))
        guard diedEarly >= setAsideSnapshotAfter, !messageFirst else {
            logger.critical("CRASH LOOP: setting aside the fleet documents; starting on the local configuration", metadata: ["reason": "\(reason)"])
            do {
                try store.setAsideFleetConfig(reason: reason, at: time)
            } catch {
                logger.error("cannot set aside the fleet documents", metadata: ["error": "\(error)"])
            }
            return nil
        }
        logger.critical("CRASH LOOP: setting aside the stored state and fleet documents; starting off duty on the local configuration", metadata: ["reason": "\(reason)"])
        // Read before it goes: a snapshot that does not decode is set aside at load anyway.
        let job = ((try? store.loadValue(UnitSnapshot.self, forKey: UnitEngine.snapshotKey)) ?? nil)
            .flatMap { snapshot in snapshot.state.job.map { DroppedJob(job: $0.id, state: snapshot.state.name) } }
        do {
            try store.setAsideValue(forKey: UnitEngine.snapshotKey, kind: .snapshot, reason: reason, at: time)
            try store.setAsideFleetConfig(reason: reason, at: time)
        } catch {
            logger.error("cannot set aside the stored state", metadata: ["error": "\(error)"])
            return nil
        }
        if let job { logger.critical("CRASH LOOP: the open job was dropped with the stored state", metadata: ["job": "\(job.job)"]) }
        return job
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
        (try? String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8))?.filter { !$0.isWhitespace } ?? ""
    }
}
