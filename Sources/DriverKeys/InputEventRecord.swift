/// One `struct input_event` from a Linux evdev device, decoded. This is the only place that knows
/// its binary layout.
public struct InputEventRecord: Sendable, Equatable {
    /// `EV_KEY`: a key or button changed; the other types (`EV_SYN`, `EV_MSC`...) carry nothing we use.
    public static let keyType: UInt16 = 1

    public enum KeyValue: Int32, Sendable {
        case up = 0
        case down = 1
        /// Sent by the kernel while a key is held; a held key is one press.
        case autoRepeat = 2
    }

    public var type: UInt16
    public var code: UInt16
    public var value: Int32

    public init(type: UInt16, code: UInt16, value: Int32) {
        self.type = type
        self.code = code
        self.value = value
    }

    /// The key change this record reports, or nil for every other kind of record.
    public var keyChange: (code: UInt16, value: KeyValue)? {
        guard type == Self.keyType, let key = KeyValue(rawValue: value) else { return nil }
        return (code, key)
    }
}

/// `struct input_event` starts with a `struct timeval` whose two fields are `long`s: 16 bytes on
/// 64-bit targets, 8 on 32-bit ones (also with 64-bit `time_t`, where the kernel uses
/// `__kernel_ulong_t` there). Type, code and value follow: 2 + 2 + 4 bytes, native byte order.
public enum InputEventLayout: Sendable, Equatable {
    case bits64
    case bits32

    /// The layout of the target this was built for.
    public static var native: InputEventLayout { MemoryLayout<Int>.size == 8 ? .bits64 : .bits32 }

    public var recordSize: Int { timevalSize + 8 }

    var timevalSize: Int {
        switch self {
        case .bits64: 16
        case .bits32: 8
        }
    }
}

/// Splits a byte stream into records; a read may end in the middle of one, so the rest is kept.
public struct InputEventDecoder: Sendable {
    public let layout: InputEventLayout
    private var pending: [UInt8] = []

    public init(layout: InputEventLayout = .native) {
        self.layout = layout
    }

    public mutating func decode(_ bytes: some Collection<UInt8>) -> [InputEventRecord] {
        pending.append(contentsOf: bytes)
        let size = layout.recordSize
        let whole = pending.count / size
        var records: [InputEventRecord] = []
        records.reserveCapacity(whole)
        pending.withUnsafeBytes { raw in
            for index in 0..<whole {
                let start = index * size + layout.timevalSize
                records.append(InputEventRecord(
                    type: raw.loadUnaligned(fromByteOffset: start, as: UInt16.self),
                    code: raw.loadUnaligned(fromByteOffset: start + 2, as: UInt16.self),
                    value: raw.loadUnaligned(fromByteOffset: start + 4, as: Int32.self)))
            }
        }
        pending.removeFirst(whole * size)
        return records
    }

    /// Forgets a partial record, when the device is reopened.
    public mutating func reset() {
        pending.removeAll()
    }

    /// The bytes the kernel would produce for `record` (tests and the benchmark write these).
    public static func encode(_ record: InputEventRecord, layout: InputEventLayout = .native, seconds: Int = 0, microseconds: Int = 0) -> [UInt8] {
        var bytes: [UInt8] = []
        func append<T: FixedWidthInteger>(_ value: T) {
            withUnsafeBytes(of: value) { bytes.append(contentsOf: $0) }
        }
        switch layout {
        case .bits64:
            append(Int64(seconds))
            append(Int64(microseconds))
        case .bits32:
            append(Int32(truncatingIfNeeded: seconds))
            append(Int32(truncatingIfNeeded: microseconds))
        }
        append(record.type)
        append(record.code)
        append(record.value)
        return bytes
    }
}
