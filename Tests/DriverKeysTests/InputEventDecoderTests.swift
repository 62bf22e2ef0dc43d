import DriverKeys
import Testing

@Suite struct InputEventDecoderTests {
    @Test(arguments: [InputEventLayout.bits64, .bits32])
    func decodesEveryFieldInBothLayouts(layout: InputEventLayout) {
        let records = [
            InputEventRecord(type: 1, code: 59, value: 1),
            InputEventRecord(type: 0, code: 0, value: 0),
            InputEventRecord(type: 1, code: 0x2c0, value: -7),
        ]
        let bytes = records.flatMap { InputEventDecoder.encode($0, layout: layout, seconds: 1_700_000_000, microseconds: 999_999) }
        #expect(bytes.count == records.count * (layout == .bits64 ? 24 : 16))
        var decoder = InputEventDecoder(layout: layout)
        #expect(decoder.decode(bytes) == records)
    }

    @Test(arguments: [InputEventLayout.bits64, .bits32])
    func aRecordSplitAcrossReadsIsKeptUntilComplete(layout: InputEventLayout) {
        let record = InputEventRecord(type: 1, code: 30, value: 0)
        let bytes = InputEventDecoder.encode(record, layout: layout) + InputEventDecoder.encode(record, layout: layout)
        var decoder = InputEventDecoder(layout: layout)
        for cut in 1..<bytes.count {
            var split = decoder
            let first = split.decode(bytes[..<cut])
            let second = split.decode(bytes[cut...])
            #expect(first + second == [record, record], "cut at \(cut)")
            #expect(first.count == cut / layout.recordSize)
        }
        _ = decoder.decode(bytes.prefix(5))
        decoder.reset()
        #expect(decoder.decode(InputEventDecoder.encode(record, layout: layout)) == [record])
    }

    @Test func theNativeLayoutMatchesThisTarget() {
        #expect(InputEventLayout.native.recordSize == MemoryLayout<Int>.size * 2 + 8)
    }

    @Test func onlyKeyRecordsWithKnownValuesAreKeyChanges() {
        #expect(InputEventRecord(type: 1, code: 5, value: 1).keyChange?.value == .down)
        #expect(InputEventRecord(type: 1, code: 5, value: 0).keyChange?.value == .up)
        #expect(InputEventRecord(type: 1, code: 5, value: 2).keyChange?.value == .autoRepeat)
        #expect(InputEventRecord(type: 1, code: 5, value: 3).keyChange == nil)
        #expect(InputEventRecord(type: 4, code: 4, value: 1).keyChange == nil, "EV_MSC scan code")
        #expect(InputEventRecord(type: 0, code: 0, value: 0).keyChange == nil, "EV_SYN")
    }

    @Test func keyNamesFollowTheKernelHeader() {
        #expect(EvdevKeyNames.code(named: "KEY_F1") == 59)
        #expect(EvdevKeyNames.code(named: "KEY_F10") == 68)
        #expect(EvdevKeyNames.code(named: "KEY_F13") == 183)
        #expect(EvdevKeyNames.code(named: "KEY_1") == 2)
        #expect(EvdevKeyNames.code(named: "KEY_0") == 11)
        #expect(EvdevKeyNames.code(named: "KEY_A") == 30)
        #expect(EvdevKeyNames.code(named: "KEY_M") == 50)
        #expect(EvdevKeyNames.code(named: "KEY_P") == 25)
        #expect(EvdevKeyNames.code(named: "BTN_0") == 0x100)
        #expect(EvdevKeyNames.code(named: "BTN_TRIGGER_HAPPY1") == 0x2c0)
        #expect(EvdevKeyNames.code(named: "260") == 260)
        #expect(EvdevKeyNames.code(named: "KEY_NOPE") == nil)
        #expect(EvdevKeyNames.code(named: "0") == nil)
        #expect(EvdevKeyNames.code(named: "70000") == nil)
    }
}
