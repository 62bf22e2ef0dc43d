/// What a debounced button did, as the driver meant it.
public enum ButtonGesture: Sendable, Equatable {
    /// A key went down (acted on at once, so a press costs no debounce latency).
    case pressed(UInt16)
    /// A hold-only key stayed down for the hold time.
    case held(UInt16)
}

/// Turns raw key edges into presses: leading-edge debounce, auto-repeat ignored, and keys that act
/// only when held long (SOS, so that it cannot be hit by accident). Pure: the caller passes the
/// time (ms, any monotonic origin) and calls `tick` at `nextDeadline`.
public struct ButtonDebouncer: Sendable {
    public let debounceMs: Int64
    public let holdMs: Int64
    public let holdOnlyKeys: Set<UInt16>

    private struct Key {
        /// The last state the hardware reported, bounces included.
        var raw = false
        /// The state we acted on.
        var accepted = false
        /// Edges before this are bounce; the raw state is looked at again then.
        var settledAt: Int64 = .min
        var downSince: Int64 = 0
        var holdFired = false
    }

    private var keys: [UInt16: Key] = [:]

    public init(debounceMs: Int64, holdMs: Int64, holdOnlyKeys: Set<UInt16>) {
        self.debounceMs = debounceMs
        self.holdMs = holdMs
        self.holdOnlyKeys = holdOnlyKeys
    }

    /// A key record from the device. Auto-repeat carries no new information and is dropped.
    public mutating func key(_ code: UInt16, _ value: InputEventRecord.KeyValue, at now: Int64) -> [ButtonGesture] {
        let isDown: Bool
        switch value {
        case .down: isDown = true
        case .up: isDown = false
        case .autoRepeat: return []
        }
        var key = keys[code] ?? Key()
        key.raw = isDown
        var gestures: [ButtonGesture] = []
        if now >= key.settledAt && key.raw != key.accepted {
            gestures += accept(&key, code: code, at: now)
        }
        keys[code] = key
        return gestures
    }

    /// Settles keys whose bounce window ended and fires holds that reached their time.
    public mutating func tick(at now: Int64) -> [ButtonGesture] {
        var gestures: [ButtonGesture] = []
        for code in keys.keys.sorted() {
            guard var key = keys[code] else { continue }
            if now >= key.settledAt && key.raw != key.accepted {
                gestures += accept(&key, code: code, at: now)
            }
            if key.accepted && holdOnlyKeys.contains(code) && !key.holdFired && now - key.downSince >= holdMs {
                key.holdFired = true
                gestures.append(.held(code))
            }
            keys[code] = key
        }
        return gestures
    }

    /// When `tick` has something to decide, or nil when nothing is pending.
    public var nextDeadline: Int64? {
        keys.compactMap { code, key -> Int64? in
            var deadlines: [Int64] = []
            if key.raw != key.accepted { deadlines.append(key.settledAt) }
            if key.accepted && holdOnlyKeys.contains(code) && !key.holdFired { deadlines.append(key.downSince + holdMs) }
            return deadlines.min()
        }.min()
    }

    /// Forgets every key: after the device vanished, its keys are up again whatever we last heard.
    public mutating func reset() {
        keys.removeAll()
    }

    private func accept(_ key: inout Key, code: UInt16, at now: Int64) -> [ButtonGesture] {
        key.accepted = key.raw
        key.settledAt = now + debounceMs
        guard key.accepted else { return [] }
        if holdOnlyKeys.contains(code) {
            key.downSince = now
            key.holdFired = false
            return []
        }
        return [.pressed(code)]
    }
}
