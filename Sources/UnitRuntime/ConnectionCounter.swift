import LocalCache
import Logging

/// The connection counter (as Sparkplug's bdSeq): a number that grows with every connection
/// attempt, across restarts, carried by the last will (`{"online":false,"conn":N}`) and by the
/// retained `status` (`conn`). A will the broker publishes late, for a connection that was already
/// replaced, carries a smaller `conn` than the status of the connection that replaced it.
///
/// The attempts happen on the MQTT loop thread, which must not write the store; the engine writes
/// instead a reservation ahead of them (`reservation()`), kept under the key `storeKey`: every
/// number given is at most the reservation on disk, and a start continues above it, so the
/// counter never repeats a number even after a kill. A reservation is renewed when half of it is
/// used; the loop thread takes one number per attempt, at most a few a second, and the engine
/// renews on every connection event, long before the rest runs out.
///
/// Pure bookkeeping.
struct ConnectionCounter: Equatable {
    static let storeKey = "connection_counter"
    /// Numbers reserved at a time.
    static let block: Int64 = 100
    /// Exact in a JSON number everywhere (2^53 - 1): the counter stops there rather than wrap.
    static let largest: Int64 = 9_007_199_254_740_991

    /// The last number given; 0 before the first attempt.
    private(set) var last: Int64
    /// No number above it has been given: it is on disk (or about to be).
    private(set) var reserved: Int64

    /// `stored`: the reservation the last run wrote (nil on a new store). A value out of range
    /// (read back from a damaged store) is clamped, never trusted to do arithmetic on.
    init(stored: Int64?) {
        let start = min(max(stored ?? 0, 0), Self.largest)
        last = start
        reserved = start
    }

    /// The next attempt's number.
    mutating func next() -> Int64 {
        last = min(last + 1, Self.largest)
        return last
    }

    /// A new reservation to write now, or nil while at least half of the last one is left.
    mutating func reservation() -> Int64? {
        guard reserved - last <= Self.block / 2, reserved < Self.largest else { return nil }
        reserved = min(last + Self.block, Self.largest)
        return reserved
    }
}

extension BrokerPort {
    /// Restores the counter from the store and writes its first reservation; before the first
    /// connection. A store that cannot be read or written is logged: the counter then starts
    /// from what it has, and may repeat numbers of an earlier run.
    func restoreConnectionCounter(from store: LocalCache, logger: Logger) {
        var stored: Int64?
        do {
            stored = try store.loadValue(Int64.self, forKey: ConnectionCounter.storeKey)
        } catch {
            logger.error("cannot read the connection counter; it starts again", metadata: ["error": "\(error)"])
        }
        save(restoreConnectionCounter(stored: stored), in: store, logger: logger)
    }

    /// Renews the reservation on disk when half of it is used; at every connection event.
    func reserveConnectionNumbers(in store: LocalCache, logger: Logger) {
        save(connectionReservation(), in: store, logger: logger)
    }

    private func save(_ reservation: Int64?, in store: LocalCache, logger: Logger) {
        guard let reservation else { return }
        do {
            // On disk before a will can carry a number above the last reservation, even across a power cut.
            try store.write(.full) { try $0.saveValue(reservation, forKey: ConnectionCounter.storeKey) }
        } catch {
            logger.error("cannot store the connection counter", metadata: ["error": "\(error)"])
        }
    }
}
