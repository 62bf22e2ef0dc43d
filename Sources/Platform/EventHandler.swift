import Synchronization

/// Where an adapter's thread hands its events; replaceable while the thread runs.
///
/// The function is kept in a class, never as a `Mutex`'s own value: a function value reached
/// through a generic `inout` (as `withLock` gives it) is wrapped in another reabstraction thunk at
/// every access, so calling it got slower with every event (a 24 h drain spent 16 % of its CPU in
/// those thunks, bench/README.md, "the engine restructured").
public final class EventHandler<Event: Sendable>: Sendable {
    private let current: Mutex<Box>

    private final class Box: Sendable {
        let deliver: @Sendable (Event) -> Void
        init(_ deliver: @escaping @Sendable (Event) -> Void) { self.deliver = deliver }
    }

    public init(_ deliver: @escaping @Sendable (Event) -> Void) {
        current = Mutex(Box(deliver))
    }

    public func replace(with deliver: @escaping @Sendable (Event) -> Void) {
        current.withLock { $0 = Box(deliver) }
    }

    /// Delivers outside the lock: the receiver may take its time.
    public func deliver(_ event: Event) {
        current.withLock { $0 }.deliver(event)
    }
}
