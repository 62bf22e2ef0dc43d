import DispatchCore
import Foundation
import MQTTLink
import ServiceLifecycle
import TaxiProtocol
import UnitCore

/// The dispatcher's shell: feeds the broker's messages, the scenario and its own timers to the pure
/// `Dispatcher` one at a time, and performs what it asks for. Ends when the run's time is up and no
/// offer is still waiting for its answer, or on Ctrl-C; prints the summary either way.
final class DispatchLoop: Service, @unchecked Sendable {
    struct Options {
        var topicPrefix: String
        var fleet: String
        var durationS: Double?
        var quiet: Bool
        var statsPath: String?
        /// Several instances share the work: see `subscriptions`.
        var shareGroup: String?
        /// Send every unit seen a message this often (docs/dispatchsim.md).
        var messageEveryS: Double?
        /// After the run's time, wait up to this long for held pre-bookings and next jobs to start.
        var waitHeldS: Double = 0
    }

    private enum Input {
        case mqtt(MQTTEvent)
        case tick
    }

    private let connection: MQTTConnection
    private let options: Options
    private var dispatcher: Dispatcher
    private var schedule: [ScheduledInput]
    /// The scenario's broadcasts not sent yet, in time order.
    private var broadcasts: [ScheduledBroadcast]
    private let startMs: Int64
    /// When the scenario's clock starts: shortly after the first connection, so that the units'
    /// retained statuses have filled the queues before the first request.
    private var scheduleStartMs: Int64?
    private var timers: [DispatchTimer: Int64] = [:]
    /// Offers and acks made while the broker was away; QoS 1 takes over once they are handed over.
    private var unsent: [(topic: String, payload: [UInt8], expiryS: UInt32?)] = []
    /// Jobs this instance offered: on a shared subscription every instance sees every reply, and
    /// one to another instance's offer is not news to this one.
    private var offeredJobs: Set<String> = []
    /// Each available taxi's place in its zone's queue, sent as it changes.
    private var queueAnnouncer = QueueAnnouncer()
    /// Units that have published anything: who gets the scripted messages.
    private var unitsSeen: Set<String> = []
    private var messagesSent = 0
    private var nextMessageAt: Int64?
    private let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return encoder
    }()

    init(
        connection: MQTTConnection, dispatcher: Dispatcher, schedule: [ScheduledInput], broadcasts: [ScheduledBroadcast] = [], startMs: Int64,
        options: Options
    ) {
        self.connection = connection
        self.dispatcher = dispatcher
        self.schedule = schedule
        self.broadcasts = broadcasts
        self.startMs = startMs
        self.options = options
    }

    func run() async throws {
        let (inputs, sink) = AsyncStream.makeStream(of: Input.self, bufferingPolicy: .unbounded)
        let events = Task { [connection] in
            for await event in connection.events { sink.yield(.mqtt(event)) }
        }
        // 20 ms is the timers' resolution; replies are handled as they arrive, not on ticks.
        let ticker = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(20))
                sink.yield(.tick)
            }
        }
        defer {
            events.cancel()
            ticker.cancel()
        }
        note("dispatchsim: fleet \(options.fleet), \(dispatcher.zones.zones.count) zones, \(schedule.count) scheduled inputs, \(broadcasts.count) broadcasts")
        for await input in inputs.cancelOnGracefulShutdown() {
            switch input {
            case .mqtt(let event): handle(event)
            case .tick: runDue()
            }
            if finished { break }
        }
        report()
    }

    private var finished = false

    private func nowMs() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

    /// Feeds everything whose time has come, and decides whether the run is over.
    private func runDue() {
        let now = nowMs()
        guard let scheduleStartMs else { return }
        while let next = schedule.first, scheduleStartMs + next.atMs <= now {
            schedule.removeFirst()
            perform(dispatcher.handle(next.input, now: now))
        }
        for (timer, deadline) in timers.sorted(by: { $0.value < $1.value }) where deadline <= now {
            timers[timer] = nil
            perform(dispatcher.handle(.timerFired(timer), now: now))
        }
        announceQueues(now: now)
        sendScriptedMessages(now: now)
        sendBroadcasts(now: now, start: scheduleStartMs)
        if let durationS = options.durationS, now - scheduleStartMs >= Int64(durationS * 1000), schedule.isEmpty, broadcasts.isEmpty,
           dispatcher.pendingOffers == 0,
           dispatcher.heldJobs == 0 || now - scheduleStartMs >= Int64((durationS + options.waitHeldS) * 1000) {
            finished = true
        }
    }

    private func handle(_ event: MQTTEvent) {
        switch event {
        case .connected:
            if scheduleStartMs == nil { scheduleStartMs = nowMs() + 1000 }
            for topic in subscriptions { try? connection.subscribe(topic, qos: 1) }
            note("connected to the broker")
            let waiting = unsent
            unsent = []
            for message in waiting { publish(topic: message.topic, payload: message.payload, expiryS: message.expiryS) }
        case .disconnected(_, let reason):
            note("WARNING broker connection lost: \(reason)")
        case .connectFailed(let reason):
            note("WARNING cannot connect to the broker: \(reason)")
        case .published:
            break
        case .refused(_, let reasonCode):
            note("WARNING the broker refused a message (reason code 0x\(String(reasonCode, radix: 16)))")
        case .message(let message):
            handle(message)
        case .oversized(let topic, let bytes, _):
            note("WARNING a message of \(bytes) bytes on \(topic) was over the size limit")
        }
    }

    /// Alone, everything. In a share group, each booking (request, cancel), SOS, ride summary and
    /// driver message (`msg/reply`, `msg/read`) goes to one
    /// instance of the group (`$share/{group}/...`), which makes and owns the offer; statuses,
    /// events, positions and replies go to every instance, so each knows every taxi's state, and
    /// the replies each did not ask for are dropped (`offeredJobs`).
    private var subscriptions: [String] {
        let base = "\(options.topicPrefix)/\(options.fleet)/+/"
        let booking = Booking.topics(fleet: options.fleet)
        let shared = [booking.request, booking.cancel, base + UnitTopic.sos.rawValue, base + RideMessage.topic]
            + MessageTopic.allCases.map { base + $0.rawValue }
        let everyInstance = UnitReport.topicsRead.filter { $0 != .sos }.map { base + $0.rawValue }
        guard let group = options.shareGroup else { return everyInstance + shared }
        return everyInstance + shared.map { "$share/\(group)/\($0)" }
    }

    private func handle(_ message: MQTTMessage) {
        if message.topic.hasPrefix("dispatchsim/") {
            do {
                if let input = try Booking.input(topic: message.topic, payload: message.payload, fleet: options.fleet) {
                    perform(dispatcher.handle(input, now: nowMs()))
                }
            } catch {
                note("WARNING undecodable booking on \(message.topic) ignored (\(error))")
            }
            return
        }
        // {prefix}/{fleet}/{unit}/{name...}
        let prefixLevels = options.topicPrefix.split(separator: "/").count + 1
        let levels = message.topic.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard levels.count > prefixLevels + 1 else { return }
        let unit = levels[prefixLevels]
        let name = levels[(prefixLevels + 1)...].joined(separator: "/")
        unitsSeen.insert(unit)
        if let topic = MessageTopic(rawValue: name) {
            do {
                perform(dispatcher.handle(.report(unit: unit, try UnitReport.decode(topic, Data(message.payload))), now: nowMs()))
            } catch {
                note("WARNING \(unit): undecodable \(name) ignored (\(error)): \(String(decoding: message.payload, as: UTF8.self))")
            }
            return
        }
        let report: UnitReport
        do {
            if name == RideMessage.topic {
                report = .ride(try JSONDecoder().decode(RideMessage.self, from: Data(message.payload)))
            } else {
                guard let topic = UnitTopic(rawValue: name), let decoded = try UnitReport.decode(topic, Data(message.payload)) else { return }
                // On a shared subscription every instance sees every reply: each takes its own offers'.
                if case .reply(_, let reply) = decoded, options.shareGroup != nil, !offeredJobs.contains(reply.job) { return }
                report = decoded
            }
        } catch {
            note("WARNING \(unit): undecodable \(name) ignored (\(error)): \(String(decoding: message.payload, as: UTF8.self))")
            return
        }
        perform(dispatcher.handle(.report(unit: unit, report), now: nowMs()))
    }

    /// Places announced per tick (20 ms), at most: 1,250 a second.
    static let queueAnnouncementsPerTick = 25

    /// Tells the taxis whose place in a zone queue changed (and all of them every few minutes), on
    /// the tick and a few at a time: after every input the announcer ran about 1,000 times a second
    /// with 500 units, and a refresh went out as hundreds of publishes in a row ahead of the next
    /// reply (bench/README.md, "where the fleet's round trip went").
    private func announceQueues(now: Int64) {
        let due = queueAnnouncer.announcements(for: dispatcher.queues, now: now, limit: Self.queueAnnouncementsPerTick)
        for (unit, position) in due {
            send(.queue(position), to: unit)
        }
    }

    /// What `--message-every` sends, in turn: plain, with canned replies, urgent.
    static let scriptedMessages: [TextMessage] = [
        TextMessage(id: "", text: "Heavy traffic on 5th Avenue between 34th and 42nd: use Madison", replies: ["OK", "Thanks"]),
        TextMessage(id: "", text: "Please call the office when you can", replies: ["OK", "In 10 min", "Can't now"], priority: .urgent),
        TextMessage(id: "", text: "The airport rank is short right now: worth a trip after this job"),
    ]

    private func sendScriptedMessages(now: Int64) {
        guard let every = options.messageEveryS, let scheduleStartMs, !unitsSeen.isEmpty else { return }
        let due = nextMessageAt ?? scheduleStartMs
        guard now >= due else { return }
        nextMessageAt = now.saturatingAdd(Int64(millisecondsOf: every) ?? 0)
        var message = Self.scriptedMessages[messagesSent % Self.scriptedMessages.count]
        messagesSent += 1
        message.id = "msg-\(messagesSent)"
        message.t = now
        for unit in unitsSeen.sorted() {
            send(.message(message), to: unit)
            if !options.quiet { note("message \(message.id) to \(unit): \(message.text)") }
        }
    }

    /// The scenario's `[[broadcast]]`s whose time has come, each once, on the fleet's or its zone's topic.
    private func sendBroadcasts(now: Int64, start: Int64) {
        while let next = broadcasts.first, start.saturatingAdd(next.atMs) <= now {
            broadcasts.removeFirst()
            var message = next.message
            message.t = now
            let entry: ContractTopic = next.zone == nil ? .fleetMsg : .zoneMsg
            let topic = entry.topic(prefix: options.topicPrefix, fleet: options.fleet, unit: "", zone: next.zone ?? "+")
            publish(topic: topic, payload: encode(.message(message)))
            if !options.quiet { note("broadcast \(message.id) to \(next.zone.map { "zone \($0)" } ?? "the fleet"): \(message.text)") }
        }
    }

    private func send(_ message: InboundMessage, to unit: String) {
        var expiryS: UInt32?
        if case .offer(let offer) = message {
            offeredJobs.insert(offer.job)
            expiryS = offer.respondWithinS.map { Self.messageExpiryS(respondWithinS: $0) }
        }
        publish(topic: "\(options.topicPrefix)/\(options.fleet)/\(unit)/\(message.topic.rawValue)", payload: encode(message), expiryS: expiryS)
    }

    private func perform(_ actions: [DispatchAction]) {
        for action in actions {
            switch action {
            case .send(let unit, let message):
                send(message, to: unit)
            case .startTimer(let timer, let at):
                timers[timer] = at
            case .cancelTimer(let timer):
                timers[timer] = nil
            case .log(let line):
                if !options.quiet || line.level != .info { note(line.description) }
            case .logout(let unit, let logout):
                let topic = DriverLogout.topic.topic(prefix: options.topicPrefix, fleet: options.fleet, unit: unit)
                publish(topic: topic, payload: Array((try? encoder.encode(logout)) ?? Data()))
            }
        }
    }

    private func encode(_ message: InboundMessage) -> [UInt8] {
        let data: Data? =
            switch message {
            case .offer(let offer): try? encoder.encode(offer)
            case .cancel(let cancel): try? encoder.encode(cancel)
            case .update(let update): try? encoder.encode(update)
            case .sosAck(let ack): try? encoder.encode(ack)
            case .message(let message): try? encoder.encode(message)
            case .queue(let position): try? encoder.encode(position)
            }
        return Array(data ?? Data())
    }

    /// An offer expires on the broker when its answer window closes (MQTT 5 message expiry): a
    /// taxi that comes back later is not handed an offer it can no longer answer.
    static func messageExpiryS(respondWithinS: Double) -> UInt32 {
        let window = InboundLimits.respondWithinS
        return UInt32(min(max(respondWithinS, window.lowerBound), window.upperBound).rounded(.up))
    }

    private func publish(topic: String, payload: [UInt8], expiryS: UInt32? = nil) {
        do {
            _ = try connection.publish(topic: topic, payload: payload, qos: 1, retain: false, messageExpiryS: expiryS)
        } catch {
            unsent.append((topic, payload, expiryS))
        }
    }

    private static let clock: DateFormatter = {
        let formatter = DateFormatter()
        formatter.dateFormat = "HH:mm:ss.SSS"
        formatter.timeZone = TimeZone(identifier: "UTC")
        return formatter
    }()

    private func note(_ line: String) {
        printLine("\(Self.clock.string(from: Date())) \(line)")
    }

    /// Unbuffered, so that the live log keeps up when stdout is a pipe.
    private func printLine(_ text: String) {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }

    private func report() {
        let stats = dispatcher.stats
        printLine("----- dispatchsim summary (\((nowMs() - startMs) / 1000) s) -----\n\(stats.summary)")
        guard let path = options.statsPath else { return }
        let numbers: [String: Any] = [
            "requests": stats.requests, "offers": stats.offers, "offers_resent": stats.offersResent, "accepted": stats.accepted, "rejected": stats.rejected,
            "timed_out": stats.timedOut + stats.noReply, "unserved": stats.unserved, "busy": stats.busy,
            "expired": stats.expired, "cancelled": stats.cancelled, "completed": stats.completed, "rides": stats.rides, "fares": stats.fares, "payments": stats.payments, "sos": stats.sos,
            "messages_read": stats.messagesRead, "message_replies": stats.messageReplies, "updates_shown": stats.updatesShown,
            "street_hails": stats.hails, "pre_booking_offers": stats.preBookingOffers, "next_offers": stats.nextOffers,
            "pre_bookings_held": stats.preBookingsHeld, "pre_bookings_started": stats.preBookingsStarted, "next_jobs_held": stats.nextJobsHeld,
            "next_jobs_started": stats.nextJobsStarted, "held_replanned": stats.heldReplanned,
            "beside_offer_replies": stats.besideOfferReplies.map { [$0.unit, $0.job, $0.reply.rawValue, $0.ms] as [Any] },
            "request_to_assignment_ms": stats.requestToAssignmentMs,
            "request_to_assignment_without_think_ms": stats.requestToAssignmentWithoutThinkMs, "offer_to_reply_ms": stats.offerToReplyMs,
            "offer_to_reply_transit_ms": stats.offerToReplyTransitMs, "offer_leg_ms": stats.offerLegMs, "reply_leg_ms": stats.replyLegMs,
        ]
        if let data = try? JSONSerialization.data(withJSONObject: numbers, options: [.sortedKeys]) {
            try? data.write(to: URL(fileURLWithPath: path))
        }
    }
}
