import ControlSocket
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
        adapter.stop()
    }
}
