/// Where the ignition is read from: an evdev switch (`EV_SW`, a GPIO through `gpio-keys` with
/// `linux,input-type = <5>`) or a key held down while the ignition is on (`EV_KEY`). A taximeter's
/// hired/vacant flag (`[input.meter]`) is read the same way: set means hired.
public struct IgnitionSignal: Sendable, Equatable {
    public enum Kind: String, Sendable, CaseIterable {
        case `switch`
        case key
    }

    public var kind: Kind
    public var code: UInt16
    /// The input reads 0 while the ignition is on (a pull-up wired to ground by the ignition line).
    public var inverted: Bool

    /// `EV_SW`.
    public static let switchType: UInt16 = 5

    /// The switch names the kernel gives (`input-event-codes.h`) that boards wire signals to.
    public static let switchCodes: [String: UInt16] = [
        "SW_LID": 0x00, "SW_TABLET_MODE": 0x01, "SW_HEADPHONE_INSERT": 0x02, "SW_RFKILL_ALL": 0x03, "SW_MICROPHONE_INSERT": 0x04,
        "SW_DOCK": 0x05, "SW_LINEOUT_INSERT": 0x06, "SW_JACK_PHYSICAL_INSERT": 0x07, "SW_VIDEOOUT_INSERT": 0x08,
        "SW_CAMERA_LENS_COVER": 0x09, "SW_KEYPAD_SLIDE": 0x0a, "SW_FRONT_PROXIMITY": 0x0b, "SW_ROTATE_LOCK": 0x0c,
        "SW_LINEIN_INSERT": 0x0d, "SW_MUTE_DEVICE": 0x0e, "SW_PEN_INSERTED": 0x0f, "SW_MACHINE_COVER": 0x10,
    ]

    public init(kind: Kind, code: UInt16, inverted: Bool = false) {
        self.kind = kind
        self.code = code
        self.inverted = inverted
    }

    /// `SW_DOCK`, `KEY_F12` or a decimal code, for `kind`; nil when it names nothing of that kind.
    public static func code(named name: String, kind: Kind) -> UInt16? {
        if let number = UInt16(name) { return kind == .switch ? (number <= 0x10 ? number : nil) : EvdevKeyNames.code(named: name) }
        switch kind {
        case .switch: return switchCodes[name]
        case .key: return EvdevKeyNames.code(named: name)
        }
    }

    /// What `record` says of the ignition: on, off, or nil when it is about something else. A
    /// key's auto-repeat says nothing new.
    public func reading(_ record: InputEventRecord) -> Bool? {
        guard record.code == code else { return nil }
        switch kind {
        case .switch:
            guard record.type == Self.switchType else { return nil }
        case .key:
            guard record.type == InputEventRecord.keyType, record.value != InputEventRecord.KeyValue.autoRepeat.rawValue else { return nil }
        }
        return (record.value != 0) != inverted
    }
}
