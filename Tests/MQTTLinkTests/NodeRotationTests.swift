import MQTTLink
import Testing

@Suite struct NodeRotationTests {
    @Test func failuresMoveThroughTheNodesInOrderAndBackToTheFirst() {
        var rotation = NodeRotation(count: 3)
        var visited = [rotation.index]
        var attempts: [Int] = []
        for _ in 0..<4 {
            attempts.append(rotation.moveOn())
            visited.append(rotation.index)
        }
        #expect(visited == [0, 1, 2, 0, 1])
        // The backoff grows with every failed attempt, whichever node it went to.
        #expect(attempts == [0, 1, 2, 3])
    }

    @Test func aSessionThatCameUpResetsTheBackoffAndALostOneMovesOn() {
        var rotation = NodeRotation(count: 2)
        _ = rotation.moveOn()
        _ = rotation.moveOn()
        #expect(rotation.index == 0)
        _ = rotation.moveOn()
        #expect(rotation.index == 1)
        rotation.connected()
        // Node 1's session is lost: the next attempt goes to node 0 after the shortest backoff.
        #expect(rotation.moveOn() == 0)
        #expect(rotation.index == 0)
    }

    @Test func oneNodeIsAlwaysTheOne() {
        var rotation = NodeRotation(count: 1)
        for _ in 0..<5 { _ = rotation.moveOn() }
        #expect(rotation.index == 0 && rotation.failures == 5)
        #expect(NodeRotation(count: 0).count == 1)
    }
}
