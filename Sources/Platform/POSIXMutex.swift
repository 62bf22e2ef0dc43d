#if canImport(Glibc)
import Glibc
#endif

/// A lock taken and released by separate calls (`lock()`, `unlock()`), for state that C callbacks
/// and Swift threads share; Foundation's `NSLock` is the same pthread mutex, but links Foundation
/// (bench/README.md, "Footprint").
public final class POSIXMutex: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

    public init() {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    public func lock() { pthread_mutex_lock(mutex) }
    public func unlock() { pthread_mutex_unlock(mutex) }
}
