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
    /// A healthy loop thread comes round every second; one silent this long is replaced.
    let stallLimit: Duration

    public init(connection: MQTTConnection, stallLimit: Duration = .seconds(60)) {
        self.connection = connection
        self.stallLimit = stallLimit
    }

    public func run() async throws {
        connection.start()
        await withTaskGroup(of: Void.self) { group in
            group.addTask { [connection, stallLimit] in
                while (try? await Task.sleep(for: .seconds(5))) != nil {
                    connection.restartLoopIfSilent(longerThan: stallLimit)
                }
            }
            try? await gracefulShutdown()
            group.cancelAll()
        }
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
