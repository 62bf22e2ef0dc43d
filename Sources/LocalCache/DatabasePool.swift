import Synchronization

/// The store's connections to one WAL file: one writer, used by one caller at a time, and readers
/// opened as needed (each read on a snapshot, beside the writer's transaction).
final class DatabasePool: Sendable {
    let path: String
    private let writer: Database
    private let writerLock = Mutex(())
    private let idleReaders = Mutex<[Database]>([])
    private let prepare: @Sendable (Database) throws -> Void

    /// Tests and tools may read or write the file from another process: a statement waits this long
    /// for their locks before it fails with `SQLITE_BUSY`.
    static let busyTimeoutMs: Int32 = 5000
    /// A WAL reader waits for a lock only in SQLite's rare cases (another process recovering the
    /// file, or the last connection closing it), and those may take a while.
    static let readerBusyTimeoutMs: Int32 = 10_000

    /// `prepare` runs on every connection as it opens.
    init(path: String, prepare: @escaping @Sendable (Database) throws -> Void) throws {
        self.path = path
        self.prepare = prepare
        writer = try Database(path: path, busyTimeoutMs: Self.busyTimeoutMs)
        let journalMode = try String.fetchOne(writer, sql: "PRAGMA journal_mode = WAL")
        guard journalMode == "wal" else {
            throw DatabaseError(resultCode: DatabaseError.misuse, message: "journal mode \(journalMode ?? "none") instead of wal at \(path)")
        }
        // Commits survive a crash of the daemon; `.full` transactions ask for more (LocalCache.write).
        try writer.execute(sql: "PRAGMA synchronous = NORMAL")
        try prepare(writer)
    }

    /// Runs `body` with the writer and no transaction around it.
    func writeWithoutTransaction<T>(_ body: (Database) throws -> T) throws -> T {
        var result: Result<T, any Error>?
        writerLock.withLock { _ in result = Result { try body(writer) } }
        guard let result else { preconditionFailure("Mutex.withLock returned without running its body") }
        return try result.get()
    }

    /// Runs `body` in an immediate transaction of the writer: committed if it returns, rolled back if it throws.
    func write<T>(_ body: (Database) throws -> T) throws -> T {
        try writeWithoutTransaction { db in
            try db.cachedStatement(sql: "BEGIN IMMEDIATE TRANSACTION").execute()
            do {
                let result = try body(db)
                try db.cachedStatement(sql: "COMMIT TRANSACTION").execute()
                return result
            } catch {
                try? db.rollbackIfInsideTransaction()
                throw error
            }
        }
    }

    /// Runs `body` on a snapshot of the file, through a reader that cannot write (`query_only`).
    func read<T>(_ body: (Database) throws -> T) throws -> T {
        let reader = try idleReaders.withLock { $0.popLast() } ?? openReader()
        defer { idleReaders.withLock { $0.append(reader) } }
        try reader.cachedStatement(sql: "BEGIN DEFERRED TRANSACTION").execute()
        do {
            let result = try body(reader)
            try reader.cachedStatement(sql: "COMMIT TRANSACTION").execute()
            return result
        } catch {
            try? reader.rollbackIfInsideTransaction()
            throw error
        }
    }

    private func openReader() throws -> Database {
        let reader = try Database(path: path, busyTimeoutMs: Self.readerBusyTimeoutMs)
        try reader.execute(sql: "PRAGMA query_only = 1")
        try prepare(reader)
        return reader
    }

    /// Gives back the writer's page cache and closes the idle readers (a read opens one again).
    func releaseMemory() {
        writerLock.withLock { _ in writer.releaseMemory() }
        idleReaders.withLock { $0.removeAll() }
    }
}

extension Database {
    /// Rolls back the open transaction; nothing when SQLite already rolled it back by itself.
    func rollbackIfInsideTransaction() throws {
        guard isInsideTransaction else { return }
        try cachedStatement(sql: "ROLLBACK TRANSACTION").execute()
    }
}
