import Foundation
import PropertyBased
import TaxiProtocol
import Testing
import UnitCore

/// The snapshot is read back from the store, where a disk, a downgrade or a hand may have changed
/// it: mutated snapshots of releases 038dd7a and d770513 either fail to decode (and are set aside) or restore a
/// machine that keeps working. Nothing traps.
@Suite struct SnapshotFuzzTests {
    static let goldens: [[UInt8]] = ["038dd7a", "d770513"].flatMap { release in
        let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/release-\(release)/snapshots")
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return names.sorted().compactMap { try? Array(Data(contentsOf: directory.appendingPathComponent($0))) }
    }

    static func check(_ bytes: [UInt8]) {
        guard let snapshot = try? JSONDecoder().decode(UnitSnapshot.self, from: Data(bytes)) else { return }
        var machine = UnitStateMachine(restoring: snapshot, settings: UnitSettings(seats: 4))
        let now = Scenario.now
        _ = machine.handle(.resumed(at: now))
        _ = machine.handle(.driver(.accept, at: now))
        _ = machine.handle(.driver(.sos, at: now))
        _ = machine.handle(.timerFired(.heartbeat, at: now + .seconds(60)))
        #expect(machine.seatsLeft >= 0)
        // What restored is written again in this release's format and reads back the same.
        #expect((try? JSONDecoder().decode(UnitSnapshot.self, from: JSONEncoder().encode(snapshot))) == snapshot)
    }

    @Test func theGoldensAreThere() {
        #expect(Self.goldens.count == 12 + 18)
    }

    @Test func mutatedSnapshots() async {
        let mutation = zip(Gen.int(in: 0...10_000), Gen.int(in: 0...255))
        await propertyCheck(count: FuzzBudget.cases(10_000, "snapshot-mutated"), input: Gen.int(in: 0...29), mutation.array(of: 1...6)) { which, mutations in
            var bytes = Self.goldens[which % Self.goldens.count]
            for (position, byte) in mutations { bytes[position % bytes.count] = UInt8(byte) }
            Self.check(bytes)
        }
    }

    @Test func extremeNumbersInEveryNumericField() async {
        await propertyCheck(count: FuzzBudget.cases(10_000, "snapshot-extreme-numbers"), input: Gen.int(in: 0...29), Gen.int(in: 0...19).array(of: 1...12)) { which, picks in
            var remaining = picks[...]
            let text = String(decoding: Self.goldens[which % Self.goldens.count], as: UTF8.self)
                .replacing(/-?[0-9][0-9.eE+-]*/) { _ in InboundFuzzTests.extremes[remaining.popFirst() ?? 0] }
            Self.check(Array(text.utf8))
        }
    }
}
