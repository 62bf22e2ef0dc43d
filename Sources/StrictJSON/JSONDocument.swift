/// Why bytes are not strict JSON.
public struct JSONSyntaxError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String

    public init(message: String) {
        self.message = message
    }

    /// As one problem among others (configuration and fleet messages report lists).
    public var problems: [String] { [message] }
    public var description: String { message }
}

/// A JSON document exactly as received: object members in order, numbers as their literal text.
/// Keeping the literal is what makes the canonical form (docs/protocol.md, "Signatures") independent
/// of how any language prints floating-point numbers.
public indirect enum JSONDocument: Sendable, Equatable {
    case object([(key: String, value: JSONDocument)])
    case array([JSONDocument])
    case string(String)
    case number(literal: String)
    case bool(Bool)
    case null

    public static func == (lhs: JSONDocument, rhs: JSONDocument) -> Bool {
        switch (lhs, rhs) {
        case (.object(let a), .object(let b)): a.map(\.key) == b.map(\.key) && a.map(\.value) == b.map(\.value)
        case (.array(let a), .array(let b)): a == b
        case (.string(let a), .string(let b)): a == b
        case (.number(let a), .number(let b)): a == b
        case (.bool(let a), .bool(let b)): a == b
        case (.null, .null): true
        default: false
        }
    }

    /// Nesting deeper than this is refused: no setting needs it and recursion must stay bounded.
    public static let maximumDepth = 16

    /// Parses strict RFC 8259 JSON. Refuses what a permissive parser would let through and a
    /// signature could then disagree about: duplicate keys, NaN/Infinity, invalid UTF-8, trailing bytes.
    public static func parse(_ bytes: [UInt8]) throws(JSONSyntaxError) -> JSONDocument {
        var parser = JSONParser(bytes: bytes)
        return try parser.parseDocument()
    }

    public subscript(key: String) -> JSONDocument? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.key == key }?.value
    }

    /// The same object without `key`; other values are returned unchanged.
    public func removing(_ key: String) -> JSONDocument {
        guard case .object(let members) = self else { return self }
        return .object(members.filter { $0.key != key })
    }

    /// Canonical bytes: object members sorted by the UTF-8 bytes of their keys, no whitespace,
    /// numbers exactly as received, strings escaped only where JSON requires (`"`, `\`, and
    /// U+0000–U+001F as `\b \f \n \r \t` or `\u00xx`), everything else raw UTF-8.
    public var canonicalBytes: [UInt8] {
        var writer = JSONWriter(capacity: 256)
        writeCanonical(into: &writer)
        return writer.bytes
    }

    private func writeCanonical(into writer: inout JSONWriter) {
        switch self {
        case .object(let members):
            writer.byte("{")
            for (index, member) in members.sorted(by: { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }).enumerated() {
                if index > 0 { writer.byte(",") }
                writer.string(member.key)
                writer.byte(":")
                member.value.writeCanonical(into: &writer)
            }
            writer.byte("}")
        case .array(let elements):
            writer.byte("[")
            for (index, element) in elements.enumerated() {
                if index > 0 { writer.byte(",") }
                element.writeCanonical(into: &writer)
            }
            writer.byte("]")
        case .string(let text):
            writer.string(text)
        case .number(let literal):
            writer.text(literal)
        case .bool(let flag):
            writer.raw(flag ? "true" : "false")
        case .null:
            writer.raw("null")
        }
    }
}

private struct JSONParser {
    let bytes: [UInt8]
    var position = 0

    init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    mutating func parseDocument() throws(JSONSyntaxError) -> JSONDocument {
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { throw fail("a byte order mark is not allowed") }
        skipWhitespace()
        let value = try parseValue(depth: 0)
        skipWhitespace()
        guard position == bytes.count else { throw fail("unexpected bytes after the document") }
        return value
    }

    private func fail(_ message: String) -> JSONSyntaxError {
        JSONSyntaxError(message: "not valid JSON at byte \(position): \(message)")
    }

    private var current: UInt8? { position < bytes.count ? bytes[position] : nil }

    private mutating func skipWhitespace() {
        while let byte = current, byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { position += 1 }
    }

    private mutating func expect(_ literal: String) throws(JSONSyntaxError) {
        for byte in literal.utf8 {
            guard current == byte else { throw fail("expected \(literal)") }
            position += 1
        }
    }

    private mutating func parseValue(depth: Int) throws(JSONSyntaxError) -> JSONDocument {
        guard depth < JSONDocument.maximumDepth else { throw fail("nested deeper than \(JSONDocument.maximumDepth) levels") }
        guard let byte = current else { throw fail("unexpected end of document") }
        switch byte {
        case UInt8(ascii: "{"): return try parseObject(depth: depth)
        case UInt8(ascii: "["): return try parseArray(depth: depth)
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expect("true"); return .bool(true)
        case UInt8(ascii: "f"): try expect("false"); return .bool(false)
        case UInt8(ascii: "n"): try expect("null"); return .null
        case UInt8(ascii: "N"), UInt8(ascii: "I"): throw fail("NaN and Infinity are not numbers in JSON")
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        default: throw fail("unexpected character")
        }
    }

    private mutating func parseObject(depth: Int) throws(JSONSyntaxError) -> JSONDocument {
        position += 1
        var members: [(key: String, value: JSONDocument)] = []
        var seen: Set<String> = []
        skipWhitespace()
        if current == UInt8(ascii: "}") {
            position += 1
            return .object(members)
        }
        while true {
            skipWhitespace()
            guard current == UInt8(ascii: "\"") else { throw fail("expected a key") }
            let keyStart = position
            let key = try parseString()
            guard seen.insert(key).inserted else {
                position = keyStart
                throw fail("duplicate key \"\(key)\"")
            }
            skipWhitespace()
            try expect(":")
            skipWhitespace()
            members.append((key, try parseValue(depth: depth + 1)))
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","): position += 1
            case UInt8(ascii: "}"): position += 1; return .object(members)
            default: throw fail("expected , or }")
            }
        }
    }

    private mutating func parseArray(depth: Int) throws(JSONSyntaxError) -> JSONDocument {
        position += 1
        var elements: [JSONDocument] = []
        skipWhitespace()
        if current == UInt8(ascii: "]") {
            position += 1
            return .array(elements)
        }
        while true {
            skipWhitespace()
            elements.append(try parseValue(depth: depth + 1))
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","): position += 1
            case UInt8(ascii: "]"): position += 1; return .array(elements)
            default: throw fail("expected , or ]")
            }
        }
    }

    private mutating func parseNumber() throws(JSONSyntaxError) -> JSONDocument {
        let start = position
        func digits(_ parser: inout JSONParser) -> Int {
            var count = 0
            while let byte = parser.current, byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") {
                parser.position += 1
                count += 1
            }
            return count
        }
        if current == UInt8(ascii: "-") { position += 1 }
        if current == UInt8(ascii: "0") {
            position += 1
            if let byte = current, byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") { throw fail("leading zeros are not allowed") }
        } else if digits(&self) == 0 {
            throw fail(current == UInt8(ascii: "I") ? "NaN and Infinity are not numbers in JSON" : "expected digits")
        }
        if current == UInt8(ascii: ".") {
            position += 1
            guard digits(&self) > 0 else { throw fail("expected digits after the decimal point") }
        }
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            position += 1
            if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { position += 1 }
            guard digits(&self) > 0 else { throw fail("expected digits in the exponent") }
        }
        return .number(literal: String(decoding: bytes[start..<position], as: UTF8.self))
    }

    private mutating func parseString() throws(JSONSyntaxError) -> String {
        position += 1
        var utf8: [UInt8] = []
        while true {
            guard let byte = current else { throw fail("unterminated string") }
            position += 1
            switch byte {
            case UInt8(ascii: "\""):
                guard let text = String(validating: utf8, as: UTF8.self) else {
                    throw fail("string is not valid UTF-8")
                }
                return text
            case UInt8(ascii: "\\"):
                try parseEscape(into: &utf8)
            case 0..<0x20:
                position -= 1
                throw fail("control character in a string must be escaped")
            default:
                utf8.append(byte)
            }
        }
    }

    private mutating func parseEscape(into utf8: inout [UInt8]) throws(JSONSyntaxError) {
        guard let byte = current else { throw fail("unterminated escape") }
        position += 1
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): utf8.append(byte)
        case UInt8(ascii: "b"): utf8.append(0x08)
        case UInt8(ascii: "f"): utf8.append(0x0C)
        case UInt8(ascii: "n"): utf8.append(0x0A)
        case UInt8(ascii: "r"): utf8.append(0x0D)
        case UInt8(ascii: "t"): utf8.append(0x09)
        case UInt8(ascii: "u"):
            var scalar = try parseHex4()
            if (0xD800...0xDBFF).contains(scalar) {
                guard current == UInt8(ascii: "\\") else { throw fail("unpaired surrogate") }
                position += 1
                guard current == UInt8(ascii: "u") else { throw fail("unpaired surrogate") }
                position += 1
                let low = try parseHex4()
                guard (0xDC00...0xDFFF).contains(low) else { throw fail("unpaired surrogate") }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            } else if (0xDC00...0xDFFF).contains(scalar) {
                throw fail("unpaired surrogate")
            }
            guard let unicode = Unicode.Scalar(scalar) else { throw fail("invalid \\u escape") }
            utf8.append(contentsOf: Array(String(Character(unicode)).utf8))
        default:
            throw fail("invalid escape")
        }
    }

    private mutating func parseHex4() throws(JSONSyntaxError) -> UInt32 {
        guard position + 4 <= bytes.count else { throw fail("incomplete \\u escape") }
        guard let value = UInt32(String(decoding: bytes[position..<position + 4], as: UTF8.self), radix: 16),
              bytes[position..<position + 4].allSatisfy({ $0 != UInt8(ascii: "+") && $0 != UInt8(ascii: "-") }) else {
            throw fail("invalid \\u escape")
        }
        position += 4
        return value
    }
}
