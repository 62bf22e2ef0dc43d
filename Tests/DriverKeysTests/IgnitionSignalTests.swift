import DriverKeys
import Testing

@Suite struct IgnitionSignalTests {
    @Test func aSwitchReadsItsOwnCodeOnly() {
        let signal = IgnitionSignal(kind: .switch, code: IgnitionSignal.switchCodes["SW_DOCK"]!)
        #expect(signal.reading(InputEventRecord(type: 5, code: 5, value: 1)) == true)
        #expect(signal.reading(InputEventRecord(type: 5, code: 5, value: 0)) == false)
        #expect(signal.reading(InputEventRecord(type: 5, code: 4, value: 1)) == nil)
        #expect(signal.reading(InputEventRecord(type: 1, code: 5, value: 1)) == nil, "a key with the same code is no switch")
    }

    @Test func aKeyIsOnWhileHeldAndItsRepeatsSayNothing() {
        let signal = IgnitionSignal(kind: .key, code: IgnitionSignal.code(named: "KEY_F12", kind: .key)!)
        #expect(signal.reading(InputEventRecord(type: 1, code: 88, value: 1)) == true)
        #expect(signal.reading(InputEventRecord(type: 1, code: 88, value: 2)) == nil)
        #expect(signal.reading(InputEventRecord(type: 1, code: 88, value: 0)) == false)
    }

    @Test func anInvertedLineReadsTheOtherWay() {
        let signal = IgnitionSignal(kind: .switch, code: 5, inverted: true)
        #expect(signal.reading(InputEventRecord(type: 5, code: 5, value: 0)) == true)
        #expect(signal.reading(InputEventRecord(type: 5, code: 5, value: 1)) == false)
    }

    @Test func namesAndCodesAreCheckedForTheirKind() {
        #expect(IgnitionSignal.code(named: "SW_DOCK", kind: .switch) == 5)
        #expect(IgnitionSignal.code(named: "16", kind: .switch) == 16)
        #expect(IgnitionSignal.code(named: "17", kind: .switch) == nil)
        #expect(IgnitionSignal.code(named: "SW_DOCK", kind: .key) == nil)
        #expect(IgnitionSignal.code(named: "KEY_F12", kind: .switch) == nil)
    }
}
