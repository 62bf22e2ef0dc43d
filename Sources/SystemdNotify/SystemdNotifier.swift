import CSystemd

/// The libsystemd adapter: tells the service manager about readiness, health and shutdown through
/// `sd_notify`. All unsafe code for libsystemd lives in this file.
///
/// Outside systemd (no `NOTIFY_SOCKET`) every call is a harmless no-op, so the daemon runs the same
/// from a terminal, under the tests and as a service.
public struct SystemdNotifier: Sendable {
    public init() {}

    /// The watchdog interval systemd expects pings within (`WatchdogSec=`), or nil when off.
    public var watchdogIntervalS: Double? {
        var microseconds: UInt64 = 0
        guard sd_watchdog_enabled(0, &microseconds) > 0, microseconds > 0 else { return nil }
        return Double(microseconds) / 1_000_000
    }

    public func ready(status: String) { send("READY=1\nSTATUS=\(Self.oneLine(status))") }
    public func status(_ status: String) { send("STATUS=\(Self.oneLine(status))") }
    public func watchdogPing(status: String) { send("WATCHDOG=1\nSTATUS=\(Self.oneLine(status))") }
    public func stopping() { send("STOPPING=1\nSTATUS=shutting down") }

    private func send(_ message: String) {
        _ = sd_notify(0, message)
    }

    /// A newline would start another assignment in the notification.
    static func oneLine(_ text: String) -> String {
        text.split(whereSeparator: \.isNewline).joined(separator: " ")
    }
}
