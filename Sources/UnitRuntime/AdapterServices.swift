import ControlSocket
import GPSReader
import MQTTLink
import ServiceLifecycle

/// Each adapter owns a thread; as a `Service` it starts with the group and stops on graceful shutdown.
public struct GPSDService: Service {
    let connection: GPSDConnection

    public init(connection: GPSDConnection) {
        self.connection = connection
    }

    public func run() async throws {
        connection.start()
        try? await gracefulShutdown()
        connection.stop()
    }
}

public struct MQTTService: Service {
    let connection: MQTTConnection

    public init(connection: MQTTConnection) {
        self.connection = connection
    }

    public func run() async throws {
        connection.start()
        try? await gracefulShutdown()
        connection.stop()
    }
}

public struct ControlService: Service {
    let server: ControlServer

    public init(server: ControlServer) {
        self.server = server
    }

    public func run() async throws {
        try server.start()
        try? await gracefulShutdown()
        server.stop()
    }
}
