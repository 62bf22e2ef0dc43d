import TaxiProtocol
import UnitCore

/// The retained position feeds beside the outbox (docs/protocol.md, "pos/last", "OwnTracks"): QoS 0,
/// straight to the broker while connected, never stored. Each replaces the last on the broker, so a lost one
/// costs nothing, and a backlog would only show where the taxi was.
struct PositionFeeds {
    /// `pos/last` is refreshed at most this often by fix time (and on every connection): a
    /// restarted dispatcher sees every unit at once, the live lane corrects it within a report.
    static let lastPositionEvery: Duration = .seconds(30)

    /// Fix time of the last `pos/last` handed to the broker.
    private(set) var lastPositionT: UnitTime?

    /// A clock that went back (the receiver's) counts as due.
    func lastPositionDue(_ fix: Fix) -> Bool {
        guard let last = lastPositionT, fix.time >= last else { return true }
        return fix.time - last >= Self.lastPositionEvery
    }

    mutating func lastPositionPublished(_ fix: Fix) {
        lastPositionT = fix.time
    }
}

extension EngineLoop {
    /// After a step: its newest reported fix, to OwnTracks (every one, over the feed's own
    /// connection) and `pos/last` (when due).
    func publishPositionFeeds(_ fixes: [RecordedFix]) {
        guard let fix = fixes.last(where: \.report)?.fix else { return }
        let ownTracks = configuration.ownTracks
        if ownTracks.enabled {
            mqtt.publishOwnTracks(OwnTracksLocation(fix, tid: ownTracks.tid), clock: core.machine.positions.clock, trustSystemClock: clock.trustSystemClock)
        }
        if broker.connected, positionFeeds.lastPositionDue(fix) { publishLastPosition(fix) }
    }

    /// On every connection: the newest fix the unit has, also one stored before a restart.
    func publishLastPositionOnConnect() {
        guard let fix = core.machine.lastFix else { return }
        publishLastPosition(fix)
    }

    private func publishLastPosition(_ fix: Fix) {
        do {
            // The live form; seq 0: this is state like `status`, not a message to deduplicate.
            let payload = try LivePositionMessage(point: PositionPoint(fix), seq: 0).json()
            _ = try mqtt.publish(topic: configuration.unitTopicBase + UnitTopic.posLast.rawValue, payload: payload, qos: 0, retain: true)
            positionFeeds.lastPositionPublished(fix)
        } catch {
            logger.debug("last position not published now", metadata: ["error": "\(error)"])
        }
    }
}
