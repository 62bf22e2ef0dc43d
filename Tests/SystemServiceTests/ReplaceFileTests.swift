import Foundation
import Platform
import Testing

/// The telemetry textfile's write: node_exporter reads it at any moment, as another user.
@Suite struct ReplaceFileTests {
    @Test func theFileIsReplacedWholeWithItsModeAndNoTemporaryIsLeft() throws {
        let directory = NSTemporaryDirectory() + "taxiunitd-textfile-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/taxiunitd.prom"
        let umask = umask(0o077)
        defer { _ = Glibc.umask(umask) }
        try replaceFile(at: path, contents: Array("a 1\n".utf8), mode: 0o644)
        try replaceFile(at: path, contents: Array("b 2\n".utf8), mode: 0o644)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "b 2\n")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["taxiunitd.prom"])
        let mode = try #require(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
        #expect(mode == 0o644, "readable by node_exporter past the unit's UMask=0077")
        #expect(throws: SystemCallError.self) {
            try replaceFile(at: directory + "/missing/taxiunitd.prom", contents: Array("c\n".utf8), mode: 0o644)
        }
    }
}
