import FleetConsole
import Foundation

/// Shows a push's or a command's answers as they come: each as a plain line on standard output
/// (unless --json), and on a terminal a progress bar on standard error, redrawn in place.
struct ProgressDisplay {
    let json: Bool
    let bar = standardErrorIsTerminal

    func started(_ what: String) {
        if !json { print(what) }
    }

    func answered(_ answer: UnitAnswer, _ rollout: Rollout) {
        if !json {
            clearBar()
            print(Rollout.line(answer))
            fflush(nil)
        }
        redraw(rollout)
    }

    func redraw(_ rollout: Rollout) {
        guard bar else { return }
        FileHandle.standardError.write(Data(("\r\u{1B}[K" + rollout.progressLine(barWidth: 30)).utf8))
    }

    func finished(_ rollout: Rollout) {
        clearBar()
        if json {
            print(rollout.json.text)
        } else {
            // The answers were printed as they came.
            for line in rollout.summaryLines.dropFirst(rollout.answers.count) { print(line) }
        }
    }

    private func clearBar() {
        if bar { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
    }
}

/// Waits for the answers `rollout` awaits on `link` until every online unit answered or `deadline`.
func collect(_ rollout: inout Rollout, on link: FleetLink, until deadline: ContinuousClock.Instant, showing display: ProgressDisplay) async {
    display.redraw(rollout)
    while !rollout.isComplete, let event = await link.next(before: deadline) {
        if case .message(let message) = event, let answer = rollout.take(topic: message.topic, payload: message.payload) {
            display.answered(answer, rollout)
        }
    }
    // Offline units that come back in the meantime answer too; take what is already here.
    while let event = await link.next(before: .now) {
        if case .message(let message) = event, let answer = rollout.take(topic: message.topic, payload: message.payload) {
            display.answered(answer, rollout)
        }
    }
}
