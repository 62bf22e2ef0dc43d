import Foundation
import TestHarness
import Testing
import UnitConfig

/// docs/protocol.md's "Remotely settable" table and its "Never remotely settable" paragraph are
/// what dispatchers and fleet managers go by: both are checked against the one table the unit
/// enforces (`UnitConfiguration.remotelySettable`) and every key the shipped etc/taxiunitd.toml names.
@Suite struct RemotelySettableDocsTests {
    /// Every backticked word of `text` that is a plain key name.
    static func keyNames(in text: Substring) -> Set<String> {
        Set(text.matches(of: /`([a-z_]+)`/).map { String($0.1) })
    }

    struct Documented {
        var rows: [String: Substring] = [:]
        var never: Substring = ""
    }

    static func documented() throws -> Documented {
        let text = try String(contentsOf: URL(fileURLWithPath: Corpus.packageRoot + "/docs/protocol.md"), encoding: .utf8)
        let start = try #require(text.range(of: "**Remotely settable**"))
        let never = try #require(text.range(of: "Never remotely settable:", range: start.upperBound..<text.endIndex))
        var documented = Documented()
        for line in text[start.upperBound..<never.lowerBound].split(separator: "\n") {
            guard let row = line.wholeMatch(of: /\| `\[\[?([a-z_]+)\]\]?` \| (.+) \|/) else { continue }
            documented.rows[String(row.1)] = row.2
        }
        let end = text.range(of: "\n\n", range: never.upperBound..<text.endIndex)?.lowerBound ?? text.endIndex
        documented.never = text[never.upperBound..<end]
        return documented
    }

    @Test func theTableNamesTheSectionsTheUnitLetsTheFleetSet() throws {
        #expect(Set(try Self.documented().rows.keys) == Set(UnitConfiguration.remotelySettable.keys))
    }

    @Test func eachRowNamesExactlyTheKeysTheFleetMaySet() throws {
        let rows = try Self.documented().rows
        for (section, settable) in try ShippedConfiguration.remotelySettable() {
            let row = try #require(rows[section])
            #expect(Self.keyNames(in: row) == settable, "[\(section)]: the row names \(Self.keyNames(in: row).sorted()), the unit takes \(settable.sorted())")
        }
    }

    @Test func everythingElseIsNamedAsNeverSettable() throws {
        let shipped = try ShippedConfiguration.keys()
        let never = try Self.documented().never
        let named = Self.keyNames(in: never)
        for (section, keys) in shipped {
            switch UnitConfiguration.remotelySettable[section] {
            case nil:
                #expect(never.contains("`[\(section)]`"), "[\(section)] is not remotely settable; the paragraph does not say so")
            case .everyKey?:
                break
            case .only(let settable)?:
                for key in keys.subtracting(settable) {
                    #expect(named.contains(key) || never.contains("`[\(section)] \(key)`"), "[\(section)] \(key) is local only; the paragraph does not say so")
                }
            case .everyKeyExcept(let local)?:
                for key in local {
                    #expect(named.contains(key) || never.contains("`[\(section)] \(key)`"), "[\(section)] \(key) is local only; the paragraph does not say so")
                }
            }
        }
    }
}
