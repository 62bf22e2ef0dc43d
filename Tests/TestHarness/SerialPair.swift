import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A VT100 screen in memory: applies cursor moves, clears, attributes and text, so tests check what
/// the driver would see rather than the bytes that made it.
public struct VirtualTerminal: Sendable {
    public var cells: [[Character]]
    public var blinking: [[Bool]]
    var row = 0, column = 0
    var attribute = false
    public var bells = 0

    public init(columns: Int, rows: Int) {
        cells = Array(repeating: Array(repeating: " ", count: columns), count: rows)
        blinking = Array(repeating: Array(repeating: false, count: columns), count: rows)
    }

    public var rows: [String] { cells.map { String($0) } }

    public mutating func apply(_ bytes: [UInt8]) {
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == 0x1b, index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "[") {
                var end = index + 2
                while end < bytes.count, !(0x40...0x7e).contains(bytes[end]) { end += 1 }
                let parameters = String(decoding: bytes[(index + 2)..<end], as: UTF8.self)
                switch bytes[end] {
                case UInt8(ascii: "H"):
                    let numbers = parameters.split(separator: ";").map { Int($0)! }
                    row = numbers[0] - 1
                    column = numbers[1] - 1
                case UInt8(ascii: "J"):
                    for r in cells.indices { for c in cells[r].indices { cells[r][c] = " "; blinking[r][c] = false } }
                case UInt8(ascii: "m"):
                    attribute = parameters.contains("5")
                default: break
                }
                index = end + 1
            } else if byte == 0x07 {
                bells += 1
                index += 1
            } else {
                cells[row][column] = Character(Unicode.Scalar(byte))
                blinking[row][column] = attribute
                column = min(column + 1, cells[row].count - 1)
                index += 1
            }
        }
    }
}

/// Two PTYs joined by a real `socat`, as a serial cable between the unit and a terminal: the unit
/// opens `unitPath`, the test plays the terminal on the other end.
public final class SerialPair: @unchecked Sendable {
    public let unitPath: String
    public let terminalPath: String
    private let directory: ScratchDirectory
    private var process: ChildProcess?
    private var terminalFD: Int32 = -1

    public init(in directory: ScratchDirectory, name: String = "serial") async throws {
        self.directory = directory
        unitPath = directory.file("\(name)-unit")
        terminalPath = directory.file("\(name)-terminal")
        try await start()
    }

    /// (Re)starts socat: new PTYs behind the same two paths, as a USB adapter plugged in again.
    public func start() async throws {
        process = try ChildProcess(
            "socat", ["-d", "-d", "pty,raw,echo=0,link=\(unitPath)", "pty,raw,echo=0,link=\(terminalPath)"],
            logPath: directory.file("socat.log"))
        try await waitUntil("socat's PTYs", timeoutS: 10) {
            FileManager.default.fileExists(atPath: unitPath) && FileManager.default.fileExists(atPath: terminalPath)
        }
        terminalFD = open(terminalPath, O_RDWR | O_NOCTTY | O_NONBLOCK)
        guard terminalFD >= 0 else { throw HarnessError("cannot open \(terminalPath): \(String(cString: strerror(errno)))") }
    }

    /// Pulls the cable: socat goes, and with it both PTYs and their paths.
    public func stop() {
        if terminalFD >= 0 { close(terminalFD) }
        terminalFD = -1
        process?.stop()
        process = nil
    }

    /// What the terminal keyboard sends, all at once.
    public func type(_ bytes: [UInt8]) async throws {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { write(terminalFD, $0.baseAddress, $0.count) }
            if written < 0 {
                if errno == EAGAIN || errno == EINTR {
                    try await Task.sleep(for: .milliseconds(1))
                    continue
                }
                throw HarnessError("cannot write to the terminal end: \(String(cString: strerror(errno)))")
            }
            offset += written
        }
    }

    /// Everything the unit sent since the last call.
    public func received() -> [UInt8] {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while terminalFD >= 0 {
            let count = read(terminalFD, &buffer, buffer.count)
            guard count > 0 else { break }
            bytes += buffer[..<count]
        }
        return bytes
    }

    deinit { stop() }
}

/// The terminal on the far end of a `SerialPair`: keeps the screen the unit drew.
public final class TerminalScreen: @unchecked Sendable {
    public let pair: SerialPair
    private let lock = NSLock()
    private var terminal: VirtualTerminal

    public init(pair: SerialPair, columns: Int = 20, rows: Int = 4) {
        self.pair = pair
        terminal = VirtualTerminal(columns: columns, rows: rows)
    }

    /// Applies what arrived and returns the screen.
    @discardableResult
    public func refresh() -> VirtualTerminal {
        let bytes = pair.received()
        return lock.withLock {
            terminal.apply(bytes)
            return terminal
        }
    }

    public var rows: [String] { refresh().rows }

    /// Waits until the screen shows what `condition` wants.
    @discardableResult
    public func waitFor(_ what: String, timeoutS: Double = 10, _ condition: (VirtualTerminal) -> Bool) async throws -> VirtualTerminal {
        var last = refresh()
        try await waitUntil(what, timeoutS: timeoutS, detail: { "the screen:\n" + last.rows.joined(separator: "\n") }) {
            last = refresh()
            return condition(last)
        }
        return last
    }

    /// Types one key the way a person does: alone on the line, then a pause.
    public func press(_ key: String) async throws {
        try await pair.type(Array(key.utf8))
        try await Task.sleep(for: .milliseconds(60))
    }
}
