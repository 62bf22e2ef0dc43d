import ControlSocket
import Foundation
import GPSReader
import MQTTLink
import ServiceLifecycle

/// An adapter that owns a thread of its own: started with the service group, stopped (and joined)
/// on graceful shutdown.
public protocol BackgroundAdapter: Sendable {
    func start() throws
    func stop()
}

extension GPSDConnection: BackgroundAdapter {}
extension MQTTConnection: BackgroundAdapter {}
extension ControlServer: BackgroundAdapter {}

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
            Thread.detachNewThread {
                adapter.stop()
                stopped.resume()
            }
        }
    }
}
