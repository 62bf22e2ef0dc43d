import DriverKeys
import PropertyBased
import Testing

@Suite struct ButtonDebouncerTests {
    static let accept: UInt16 = 59
    static let sos: UInt16 = 68

    func debouncer() -> ButtonDebouncer {
        ButtonDebouncer(debounceMs: 30, holdMs: 2000, holdOnlyKeys: [Self.sos])
    }

    @Test func aPressActsOnTheDownEdgeAndTheReleaseIsSilent() {
        var buttons = debouncer()
        #expect(buttons.key(Self.accept, .down, at: 1000) == [.pressed(Self.accept)])
        #expect(buttons.key(Self.accept, .up, at: 1100) == [])
        #expect(buttons.tick(at: 5000) == [])
        #expect(buttons.nextDeadline == nil)
    }

    @Test func autoRepeatIsIgnored() {
        var buttons = debouncer()
        #expect(buttons.key(Self.accept, .down, at: 0) == [.pressed(Self.accept)])
        for time in stride(from: Int64(250), to: 3000, by: 33) {
            #expect(buttons.key(Self.accept, .autoRepeat, at: time) == [])
        }
        #expect(buttons.key(Self.accept, .up, at: 3000) == [])
        #expect(buttons.key(Self.accept, .down, at: 3100) == [.pressed(Self.accept)])
    }

    @Test func bounceWithinTheWindowIsOnePress() {
        var buttons = debouncer()
        #expect(buttons.key(Self.accept, .down, at: 0) == [.pressed(Self.accept)])
        #expect(buttons.key(Self.accept, .up, at: 3) == [])
        #expect(buttons.key(Self.accept, .down, at: 7) == [])
        #expect(buttons.key(Self.accept, .up, at: 12) == [])
        #expect(buttons.key(Self.accept, .down, at: 20) == [])
        #expect(buttons.nextDeadline == nil, "raw and accepted agree: down")
        #expect(buttons.tick(at: 30) == [])
        #expect(buttons.key(Self.accept, .up, at: 400) == [])
        #expect(buttons.key(Self.accept, .down, at: 800) == [.pressed(Self.accept)])
    }

    @Test func aReleaseInsideTheWindowSettlesAtItsEnd() {
        var buttons = debouncer()
        _ = buttons.key(Self.accept, .down, at: 0)
        #expect(buttons.key(Self.accept, .up, at: 10) == [])
        #expect(buttons.nextDeadline == 30)
        #expect(buttons.tick(at: 30) == [])
        // Settled up at 30: a press at 45 bounces (window to 60), one at 61 counts.
        #expect(buttons.key(Self.accept, .down, at: 45) == [])
        #expect(buttons.nextDeadline == 60)
        #expect(buttons.tick(at: 60) == [.pressed(Self.accept)], "the key stayed down past the window")
    }

    @Test func holdingTheSOSKeyFiresOnceAtTheHoldTime() {
        var buttons = debouncer()
        #expect(buttons.key(Self.sos, .down, at: 100) == [])
        #expect(buttons.nextDeadline == 2100)
        #expect(buttons.tick(at: 2099) == [])
        #expect(buttons.tick(at: 2100) == [.held(Self.sos)])
        #expect(buttons.key(Self.sos, .autoRepeat, at: 2200) == [])
        #expect(buttons.tick(at: 9000) == [], "one hold, one SOS")
        #expect(buttons.key(Self.sos, .up, at: 9100) == [])
        #expect(buttons.tick(at: 20000) == [])
    }

    @Test func aShortPressOfTheSOSKeyDoesNothing() {
        var buttons = debouncer()
        #expect(buttons.key(Self.sos, .down, at: 0) == [])
        #expect(buttons.key(Self.sos, .up, at: 1999) == [])
        #expect(buttons.tick(at: 2000) == [])
        #expect(buttons.tick(at: 10_000) == [])
        #expect(buttons.nextDeadline == nil)
    }

    @Test func bounceOnTheSOSKeyDoesNotRestartTheHold() {
        var buttons = debouncer()
        _ = buttons.key(Self.sos, .down, at: 0)
        _ = buttons.key(Self.sos, .up, at: 4)
        _ = buttons.key(Self.sos, .down, at: 9)
        #expect(buttons.tick(at: 30) == [])
        #expect(buttons.tick(at: 2000) == [.held(Self.sos)])
    }

    @Test func releasingAndPressingAgainRestartsTheHold() {
        var buttons = debouncer()
        _ = buttons.key(Self.sos, .down, at: 0)
        _ = buttons.key(Self.sos, .up, at: 1500)
        _ = buttons.key(Self.sos, .down, at: 1600)
        #expect(buttons.tick(at: 2000) == [])
        #expect(buttons.tick(at: 3600) == [.held(Self.sos)])
    }

    @Test func keysAreIndependentAndResetForgetsThem() {
        var buttons = debouncer()
        #expect(buttons.key(Self.sos, .down, at: 0) == [])
        #expect(buttons.key(Self.accept, .down, at: 5) == [.pressed(Self.accept)])
        #expect(buttons.tick(at: 2000) == [.held(Self.sos)])
        buttons.reset()
        #expect(buttons.nextDeadline == nil)
        #expect(buttons.key(Self.accept, .down, at: 2010) == [.pressed(Self.accept)], "after a reopen the key counts again")
    }

    /// Random edges: never two presses of a key closer than the window, never a press of the SOS
    /// key, and SOS only while the SOS key is down.
    @Test func randomEdgesKeepTheRules() async {
        await propertyCheck(count: 300, input: zip(Gen.int(in: 0...60), Gen.int(in: 0...2), Gen.bool()).array(of: 1...200)) { steps in
            var buttons = debouncer()
            var now: Int64 = 0
            var lastPress: Int64?
            var sosDown = false
            func check(_ gestures: [ButtonGesture]) {
                for gesture in gestures {
                    switch gesture {
                    case .pressed(let pressed):
                        #expect(pressed == Self.accept)
                        if let lastPress { #expect(now - lastPress >= 30) }
                        lastPress = now
                    case .held(let held):
                        #expect(held == Self.sos)
                        #expect(sosDown)
                    }
                }
            }
            for (gap, value, isSOS) in steps {
                now += Int64(gap) * 10
                check(buttons.tick(at: now))
                let keyValue = InputEventRecord.KeyValue(rawValue: Int32(value))!
                if isSOS && keyValue != .autoRepeat { sosDown = keyValue == .down }
                check(buttons.key(isSOS ? Self.sos : Self.accept, keyValue, at: now))
                check(buttons.tick(at: now))
            }
        }
    }
}
