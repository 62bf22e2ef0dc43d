import Platform
import ServiceLifecycle

/// Runs a `BackgroundAdapter` as one `Service` of the program's `ServiceGroup`.
public struct AdapterService<Adapter: BackgroundAdapter>: Service {
    let adapter: Adapter

    public init(_ adapter: Adapter) {
        self.adapter = adapter
    }

    public func run() async throws {
        try adapter.start()
        try? await gracefulShutdown()
        // stop() joins the adapter's thread (up to one blocking read or wait): do it on a thread of
        // its own, never on one of the few threads of the cooperative pool.
        await withCheckedContinuation { (stopped: CheckedContinuation<Void, Never>) in
            detachThread {
                adapter.stop()
                stopped.resume()
            }
        }
    }
}
