import StrictJSON
import UnitCore

/// One unit's answer to a push (`config/ack`) or a command (`cmd/reply`).
public struct UnitAnswer: Sendable, Equatable {
    public var unit: String
    /// `applied`, `rejected`, `rolled_back`; `ok`, `failed`, `rejected`, `expired`, `unknown`.
    public var result: String
    public var reason: String?
    public var errors: [String]
    /// The whole message, for `--json` (a command's `deleted`, `position`, `status`).
    public var message: JSONDocument

    public var succeeded: Bool { result == "applied" || result == "ok" }
}

/// What a push or a command is waiting for, and what came back: the units that were online when
/// it went out are waited for; the others (offline) are listed apart, and count as soon as they answer.
public struct Rollout: Sendable, Equatable {
    public enum Awaited: Sendable, Equatable {
        /// The `config/ack` of this scope and version.
        case config(scope: String, version: Int)
        /// The `cmd/reply` to each unit's command id.
        case command(ids: [String: String])
    }

    /// How a push or command ended, which is also the program's exit status.
    public enum Outcome: Int32, Sendable {
        /// Every unit that was online answered applied (or ok).
        case allSucceeded = 0
        /// At least one unit rejected, rolled back, failed or refused it.
        case someRefused = 1
        /// No refusal, but not every online unit answered within the wait.
        case timedOut = 2

        public var name: String {
            switch self {
            case .allSucceeded: "succeeded"
            case .someRefused: "refused"
            case .timedOut: "timed_out"
            }
        }
    }

    public let topics: FleetTopics
    public let awaited: Awaited
    public let online: [String]
    public let offline: [String]
    public private(set) var answers: [String: UnitAnswer] = [:]

    public init(topics: FleetTopics, awaited: Awaited, online: [String], offline: [String]) {
        self.topics = topics
        self.awaited = awaited
        self.online = online.sorted()
        self.offline = offline.sorted()
    }

    /// The topic the answers come on, for every unit.
    public var answerFilter: String {
        switch awaited {
        case .config: topics.everyUnit(.configAck)
        case .command: topics.everyUnit(.cmdReply)
        }
    }

    /// Takes one message; returns the answer when it is one of those awaited. A later answer of
    /// the same unit replaces the earlier (`rolled_back` follows `applied`).
    @discardableResult
    public mutating func take(topic: String, payload: [UInt8]) -> UnitAnswer? {
        guard let (unit, name) = topics.split(topic), online.contains(unit) || offline.contains(unit),
              let message = try? JSONDocument.parse(payload), let result = message.string("result")
        else { return nil }
        switch awaited {
        case .config(let scope, let version):
            guard name == .configAck, message.string("scope") == scope, message.int("version") == version else { return nil }
        case .command(let ids):
            guard name == .cmdReply, let id = ids[unit], message.string("cmd_id") == id else { return nil }
        }
        let answer = UnitAnswer(unit: unit, result: result, reason: message.string("reason"), errors: message.strings("errors"), message: message)
        answers[unit] = answer
        return answer
    }

    /// Online units that have not answered yet.
    public var waiting: [String] { online.filter { answers[$0] == nil } }
    /// Offline units that have not answered (they get a retained document when they come back).
    public var stillOffline: [String] { offline.filter { answers[$0] == nil } }
    public var isComplete: Bool { waiting.isEmpty }

    public var outcome: Outcome {
        if answers.values.contains(where: { !$0.succeeded }) { return .someRefused }
        return waiting.isEmpty ? .allSucceeded : .timedOut
    }

    /// Answers counted by result, in a fixed order for the progress line.
    public var counts: [(result: String, count: Int)] {
        let results: [String] = switch awaited {
        case .config: ["applied", "rejected", "rolled_back"]
        case .command: ["ok", "failed", "rejected", "expired", "unknown"]
        }
        return results.map { result in (result, answers.values.filter { $0.result == result }.count) }
    }

    /// One line of progress: a bar on a terminal (`width` > 0), the counts alone otherwise.
    public func progressLine(barWidth width: Int) -> String {
        let expected = online.count + offline.count - stillOffline.count
        let done = answers.count
        var line = ""
        if width > 0 {
            let filled = expected == 0 ? width : width * done / expected
            line = "[" + String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled) + "] "
        }
        line += "\(done)/\(expected) answered:"
        line += counts.map { " \(String($0.result.map { $0 == "_" ? " " : $0 })) \($0.count)" }.joined(separator: ",")
        line += ", no answer yet \(waiting.count)"
        if !stillOffline.isEmpty { line += ", offline \(stillOffline.count)" }
        return line
    }

    /// One unit's answer as a plain line: `T042 rejected (invalid): reporting.interval_s ...`.
    public static func line(_ answer: UnitAnswer) -> String {
        var line = "\(answer.unit) \(answer.result)"
        if let reason = answer.reason { line += " (\(reason))" }
        if !answer.errors.isEmpty { line += ": " + answer.errors.joined(separator: "; ") }
        return line
    }

    /// The final report: every answer, the units still waited for and the offline ones.
    public var summaryLines: [String] {
        var lines = answers.values.sorted { $0.unit < $1.unit }.map(Self.line)
        if !waiting.isEmpty { lines.append("no answer: " + waiting.joined(separator: " ")) }
        if !stillOffline.isEmpty { lines.append("offline: " + stillOffline.joined(separator: " ")) }
        lines.append(progressLine(barWidth: 0))
        return lines
    }

    public var json: JSONDocument {
        var members: [(String, JSONDocument?)] = [("outcome", .string(outcome.name))]
        switch awaited {
        case .config(let scope, let version):
            members += [("scope", .string(scope)), ("version", .int(version))]
        case .command(let ids):
            members.append(("commands", .object(ids.sorted { $0.key < $1.key }.map { (key: $0.key, value: .string($0.value)) })))
        }
        members += [
            ("answers", .array(answers.values.sorted { $0.unit < $1.unit }.map(\.message))),
            ("waiting", .array(waiting.map(JSONDocument.string))),
            ("offline", .array(stillOffline.map(JSONDocument.string))),
        ]
        return .members(members)
    }
}
