/// An adapter that owns a thread of its own: started with the service group, stopped (and joined)
/// on graceful shutdown (`AdapterLifecycle.AdapterService`).
public protocol BackgroundAdapter: Sendable {
    func start() throws
    func stop()
}
