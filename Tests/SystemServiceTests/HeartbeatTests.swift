import Liveness
import Testing

struct HeartbeatTests {
    let start = ContinuousClock.now

    @Test func aliveWithinItsPromiseWedgedAfter() {
        let heartbeat = Heartbeat(name: "mqtt-loop", at: start, allowingSilenceS: 150)
        heartbeat.beat(allowingSilenceS: 11, at: start + .seconds(5))
        #expect(heartbeat.isAlive(at: start + .seconds(16)))
        #expect(!heartbeat.isAlive(at: start + .seconds(16.1)))
    }

    @Test func aFinishedThreadIsNeverWedged() {
        let heartbeat = Heartbeat(name: "gpsd-reader", at: start, allowingSilenceS: 1)
        heartbeat.finished()
        #expect(heartbeat.isAlive(at: start + .seconds(3600)))
    }

    @Test func verdictNamesEveryProblem() {
        let fresh = HeartbeatReading(lastBeat: start, allowedSilence: .seconds(11))
        let stale = HeartbeatReading(lastBeat: start - .seconds(40), allowedSilence: .seconds(11))
        #expect(HealthVerdict(engineAnswered: true, threads: [("mqtt-loop", fresh), ("gpsd-reader", fresh)], at: start) == .healthy)
        #expect(
            HealthVerdict(engineAnswered: true, threads: [("mqtt-loop", stale), ("gpsd-reader", fresh)], at: start)
                == .unhealthy("thread mqtt-loop silent for 40 s"))
        #expect(
            HealthVerdict(engineAnswered: false, threads: [("mqtt-loop", fresh), ("gpsd-reader", stale)], at: start)
                == .unhealthy("the engine loop did not answer its last probe; thread gpsd-reader silent for 40 s"))
    }
}
