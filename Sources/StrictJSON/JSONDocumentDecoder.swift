/// Reads a `Decodable` straight from a parsed document, so a payload is parsed once. It throws the
/// `DecodingError`s `JSONDecoder` throws for the same input (kind, type, coding path), which is
/// what the inbound decoder's refusal reasons are made of.
extension JSONDocument {
    public func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try DocumentDecoder.value(T.self, self, path: [])
    }
}

private struct DocumentDecoder: Decoder {
    let document: JSONDocument
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .object(let members) = document else { throw Self.mismatch([String: Any].self, document, codingPath) }
        // The parser refuses duplicate keys: every key is unique.
        return KeyedDecodingContainer(KeyedContainer(members: Dictionary(members) { first, _ in first }, codingPath: codingPath))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let elements) = document else { throw Self.mismatch([Any].self, document, codingPath) }
        return UnkeyedContainer(elements: elements, codingPath: codingPath)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        SingleValueContainer(document: document, codingPath: codingPath)
    }

    /// `T` from `document` at `path`: the scalars here, everything else through its own `init(from:)`.
    static func value<T: Decodable>(_ type: T.Type, _ document: JSONDocument, path: [any CodingKey]) throws -> T {
        if case .null = document, !(T.self is any ExpressibleByNilLiteral.Type) {
            throw DecodingError.valueNotFound(T.self, .init(codingPath: path, debugDescription: "Expected \(T.self) value but found null instead."))
        }
        switch T.self {
        case is Bool.Type:
            guard case .bool(let flag) = document else { throw mismatch(T.self, document, path) }
            return flag as! T
        case is String.Type:
            guard case .string(let text) = document else { throw mismatch(T.self, document, path) }
            return text as! T
        case is Double.Type: return try floatingPoint(Double.self, document, path) as! T
        case is Float.Type: return try floatingPoint(Float.self, document, path) as! T
        case is Int.Type: return try integer(Int.self, document, path) as! T
        case is Int8.Type: return try integer(Int8.self, document, path) as! T
        case is Int16.Type: return try integer(Int16.self, document, path) as! T
        case is Int32.Type: return try integer(Int32.self, document, path) as! T
        case is Int64.Type: return try integer(Int64.self, document, path) as! T
        case is UInt.Type: return try integer(UInt.self, document, path) as! T
        case is UInt8.Type: return try integer(UInt8.self, document, path) as! T
        case is UInt16.Type: return try integer(UInt16.self, document, path) as! T
        case is UInt32.Type: return try integer(UInt32.self, document, path) as! T
        case is UInt64.Type: return try integer(UInt64.self, document, path) as! T
        default: return try T(from: DocumentDecoder(document: document, codingPath: path))
        }
    }

    private static func integer<T: FixedWidthInteger>(_ type: T.Type, _ document: JSONDocument, _ path: [any CodingKey]) throws -> T {
        guard case .number(let literal) = document else { throw mismatch(T.self, document, path) }
        // `1e2` and `1.0` are whole numbers too, as `JSONDecoder` reads them.
        if let exact = T(literal) ?? Double(literal).flatMap({ T(exactly: $0) }) { return exact }
        throw DecodingError.dataCorrupted(.init(codingPath: path, debugDescription: "Parsed JSON number <\(literal)> does not fit in \(T.self)."))
    }

    private static func floatingPoint<T: BinaryFloatingPoint & LosslessStringConvertible>(
        _ type: T.Type, _ document: JSONDocument, _ path: [any CodingKey]
    ) throws -> T {
        guard case .number(let literal) = document else { throw mismatch(T.self, document, path) }
        guard let value = T(literal), value.isFinite else {
            throw DecodingError.dataCorrupted(.init(codingPath: path, debugDescription: "Parsed JSON number <\(literal)> does not fit in \(T.self)."))
        }
        return value
    }

    static func mismatch(_ type: Any.Type, _ document: JSONDocument, _ path: [any CodingKey]) -> DecodingError {
        let found = switch document {
        case .object: "a dictionary"
        case .array: "an array"
        case .string: "a string"
        case .number: "number"
        case .bool: "bool"
        case .null: "null"
        }
        return .typeMismatch(type, .init(codingPath: path, debugDescription: "Expected to decode \(type) but found \(found) instead."))
    }
}

/// An array element's place in a coding path.
private struct IndexKey: CodingKey {
    var intValue: Int?
    var stringValue: String { "Index \(intValue ?? 0)" }

    init(_ index: Int) { intValue = index }
    init?(stringValue: String) { nil }
    init?(intValue: Int) { self.intValue = intValue }
}

private struct KeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let members: [String: JSONDocument]
    let codingPath: [any CodingKey]

    var allKeys: [Key] { members.keys.compactMap(Key.init(stringValue:)) }

    func contains(_ key: Key) -> Bool { members[key.stringValue] != nil }

    private func member(_ key: Key) throws -> JSONDocument {
        guard let member = members[key.stringValue] else {
            throw DecodingError.keyNotFound(key, .init(codingPath: codingPath, debugDescription: "No value associated with key \(key.stringValue)."))
        }
        return member
    }

    func decodeNil(forKey key: Key) throws -> Bool {
        guard case .null = try member(key) else { return false }
        return true
    }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try value(key) }

    /// The one reader behind every `decode`, so that the scalar overloads do not call themselves.
    private func value<T: Decodable>(_ key: Key) throws -> T {
        try DocumentDecoder.value(T.self, try member(key), path: codingPath + [key])
    }

    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try value(key) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try value(key) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try value(key) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try value(key) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try value(key) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try value(key) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try value(key) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try value(key) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try value(key) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try value(key) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try value(key) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try value(key) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try value(key) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try value(key) }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        try DocumentDecoder(document: try member(key), codingPath: codingPath + [key]).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try DocumentDecoder(document: try member(key), codingPath: codingPath + [key]).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        DocumentDecoder(document: .object(members.map { (key: $0.key, value: $0.value) }), codingPath: codingPath)
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        DocumentDecoder(document: members[key.stringValue] ?? .null, codingPath: codingPath + [key])
    }
}

private struct UnkeyedContainer: UnkeyedDecodingContainer {
    let elements: [JSONDocument]
    let codingPath: [any CodingKey]
    private(set) var currentIndex = 0

    init(elements: [JSONDocument], codingPath: [any CodingKey]) {
        self.elements = elements
        self.codingPath = codingPath
    }

    var count: Int? { elements.count }
    var isAtEnd: Bool { currentIndex >= elements.count }

    private mutating func next<T>(_ type: T.Type) throws -> (JSONDocument, [any CodingKey]) {
        let path = codingPath + [IndexKey(currentIndex)]
        guard !isAtEnd else { throw DecodingError.valueNotFound(T.self, .init(codingPath: path, debugDescription: "Unkeyed container is at end.")) }
        defer { currentIndex += 1 }
        return (elements[currentIndex], path)
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd, case .null = elements[currentIndex] else { return false }
        currentIndex += 1
        return true
    }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try value() }

    /// The one reader behind every `decode`, so that the scalar overloads do not call themselves.
    private mutating func value<T: Decodable>() throws -> T {
        let (element, path) = try next(T.self)
        return try DocumentDecoder.value(T.self, element, path: path)
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool { try value() }
    mutating func decode(_ type: String.Type) throws -> String { try value() }
    mutating func decode(_ type: Double.Type) throws -> Double { try value() }
    mutating func decode(_ type: Float.Type) throws -> Float { try value() }
    mutating func decode(_ type: Int.Type) throws -> Int { try value() }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try value() }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try value() }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try value() }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try value() }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try value() }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try value() }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try value() }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try value() }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try value() }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        let (element, path) = try next(KeyedDecodingContainer<NestedKey>.self)
        return try DocumentDecoder(document: element, codingPath: path).container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let (element, path) = try next((any UnkeyedDecodingContainer).self)
        return try DocumentDecoder(document: element, codingPath: path).unkeyedContainer()
    }

    mutating func superDecoder() throws -> any Decoder {
        let (element, path) = try next((any Decoder).self)
        return DocumentDecoder(document: element, codingPath: path)
    }
}

private struct SingleValueContainer: SingleValueDecodingContainer {
    let document: JSONDocument
    let codingPath: [any CodingKey]

    func decodeNil() -> Bool {
        guard case .null = document else { return false }
        return true
    }

    func decode<T: Decodable>(_ type: T.Type) throws -> T { try value() }

    /// The one reader behind every `decode`, so that the scalar overloads do not call themselves.
    private func value<T: Decodable>() throws -> T { try DocumentDecoder.value(T.self, document, path: codingPath) }

    func decode(_ type: Bool.Type) throws -> Bool { try value() }
    func decode(_ type: String.Type) throws -> String { try value() }
    func decode(_ type: Double.Type) throws -> Double { try value() }
    func decode(_ type: Float.Type) throws -> Float { try value() }
    func decode(_ type: Int.Type) throws -> Int { try value() }
    func decode(_ type: Int8.Type) throws -> Int8 { try value() }
    func decode(_ type: Int16.Type) throws -> Int16 { try value() }
    func decode(_ type: Int32.Type) throws -> Int32 { try value() }
    func decode(_ type: Int64.Type) throws -> Int64 { try value() }
    func decode(_ type: UInt.Type) throws -> UInt { try value() }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try value() }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try value() }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try value() }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try value() }
}
