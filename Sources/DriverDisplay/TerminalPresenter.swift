#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import TaxiProtocol

/// What the serial terminal can display.
public enum TerminalCharset: String, Sendable, CaseIterable {
    /// Plain 7-bit: accents are dropped (`è` → `e`), anything else becomes `?`. What a VT100 shows.
    case ascii
    case utf8 = "utf-8"
}

/// Keeps a VT100 terminal showing the current `DriverView`: sends only the characters that changed,
/// rings the bell for what needs attention, and hides notices after a while. Pure: the caller
/// passes the time and writes the returned bytes to the line.
public struct TerminalPresenter: Sendable {
    public var renderer: ScreenRenderer
    public let charset: TerminalCharset
    public let noticeDuration: Duration
    /// An unanswered offer rings again this often.
    public let offerRingInterval: Duration
    /// false: the driver chose silent alerts (`alert blink`); alerts only blink.
    public var ringsBell = true

    /// What the terminal shows now; nil when unknown (just opened, or the driver pressed Ctrl-L).
    private var painted: Screen?
    private var noticeSeen: (serial: Int, at: UnitTime)?
    private var lastRing: (alert: Alert, at: UnitTime)?

    /// What rang the bell: a new one rings at once.
    private enum Alert: Equatable {
        case offer(deadline: UnitTime)
        case arrival(address: String)
        case notice(serial: Int)
        /// An unread urgent message: rings like an offer until read.
        case urgentMessage
    }

    static let bell: UInt8 = 0x07

    public init(renderer: ScreenRenderer, charset: TerminalCharset, noticeDuration: Duration = .seconds(8), offerRingInterval: Duration = .seconds(10)) {
        self.renderer = renderer
        self.charset = charset
        self.noticeDuration = noticeDuration
        self.offerRingInterval = offerRingInterval
    }

    /// The next `present` repaints everything.
    public mutating func invalidate() {
        painted = nil
    }

    /// Bytes that bring the terminal from what it shows to `view` at `now`; empty when nothing changed.
    public mutating func present(_ view: DriverView, now: UnitTime, utcOffsetS: Int) -> [UInt8] {
        if noticeSeen?.serial != view.noticeSerial, view.notice != nil {
            noticeSeen = (view.noticeSerial, now)
        }
        let showNotice = noticeSeen.map { $0.serial == view.noticeSerial && now - $0.at < noticeDuration } ?? false
        let screen = renderer.render(view, now: now, utcOffsetS: utcOffsetS, showNotice: showNotice).screen
        var bytes = paint(screen)
        if ringsBell, let alert = alert(view, showNotice: showNotice), shouldRing(alert, now: now) {
            lastRing = (alert, now)
            bytes.append(Self.bell)
        }
        return bytes
    }

    private func alert(_ view: DriverView, showNotice: Bool) -> Alert? {
        switch view.mode {
        case .offered(_, let deadline): return .offer(deadline: deadline)
        case .atPickup(let pickup): return .arrival(address: pickup.address)
        case .offDuty, .available, .paused, .enRoute, .onBoard, .login, .fare: break
        }
        if view.inbox.urgentUnread, view.inbox.open == nil { return .urgentMessage }
        if showNotice, let notice = view.notice, notice.alerts { return .notice(serial: view.noticeSerial) }
        return nil
    }

    private func shouldRing(_ alert: Alert, now: UnitTime) -> Bool {
        guard let last = lastRing, last.alert == alert else { return true }
        switch alert {
        case .offer, .urgentMessage: return now - last.at >= offerRingInterval
        case .arrival, .notice: break
        }
        return false
    }

    private mutating func paint(_ screen: Screen) -> [UInt8] {
        var bytes: [UInt8] = []
        let before = painted
        if before == nil {
            // Reset attributes, clear, hide the cursor (ignored by terminals that cannot).
            bytes += Array("\u{1b}[0m\u{1b}[2J\u{1b}[?25l".utf8)
        }
        for (index, line) in screen.lines.enumerated() {
            let old = before.map { $0.lines[index] }
            if let old, old == line { continue }
            let spans: [Range<Int>]
            if let old, old.alert == line.alert {
                spans = Self.changedSpans(old.text, line.text)
            } else {
                spans = [0..<line.text.count]
            }
            for span in spans {
                bytes += Array("\u{1b}[\(index + 1);\(span.lowerBound + 1)H".utf8)
                if line.alert { bytes += Array("\u{1b}[5;7m".utf8) }
                bytes += encode(line.text[span])
                if line.alert { bytes += Array("\u{1b}[0m".utf8) }
            }
        }
        painted = screen
        return bytes
    }

    /// Runs of changed cells; runs closer than a cursor move costs are merged into one.
    public static func changedSpans(_ old: [Character], _ new: [Character]) -> [Range<Int>] {
        var spans: [Range<Int>] = []
        var index = 0
        while index < new.count {
            guard old[index] != new[index] else { index += 1; continue }
            var end = index + 1
            while end < new.count && old[end] != new[end] { end += 1 }
            if let last = spans.last, index - last.upperBound < 6 {
                spans[spans.count - 1] = last.lowerBound..<end
            } else {
                spans.append(index..<end)
            }
            index = end
        }
        return spans
    }

    private func encode(_ characters: ArraySlice<Character>) -> [UInt8] {
        switch charset {
        case .utf8: return Array(String(characters).utf8)
        case .ascii: return characters.map(Self.asciiByte)
        }
    }

    /// The printable ASCII a character stands for with its diacritics and width dropped (`Città` →
    /// `Citta`, fullwidth `Ａ` → `A`), `?` for anything else.
    public static func asciiByte(_ character: Character) -> UInt8 {
        if let ascii = character.asciiValue, ascii >= 0x20, ascii < 0x7f { return ascii }
        let scalars = character.unicodeScalars
        guard let base = scalars.first, scalars.dropFirst().allSatisfy({ $0.properties.generalCategory == .nonspacingMark }),
              let ascii = asciiFold(base)
        else { return UInt8(ascii: "?") }
        return ascii
    }

    private static func asciiFold(_ scalar: Unicode.Scalar) -> UInt8? {
        let fold: UInt8?
        switch scalar.value {
        case 0x20..<0x7F: fold = UInt8(scalar.value)
        case 0xC0...0x24F: fold = latinFolds[Int(scalar.value - 0xC0)]
        case 0x1E00...0x1EFF: fold = latinExtendedAdditionalFolds[Int(scalar.value - 0x1E00)]
        // Fullwidth forms of ASCII, and the ideographic space.
        case 0xFF01...0xFF5E: fold = UInt8(scalar.value - 0xFEE0)
        case 0x3000: fold = UInt8(ascii: " ")
        default: fold = nil
        }
        return fold == UInt8(ascii: "?") ? nil : fold
    }

    /// U+00C0 to U+024F, one byte each: the first scalar of the canonical decomposition when it is
    /// ASCII and only non-spacing marks follow it, else `?` (Ø, Æ, ß, Đ, Ł… do not decompose).
    private static let latinFolds: [UInt8] = Array([
        "AAAAAA?CEEEEIIII?NOOOOO??UUUUY??aaaaaa?ceeeeiiii?nooooo??uuuuy?yAaAaAaCcCcCcCcDd??EeEeEeEeEeGgGg",
        "GgGgHh??IiIiIiIiI???JjKk?LlLlLl????NnNnNn???OoOoOo??RrRrRrSsSsSsSsTtTt??UuUuUuUuUuUuWwYyYZzZzZz?",
        "????????????????????????????????Oo?????????????Uu????????????????????????????AaIiOoUuUuUuUuUu?Aa",
        "Aa????GgKkOoOo??j???Gg??NnAa????AaAaEeEeIiIiOoOoRrRrUuUuSsTt??Hh??????AaEeOoOoOoOoYy????????????",
        "????????????????"
    ].joined().utf8)

    /// U+1E00 to U+1EFF (Latin Extended Additional: Vietnamese and others), as `latinFolds`.
    private static let latinExtendedAdditionalFolds: [UInt8] = Array([
        "AaBbBbBbCcDdDdDdDdDdEeEeEeEeEeFfGgHhHhHhHhHhIiIiKkKkKkLlLlLlLlMmMmMmNnNnNnNnOoOoOoOoPpPpRrRrRrRr",
        "SsSsSsSsSsTtTtTtTtUuUuUuUuUuVvVvWwWwWwWwWwXxXxYyZzZzZzhtwy??????AaAaAaAaAaAaAaAaAaAaAaAaEeEeEeEe",
        "EeEeEeEeIiIiOoOoOoOoOoOoOoOoOoOoOoOoUuUuUuUuUuUuUuYyYyYyYy??????"
    ].joined().utf8)
}
