import CSQLite
#if canImport(Glibc)
import Glibc
#endif

// The store's one unsafe file: every call into the system's SQLite, and the file sizes. What uses
// it (SQLiteValues.swift, DatabasePool.swift, the store) sees connections, statements and values.

/// An SQLite failure as a value: the result code (primary and extended) and SQLite's message.
struct DatabaseError: Error, CustomStringConvertible, Sendable {
    /// SQLite's extended result code (`SQLITE_IOERR_WRITE`, …).
    var extendedResultCode: Int32
    var message: String
    /// The statement that failed, when one did.
    var sql: String?

    init(resultCode: Int32, message: String, sql: String? = nil) {
        extendedResultCode = resultCode
        self.message = message
        self.sql = sql
    }

    /// The primary code (`SQLITE_FULL`, `SQLITE_BUSY`, …) that the extended one refines.
    var resultCode: Int32 { extendedResultCode & 0xFF }

    static let corrupt = SQLITE_CORRUPT
    static let notADatabase = SQLITE_NOTADB
    /// The filesystem had no room for the write (a full disk).
    static let full = SQLITE_FULL
    static let mismatch = SQLITE_MISMATCH
    static let misuse = SQLITE_MISUSE

    var description: String { "SQLite error \(resultCode): \(message)" + (sql.map { " - while executing `\($0)`" } ?? "") }
}

/// SQLite's WAL checkpoint modes (`sqlite3_wal_checkpoint_v2`).
enum CheckpointMode {
    /// Copies what it can without waiting for readers or the writer.
    case passive
    /// Waits for the writer and the readers, copies everything and empties the WAL file.
    case truncate

    fileprivate var code: Int32 {
        switch self {
        case .passive: SQLITE_CHECKPOINT_PASSIVE
        case .truncate: SQLITE_CHECKPOINT_TRUNCATE
        }
    }
}

/// One connection to the store's file. Used by one thread at a time: `DatabasePool` hands it out
/// under its lock, which is what makes it safe to send.
final class Database: @unchecked Sendable {
    let path: String
    let sqliteConnection: OpaquePointer
    private var statements: [String: Statement] = [:]

    /// `busyTimeoutMs`: how long a statement waits for another connection's lock before it fails
    /// with `SQLITE_BUSY`.
    init(path: String, busyTimeoutMs: Int32) throws {
        var handle: OpaquePointer?
        // NOMUTEX: the pool serialises each connection's use; SQLite's own mutex would only cost.
        let code = sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nil)
        guard code == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(code))
            sqlite3_close_v2(handle)
            throw DatabaseError(resultCode: code, message: message)
        }
        self.path = path
        sqliteConnection = handle
        sqlite3_extended_result_codes(handle, 1)
        sqlite3_busy_timeout(handle, busyTimeoutMs)
    }

    deinit {
        statements.removeAll()
        sqlite3_close_v2(sqliteConnection)
    }

    func error(_ code: Int32, sql: String?) -> DatabaseError {
        DatabaseError(resultCode: code, message: String(cString: sqlite3_errmsg(sqliteConnection)), sql: sql)
    }

    /// A statement compiled once and kept for the connection's life: for SQL that runs on every
    /// commit, where compiling it again each time cost more than running it.
    func cachedStatement(sql: String) throws -> Statement {
        if let statement = statements[sql] { return statement }
        let statement = try Statement(self, sql: sql, persistent: true)
        statements[sql] = statement
        return statement
    }

    /// A statement for one use.
    func makeStatement(sql: String) throws -> Statement {
        try Statement(self, sql: sql, persistent: false)
    }

    /// Runs `sql`, which may hold several statements when it takes no arguments (a migration).
    func execute(sql: String, arguments: StatementArguments = []) throws {
        guard arguments.values.isEmpty else {
            try makeStatement(sql: sql).execute(arguments: arguments)
            return
        }
        try sql.withCString { start in
            var next: UnsafePointer<CChar>? = start
            while let remaining = next, remaining.pointee != 0 {
                var compiled: OpaquePointer?
                let code = sqlite3_prepare_v2(sqliteConnection, remaining, -1, &compiled, &next)
                guard code == SQLITE_OK else { throw error(code, sql: sql) }
                // Only white space or a comment was left.
                guard let compiled else { continue }
                defer { sqlite3_finalize(compiled) }
                var step = sqlite3_step(compiled)
                while step == SQLITE_ROW { step = sqlite3_step(compiled) }
                guard step == SQLITE_DONE else { throw error(step, sql: sql) }
            }
        }
    }

    /// Rows the last INSERT, UPDATE or DELETE changed.
    var changesCount: Int { Int(sqlite3_changes(sqliteConnection)) }

    var lastInsertedRowID: Int64 { sqlite3_last_insert_rowid(sqliteConnection) }

    /// False outside a transaction, and after SQLite rolled one back by itself (a full disk, an I/O error).
    var isInsideTransaction: Bool { sqlite3_get_autocommit(sqliteConnection) == 0 }

    func checkpoint(_ mode: CheckpointMode) throws {
        let code = sqlite3_wal_checkpoint_v2(sqliteConnection, nil, mode.code, nil, nil)
        guard code == SQLITE_OK else { throw error(code, sql: "checkpoint") }
    }

    /// Gives back the page cache's memory.
    func releaseMemory() {
        sqlite3_db_release_memory(sqliteConnection)
    }
}

/// A compiled statement of one connection.
final class Statement {
    let sql: String
    private let handle: OpaquePointer
    private unowned let database: Database
    private lazy var columnNames = RowColumns((0..<sqlite3_column_count(handle)).map { String(cString: sqlite3_column_name(handle, $0)) })

    fileprivate init(_ database: Database, sql: String, persistent: Bool) throws {
        var compiled: OpaquePointer?
        let code = sqlite3_prepare_v3(database.sqliteConnection, sql, -1, persistent ? UInt32(SQLITE_PREPARE_PERSISTENT) : 0, &compiled, nil)
        guard code == SQLITE_OK, let compiled else {
            sqlite3_finalize(compiled)
            throw database.error(code == SQLITE_OK ? SQLITE_MISUSE : code, sql: sql)
        }
        self.sql = sql
        self.database = database
        handle = compiled
    }

    deinit { sqlite3_finalize(handle) }

    /// Runs the statement to its end.
    func execute(arguments: StatementArguments = []) throws {
        try start(arguments)
        defer { sqlite3_reset(handle) }
        while try step() {}
    }

    /// Steps through the result rows; `body` reads the current one through `columns`, which is valid
    /// only during the call. The statement is reset afterwards, so it holds no read lock.
    func forEachRow(arguments: StatementArguments = [], _ body: (StatementColumns) throws -> Void) throws {
        try start(arguments)
        defer { sqlite3_reset(handle) }
        while try step() { try body(StatementColumns(handle: handle)) }
    }

    /// Copies each result row.
    func fetchRows(arguments: StatementArguments = [], limit: Int = .max) throws -> [Row] {
        var rows: [Row] = []
        try start(arguments)
        defer { sqlite3_reset(handle) }
        while rows.count < limit, try step() {
            let columns = StatementColumns(handle: handle)
            rows.append(Row(columns: columnNames, values: (0..<columnNames.names.count).map { columns.value(at: $0) }))
        }
        return rows
    }

    private func start(_ arguments: StatementArguments) throws {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
        let expected = Int(sqlite3_bind_parameter_count(handle))
        guard arguments.values.count == expected else {
            throw DatabaseError(
                resultCode: DatabaseError.misuse, message: "\(arguments.values.count) arguments for \(expected) parameters", sql: sql)
        }
        for (offset, value) in arguments.values.enumerated() {
            let index = Int32(offset + 1)
            let code: Int32
            switch value {
            case .null: code = sqlite3_bind_null(handle, index)
            case .integer(let integer): code = sqlite3_bind_int64(handle, index, integer)
            case .real(let real): code = sqlite3_bind_double(handle, index, real)
            case .text(var text):
                // An empty buffer may have no address, which SQLite would bind as NULL.
                code = text.withUTF8 { bytes in
                    bytes.isEmpty
                        ? sqlite3_bind_text(handle, index, "", 0, transient)
                        // 64-bit lengths: a value over 2 GiB is refused by SQLite (SQLITE_TOOBIG), never a trap here.
                        : sqlite3_bind_text64(handle, index, bytes.baseAddress, sqlite3_uint64(bytes.count), transient, UInt8(SQLITE_UTF8))
                }
            case .blob(let blob):
                code = blob.withUnsafeBytes { bytes in
                    bytes.isEmpty
                        ? sqlite3_bind_zeroblob(handle, index, 0)
                        : sqlite3_bind_blob64(handle, index, bytes.baseAddress, sqlite3_uint64(bytes.count), transient)
                }
            }
            guard code == SQLITE_OK else { throw database.error(code, sql: sql) }
        }
    }

    private func step() throws -> Bool {
        switch sqlite3_step(handle) {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        case let code: throw database.error(code, sql: sql)
        }
    }
}

/// SQLite copies a bound value before the bind call returns.
private let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

/// The current row of a stepping statement.
struct StatementColumns {
    fileprivate let handle: OpaquePointer

    func value(at index: Int) -> DatabaseValue {
        let column = Int32(index)
        switch sqlite3_column_type(handle, column) {
        case SQLITE_NULL: return .null
        case SQLITE_INTEGER: return .integer(sqlite3_column_int64(handle, column))
        case SQLITE_FLOAT: return .real(sqlite3_column_double(handle, column))
        // The pointer first, then its length (SQLite's documented order).
        case SQLITE_TEXT:
            guard let text = sqlite3_column_text(handle, column) else { return .text("") }
            let count = Int(sqlite3_column_bytes(handle, column))
            return .text(String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self))
        default:
            guard let blob = sqlite3_column_blob(handle, column) else { return .blob([]) }
            let count = Int(sqlite3_column_bytes(handle, column))
            return .blob([UInt8](UnsafeRawBufferPointer(start: blob, count: count)))
        }
    }

    /// As SQLite converts (text reads as its numeric prefix, or 0); nil for NULL.
    func int64(at index: Int) -> Int64? {
        sqlite3_column_type(handle, Int32(index)) == SQLITE_NULL ? nil : sqlite3_column_int64(handle, Int32(index))
    }

    /// As SQLite converts (text reads as its numeric prefix, or 0); nil for NULL.
    func double(at index: Int) -> Double? {
        sqlite3_column_type(handle, Int32(index)) == SQLITE_NULL ? nil : sqlite3_column_double(handle, Int32(index))
    }
}

extension LocalCache {
    /// 0 for a file that is not there.
    static func size(of path: String) -> Int64 {
        var status = stat()
        return stat(path, &status) == 0 ? Int64(status.st_size) : 0
    }
}
