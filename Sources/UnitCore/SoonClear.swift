/// The driver's announcement, while on board, that the taxi will be clear soon: the dispatcher may
/// plan the next job around it.
public struct SoonClear: Sendable, Equatable {
    public var job: String
    /// Clear in this many minutes, as the driver said.
    public var minutes: Int

    public init(job: String, minutes: Int) {
        self.job = job
        self.minutes = minutes
    }
}
