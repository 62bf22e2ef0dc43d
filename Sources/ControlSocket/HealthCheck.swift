/// `taxiunitctl health`: what is wrong with a unit, judged from its `status` answer alone, so that
/// a monitoring script and a person at the board see the same verdict.
public struct HealthThresholds: Sendable, Equatable {
    /// No valid fix for this long (or, before the first, this long after the start).
    public var noFixS: Double
    /// The broker unreachable for this long (or, if never reached, this long after the start).
    public var brokerDownS: Double
    /// More messages than this waiting for the broker's acknowledgement.
    public var outboxDepth: Int

    public init(noFixS: Double = 60, brokerDownS: Double = 120, outboxDepth: Int = 1000) {
        self.noFixS = noFixS
        self.brokerDownS = brokerDownS
        self.outboxDepth = outboxDepth
    }
}

public enum HealthCheck {
    /// One line per problem; empty when the unit is healthy.
    public static func problems(_ status: ControlStatus, thresholds: HealthThresholds) -> [String] {
        var problems: [String] = []
        // Before the first fix the time since the start counts: a unit that never had one is degraded too.
        if let noFix = status.gps.lastFixAgeS ?? status.runningForS, noFix >= thresholds.noFixS {
            let link = status.gps.connected ? "gpsd connected" : "gpsd not connected"
            problems.append(
                status.gps.lastFixAgeS == nil
                    ? "gps: no fix since the start \(seconds(noFix)) ago (\(link))"
                    : "gps: no fix for \(seconds(noFix)) (\(link))")
        }
        if !status.broker.connected, let down = status.broker.downForS, down >= thresholds.brokerDownS {
            let why = status.broker.lastError.map { ": \($0)" } ?? ""
            problems.append("broker: down for \(seconds(down))\(why)")
        }
        if let volatile = status.volatileStore {
            problems.append("store: the store could not be opened; running on the volatile fallback \(volatile), lost on restart")
        }
        if let store = status.store {
            if let failure = store.writeError {
                problems.append("store: cannot write (\(failure)); \(store.inMemory) messages kept in memory, lost on restart")
            }
            if store.filesystemFull {
                let free = store.filesystemFreeBytes.map { "\(kibibytes($0)) free" } ?? "free space unknown"
                problems.append("store: its filesystem is full (\(free)); the store keeps within \(kibibytes(store.limitBytes)), positions give way first")
            }
        }
        if status.outbox.depth > thresholds.outboxDepth {
            problems.append("outbox: \(status.outbox.depth) messages waiting (more than \(thresholds.outboxDepth))")
        }
        return problems
    }

    static func kibibytes(_ bytes: Int64) -> String { "\(max(0, bytes) / 1024) KiB" }

    /// Whole seconds: a health line is read by people and matched by scripts, not measured.
    static func seconds(_ value: Double) -> String {
        "\(Int(clamping: Int64(value.isFinite ? max(0, value).rounded(.down) : 0))) s"
    }
}
