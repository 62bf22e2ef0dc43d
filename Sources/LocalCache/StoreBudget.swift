import TaxiProtocol
import UnitCore

/// How much disk the store may take, and how that room is shared: the smaller of `[store] max_mb`
/// and what its filesystem holds, the WAL counted in it, and room kept for alarms, replies and
/// events that positions never take.
///
/// A filesystem that fills up (the store itself, logs, anything else on it) must not leave the unit
/// unable to store what the driver says: the store keeps that room inside its own files (free pages
/// of the database, a WAL that starts over instead of growing), which nobody else can take. Pure:
/// the shell reads the sizes and the filesystem (`statvfs`).
public struct StoreBudget: Sendable, Equatable {
    /// What the database, its WAL and its shared-memory file may take on disk together.
    public var footprintBytes: Int64
    /// The WAL's share: checkpointed when half of it is used, and cut back to it when it starts over.
    public var walBytes: Int64
    /// Pages holding data may take up to this with positions among them; above it, positions give
    /// way (the history, then thinning, then dropping).
    public var positionBytes: Int64
    /// Pages holding data may take up to this at all: the rest of the footprint is the WAL's, or
    /// more while the WAL is past its share (what it holds must fit the database file once it is
    /// checkpointed, and its room comes back only when it starts over).
    public var dataBytes: Int64

    /// What the store leaves free on its filesystem for everything else: 1/16 of it, at least
    /// 256 KiB, at most 16 MiB.
    public static func filesystemReserve(totalBytes: Int64) -> Int64 {
        min(max(totalBytes / 16, 256 * 1024), 16 * 1024 * 1024)
    }

    /// An eighth of the footprint, at least 64 KiB, at most 4 MiB: for the WAL, and again for
    /// alarms, replies and events.
    static func share(of footprint: Int64) -> Int64 {
        min(max(footprint / 8, 64 * 1024), 4 * 1024 * 1024)
    }

    /// `storeFileBytes`: what the store's files take now, `walFileBytes` of it the WAL.
    /// `filesystemTotalBytes` and `filesystemAvailableBytes`: its filesystem's size and what the
    /// daemon may still fill of it; nil when they could not be read (then `max_mb` alone counts).
    public init(maxBytes: Int64, storeFileBytes: Int64, walFileBytes: Int64 = 0, filesystemTotalBytes: Int64?, filesystemAvailableBytes: Int64?) {
        var footprint = maxBytes
        if let total = filesystemTotalBytes, let available = filesystemAvailableBytes {
            let room = max(0, available.saturatingSubtract(Self.filesystemReserve(totalBytes: total)))
            footprint = min(footprint, storeFileBytes.saturatingAdd(room))
        }
        footprintBytes = max(0, footprint)
        walBytes = Self.share(of: footprintBytes)
        dataBytes = max(0, footprintBytes - max(walBytes, walFileBytes))
        positionBytes = max(0, dataBytes - Self.share(of: footprintBytes))
    }
}
