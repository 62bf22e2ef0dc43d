#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import TaxiProtocol

// Values, rows and records over the SQLite connection of SQLite.swift. A value that does not fit
// the Swift type it is read as (a NULL where one is required, text where a number belongs) throws
// `SQLITE_MISMATCH`, never traps: the store sets such a row aside.

/// One SQLite value, in its storage class.
enum DatabaseValue: Sendable, Equatable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])
}

/// A Swift type stored as one SQLite value.
protocol DatabaseValueConvertible {
    var databaseValue: DatabaseValue { get }
    static func decode(from value: DatabaseValue) throws -> Self
}

private func mismatch<T>(_ value: DatabaseValue, _ type: T.Type) -> DatabaseError {
    DatabaseError(resultCode: DatabaseError.mismatch, message: "cannot read \(value) as \(type)")
}

extension DatabaseValue: DatabaseValueConvertible {
    var databaseValue: DatabaseValue { self }
    static func decode(from value: DatabaseValue) throws -> DatabaseValue { value }
}

extension UnitTime: DatabaseValueConvertible {
    var databaseValue: DatabaseValue { .integer(milliseconds) }

    static func decode(from value: DatabaseValue) throws -> UnitTime {
        UnitTime(milliseconds: try Int64.decode(from: value))
    }
}

extension Int64: DatabaseValueConvertible {
    var databaseValue: DatabaseValue { .integer(self) }

    static func decode(from value: DatabaseValue) throws -> Int64 {
        switch value {
        case .integer(let integer): return integer
        case .real(let real): if let exact = Int64(exactly: real) { return exact }
        default: break
        }
        throw mismatch(value, Int64.self)
    }
}

extension Int: DatabaseValueConvertible {
    var databaseValue: DatabaseValue { .integer(Int64(self)) }
    static func decode(from value: DatabaseValue) throws -> Int {
        guard let integer = Int(exactly: try Int64.decode(from: value)) else { throw mismatch(value, Int.self) }
        return integer
    }
}

extension Int32: DatabaseValueConvertible {
    var databaseValue: DatabaseValue { .integer(Int64(self)) }
    static func decode(from value: DatabaseValue) throws -> Int32 {
        guard let integer = Int32(exactly: try Int64.decode(from: value)) else { throw mismatch(value, Int32.self) }
        return integer
    }
}

extension Double: DatabaseValueConvertible {
    var databaseValue: DatabaseValue { .real(self) }
    static func decode(from value: DatabaseValue) throws -> Double {
        switch value {
        case .integer(let integer): return Double(integer)
        case .real(let real): return real
        default: throw mismatch(value, Double.self)
        }
    }
}

extension Bool: DatabaseValueConvertible {
    var databaseValue: DatabaseValue { .integer(self ? 1 : 0) }
    static func decode(from value: DatabaseValue) throws -> Bool { try Double.decode(from: value) != 0 }
}

extension String: DatabaseValueConvertible {
    var databaseValue: DatabaseValue { .text(self) }
    static func decode(from value: DatabaseValue) throws -> String {
        switch value {
        case .text(let text): return text
        case .blob(let bytes): if let text = String(validating: bytes, as: UTF8.self) { return text }
        default: break
        }
        throw mismatch(value, String.self)
    }
}

extension [UInt8]: DatabaseValueConvertible {
    var databaseValue: DatabaseValue { .blob(self) }
    static func decode(from value: DatabaseValue) throws -> [UInt8] {
        switch value {
        case .blob(let bytes): return bytes
        case .text(let text): return Array(text.utf8)
        default: throw mismatch(value, [UInt8].self)
        }
    }
}

extension Data: DatabaseValueConvertible {
    var databaseValue: DatabaseValue { .blob([UInt8](self)) }
    static func decode(from value: DatabaseValue) throws -> Data { Data(try [UInt8].decode(from: value)) }
}

extension Optional: DatabaseValueConvertible where Wrapped: DatabaseValueConvertible {
    var databaseValue: DatabaseValue { self?.databaseValue ?? .null }
    static func decode(from value: DatabaseValue) throws -> Wrapped? {
        value == .null ? nil : try Wrapped.decode(from: value)
    }
}

/// The values bound to a statement's `?` parameters, in order; nil binds NULL.
struct StatementArguments: ExpressibleByArrayLiteral {
    var values: [DatabaseValue]

    init(arrayLiteral elements: (any DatabaseValueConvertible)?...) {
        values = elements.map { $0?.databaseValue ?? .null }
    }
}

/// The names of a statement's result columns, shared by its rows.
final class RowColumns: Sendable {
    let names: [String]
    private let indexes: [String: Int]

    init(_ names: [String]) {
        self.names = names
        // The first of two columns with the same name wins, as in SQLite's own lookups.
        indexes = Dictionary(names.enumerated().map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
    }

    func index(of name: String) -> Int? { indexes[name] }
}

/// A table's column, named once in its record.
struct Column: Sendable {
    let name: String
    init(_ name: String) { self.name = name }
}

/// A result row, copied out of its statement.
struct Row {
    let columns: RowColumns
    let values: [DatabaseValue]

    func decode<T: DatabaseValueConvertible>(_ type: T.Type = T.self, atIndex index: Int) throws -> T {
        guard values.indices.contains(index) else {
            throw DatabaseError(resultCode: DatabaseError.misuse, message: "no column \(index) among \(columns.names)")
        }
        return try T.decode(from: values[index])
    }

    func decode<T: DatabaseValueConvertible>(_ type: T.Type = T.self, forColumn name: String) throws -> T {
        guard let index = columns.index(of: name) else {
            throw DatabaseError(resultCode: DatabaseError.misuse, message: "no column \(name) among \(columns.names)")
        }
        return try T.decode(from: values[index])
    }

    func decode<T: DatabaseValueConvertible>(_ type: T.Type = T.self, forColumn column: Column) throws -> T {
        try decode(type, forColumn: column.name)
    }

    /// The value as stored, NULL for a column the row does not have: to write it back unchanged.
    subscript(_ name: String) -> DatabaseValue {
        columns.index(of: name).map { values[$0] } ?? .null
    }

    static func fetchAll(_ db: Database, sql: String, arguments: StatementArguments = []) throws -> [Row] {
        try db.makeStatement(sql: sql).fetchRows(arguments: arguments)
    }

    static func fetchAll(_ statement: Statement, arguments: StatementArguments = []) throws -> [Row] {
        try statement.fetchRows(arguments: arguments)
    }

    static func fetchOne(_ db: Database, sql: String, arguments: StatementArguments = []) throws -> Row? {
        try db.makeStatement(sql: sql).fetchRows(arguments: arguments, limit: 1).first
    }
}

extension DatabaseValueConvertible {
    /// The first column of the first row; nil when there is no row or the value is NULL.
    static func fetchOne(_ statement: Statement, arguments: StatementArguments = []) throws -> Self? {
        guard let value = try statement.fetchRows(arguments: arguments, limit: 1).first?.values.first, value != .null else { return nil }
        return try decode(from: value)
    }

    static func fetchOne(_ db: Database, sql: String, arguments: StatementArguments = []) throws -> Self? {
        try fetchOne(db.makeStatement(sql: sql), arguments: arguments)
    }

    /// The first column of every row.
    static func fetchAll(_ db: Database, sql: String, arguments: StatementArguments = []) throws -> [Self] {
        try Row.fetchAll(db, sql: sql, arguments: arguments).map { try $0.decode(atIndex: 0) }
    }
}

/// A type read from a table's row.
protocol FetchableRecord {
    init(row: Row) throws
}

extension FetchableRecord {
    static func fetchAll(_ db: Database, sql: String, arguments: StatementArguments = []) throws -> [Self] {
        try Row.fetchAll(db, sql: sql, arguments: arguments).map(Self.init(row:))
    }

    static func fetchOne(_ db: Database, sql: String, arguments: StatementArguments = []) throws -> Self? {
        try Row.fetchOne(db, sql: sql, arguments: arguments).map(Self.init(row:))
    }
}

/// The columns a record writes, in the order it names them.
struct PersistenceContainer {
    fileprivate(set) var columns: [String] = []
    fileprivate(set) var values: [DatabaseValue] = []

    subscript(_ column: Column) -> (any DatabaseValueConvertible)? {
        get { columns.firstIndex(of: column.name).map { values[$0] } }
        set {
            let value = newValue?.databaseValue ?? .null
            if let index = columns.firstIndex(of: column.name) {
                values[index] = value
            } else {
                columns.append(column.name)
                values.append(value)
            }
        }
    }
}

/// A type written as one row of its table.
protocol PersistableRecord {
    static var databaseTableName: String { get }
    func encode(to container: inout PersistenceContainer) throws
}

/// What an insert does when the row's unique key is taken.
enum ConflictResolution: String {
    case abort = "INSERT"
    case replace = "INSERT OR REPLACE"
}

extension PersistableRecord {
    func insert(_ db: Database, onConflict conflict: ConflictResolution = .abort) throws {
        let container = try encoded()
        let sql = "\(conflict.rawValue) INTO \(Self.databaseTableName) (\(container.columns.joined(separator: ", "))) VALUES (\(placeholders(container)))"
        try db.cachedStatement(sql: sql).execute(arguments: StatementArguments(values: container.values))
    }

    /// Inserts the row, or updates every column of the row whose unique key it has.
    func upsert(_ db: Database) throws {
        let container = try encoded()
        let updates = container.columns.map { "\($0) = excluded.\($0)" }.joined(separator: ", ")
        let sql = """
            INSERT INTO \(Self.databaseTableName) (\(container.columns.joined(separator: ", "))) VALUES (\(placeholders(container)))
            ON CONFLICT DO UPDATE SET \(updates)
            """
        try db.cachedStatement(sql: sql).execute(arguments: StatementArguments(values: container.values))
    }

    private func encoded() throws -> PersistenceContainer {
        var container = PersistenceContainer()
        try encode(to: &container)
        return container
    }

    private func placeholders(_ container: PersistenceContainer) -> String {
        container.columns.map { _ in "?" }.joined(separator: ", ")
    }
}

extension StatementArguments {
    init(values: [DatabaseValue]) { self.values = values }
}
