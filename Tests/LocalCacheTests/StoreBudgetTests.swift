import LocalCache
import Testing

/// The store's room, from `max_mb` and what `statvfs` says of its filesystem: pure arithmetic,
/// tested with the numbers a 3 MB tmpfs, an SD card and a failed statvfs give.
@Suite struct StoreBudgetTests {
    static let mib: Int64 = 1024 * 1024

    @Test func aSmallFilesystemNotMaxMBSetsTheLimit() {
        // 3 MiB tmpfs, 100 KiB of store, the rest free: 64 MiB of max_mb cannot be had.
        let budget = StoreBudget(
            maxBytes: 64 * Self.mib, storeFileBytes: 100 * 1024, filesystemTotalBytes: 3 * Self.mib, filesystemAvailableBytes: 3 * Self.mib - 100 * 1024)
        #expect(budget.footprintBytes == 3 * Self.mib - 256 * 1024, "all of it but the filesystem's reserve")
        #expect(budget.walBytes + budget.dataBytes == budget.footprintBytes, "the WAL is counted in it")
        #expect(budget.positionBytes < budget.dataBytes - 64 * 1024, "room kept for alarms, replies and events")
        #expect(budget.positionBytes > budget.footprintBytes / 2, "positions still get most of it")
    }

    @Test func aFullFilesystemLeavesTheStoreWhatItHas() {
        // Something else took every free block: the store's own files are all the room there is,
        // and positions must give way inside them.
        let files = 2 * Self.mib
        let budget = StoreBudget(maxBytes: 64 * Self.mib, storeFileBytes: files, filesystemTotalBytes: 3 * Self.mib, filesystemAvailableBytes: 0)
        #expect(budget.footprintBytes == files)
        #expect(budget.positionBytes == files - 2 * (files / 8))
    }

    /// A WAL past its share is room only once checkpointed and started over; until then what it
    /// holds still has to fit the database file, so positions give way sooner.
    @Test func aWALPastItsShareLeavesLessForData() {
        let usual = StoreBudget(maxBytes: 64 * Self.mib, storeFileBytes: 2 * Self.mib, filesystemTotalBytes: 3 * Self.mib, filesystemAvailableBytes: 0)
        let swollen = StoreBudget(
            maxBytes: 64 * Self.mib, storeFileBytes: 2 * Self.mib, walFileBytes: Self.mib, filesystemTotalBytes: 3 * Self.mib, filesystemAvailableBytes: 0)
        #expect(swollen.footprintBytes == usual.footprintBytes)
        #expect(swollen.dataBytes == 2 * Self.mib - Self.mib)
        #expect(swollen.positionBytes == usual.positionBytes - (Self.mib - usual.walBytes))
    }

    @Test func aLargeFilesystemLeavesMaxMBInCharge() {
        let budget = StoreBudget(
            maxBytes: 64 * Self.mib, storeFileBytes: 10 * Self.mib, filesystemTotalBytes: 16 * 1024 * Self.mib, filesystemAvailableBytes: 8 * 1024 * Self.mib)
        #expect(budget.footprintBytes == 64 * Self.mib)
        #expect(budget.walBytes == 4 * Self.mib, "the WAL's share is at most 4 MiB")
        #expect(budget.positionBytes == 56 * Self.mib)
    }

    @Test func withoutStatvfsMaxMBAloneCounts() {
        let budget = StoreBudget(maxBytes: Self.mib, storeFileBytes: 0, filesystemTotalBytes: nil, filesystemAvailableBytes: nil)
        #expect(budget.footprintBytes == Self.mib)
        #expect(budget.walBytes == 128 * 1024 && budget.positionBytes == Self.mib - 256 * 1024)
    }

    @Test func nothingGoesNegative() {
        let budget = StoreBudget(maxBytes: 0, storeFileBytes: 0, filesystemTotalBytes: 1024, filesystemAvailableBytes: 0)
        #expect(budget.footprintBytes == 0 && budget.walBytes == 64 * 1024 && budget.dataBytes == 0 && budget.positionBytes == 0)
    }
}
