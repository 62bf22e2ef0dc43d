/// Key names from linux/input-event-codes.h that button boards and keypads use, so the config can say
/// `KEY_F1 = "accept"` instead of a number. Any other code can be given as its decimal number.
public enum EvdevKeyNames {
    public static let codes: [String: UInt16] = {
        var table: [String: UInt16] = [
            "KEY_ESC": 1, "KEY_BACKSPACE": 14, "KEY_TAB": 15, "KEY_ENTER": 28, "KEY_SPACE": 57,
            "KEY_UP": 103, "KEY_LEFT": 105, "KEY_RIGHT": 106, "KEY_DOWN": 108,
            "KEY_HOME": 102, "KEY_END": 107, "KEY_PAGEUP": 104, "KEY_PAGEDOWN": 109,
            "KEY_POWER": 116, "KEY_HELP": 138, "KEY_MENU": 139, "KEY_PROG1": 148, "KEY_PROG2": 149,
            "KEY_PROG3": 202, "KEY_PROG4": 203, "KEY_OK": 0x160, "KEY_SELECT": 0x161,
            "KEY_KPENTER": 96, "KEY_KPMINUS": 74, "KEY_KPPLUS": 78,
            "KEY_KP0": 82, "KEY_KP1": 79, "KEY_KP2": 80, "KEY_KP3": 81, "KEY_KP4": 75,
            "KEY_KP5": 76, "KEY_KP6": 77, "KEY_KP7": 71, "KEY_KP8": 72, "KEY_KP9": 73,
            "KEY_F11": 87, "KEY_F12": 88,
        ]
        // KEY_1..KEY_9 are 2..10, KEY_0 is 11.
        for digit in 1...9 { table["KEY_\(digit)"] = UInt16(1 + digit) }
        table["KEY_0"] = 11
        let letterRows: [(String, UInt16)] = [("QWERTYUIOP", 16), ("ASDFGHJKL", 30), ("ZXCVBNM", 44)]
        for (row, first) in letterRows {
            for (offset, letter) in row.enumerated() { table["KEY_\(letter)"] = first + UInt16(offset) }
        }
        for number in 1...10 { table["KEY_F\(number)"] = UInt16(58 + number) }
        for number in 13...24 { table["KEY_F\(number)"] = UInt16(170 + number) }
        // gpio-keys boards often use BTN_0.. and BTN_TRIGGER_HAPPY1..
        for number in 0...9 { table["BTN_\(number)"] = 0x100 + UInt16(number) }
        for number in 1...40 { table["BTN_TRIGGER_HAPPY\(number)"] = 0x2bf + UInt16(number) }
        return table
    }()

    /// `KEY_F1`, or a decimal code such as `260` for keys this table does not name.
    public static func code(named name: String) -> UInt16? {
        if let code = codes[name] { return code }
        guard let number = UInt16(name), number > 0, number < 0x300 else { return nil }
        return number
    }
}
