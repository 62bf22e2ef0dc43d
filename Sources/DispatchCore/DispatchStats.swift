import TaxiProtocol

/// What a run of the dispatcher adds up to; printed at the end of every dispatchsim run.
public struct DispatchStats: Sendable, Equatable {
    public var requests = 0
    public var offers = 0
    /// Offers sent again because their unit reconnected without having shown them.
    public var offersResent = 0
    public var accepted = 0
    public var rejected = 0
    /// The unit answered `timeout` (the driver did not answer in time).
    public var timedOut = 0
    /// No reply at all within the answer window plus grace: also a timeout, seen from here.
    public var noReply = 0
    public var busy = 0
    public var expired = 0
    public var invalid = 0
    public var unserved = 0
    public var cancelled = 0
    public var shared = 0
    /// Offers of pre-bookings (to available or busy taxis) and of next jobs (`"next": true`).
    public var preBookingOffers = 0
    public var nextOffers = 0
    /// Accepted pre-bookings and next jobs (held by their taxis), and those the taxis started.
    public var preBookingsHeld = 0
    public var preBookingsStarted = 0
    public var nextJobsHeld = 0
    public var nextJobsStarted = 0
    /// Held jobs their taxi could no longer serve, planned again for another taxi.
    public var heldReplanned = 0
    public var completed = 0
    /// Ride summaries received (`ride`), one per id.
    public var rides = 0
    /// The rides' fares added up, in minor units per currency: exact, as the unit sent them.
    public var fares: [String: Int64] = [:]
    /// Rides per payment method the drivers picked.
    public var payments: [String: Int] = [:]
    public var sos = 0
    /// Street hails the units took on their own (`event` reason `hail`), one per job.
    public var hails = 0
    public var duplicatesDropped = 0
    /// `job/update`s the units answered `shown`: the driver saw the change.
    public var updatesShown = 0
    /// Messages to drivers opened (`msg/read`) and answered or sent by drivers (`msg/reply`).
    public var messagesRead = 0
    public var messageReplies = 0
    /// From the request (or a reservation's allocation time) to the accepting reply, ms.
    public var requestToAssignmentMs: [Int64] = []
    /// The same without the time offers waited for drivers: what dispatch and the links add, ms.
    /// Only requests whose every offer's think time is known (a unit's event and reply arrived).
    public var requestToAssignmentWithoutThinkMs: [Int64] = []
    /// From publishing an offer to receiving its reply, ms: includes the driver's think time.
    public var offerToReplyMs: [Int64] = []
    /// The replies to offers made to taxis with a job in hand (pre-bookings to busy taxis, next
    /// jobs), one by one: the unit shows them without an `offered` event, so their think time is
    /// not known here; a driver that timed its own think time (the fleet bench's) can take it out.
    public var besideOfferReplies: [BesideOfferReply] = []
    /// The same round trip without the time the offer sat on the unit waiting for the driver, ms.
    public var offerToReplyTransitMs: [Int64] = []
    /// The round trip's two legs: from publishing the offer to the unit's `offered` event, and from
    /// the unit's reply to receiving it, ms. Across two clocks, so they mean something only when the
    /// units stamp with this machine's clock (the fleet bench's `--system-clock`).
    public var offerLegMs: [Int64] = []
    public var replyLegMs: [Int64] = []

    public init() {}

    public var summary: String {
        """
        requests \(requests)  offers \(offers) (again after a reconnect \(offersResent))  accepted \(accepted)  rejected \(rejected)  \
        timed-out \(timedOut + noReply) (unit \(timedOut), no reply \(noReply))  unserved \(unserved)
        busy \(busy)  expired \(expired)  invalid \(invalid)  cancelled \(cancelled)  shared \(shared)  \
        pre-booking offers \(preBookingOffers) (held \(preBookingsHeld), started \(preBookingsStarted))  \
        next-job offers \(nextOffers) (stacked \(nextJobsHeld), started \(nextJobsStarted))  held and planned again \(heldReplanned)  \
        completed \(completed)  rides \(rides)  sos \(sos)  duplicates dropped \(duplicatesDropped)  updates shown \(updatesShown)  \
        messages read \(messagesRead)  replies \(messageReplies)  \
        street hails \(hails)  \
        fares \(fares.sorted { $0.key < $1.key }.map { "\(Fare.decimal($0.value, currency: $0.key)) \($0.key)" }.joined(separator: ", "))  \
        payments \(payments.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
        request → assignment          \(Percentiles(requestToAssignmentMs))
        request → assignment, no think time  \(Percentiles(requestToAssignmentWithoutThinkMs))
        offer → reply                 \(Percentiles(offerToReplyMs))
        offer → reply, no think time  \(Percentiles(offerToReplyTransitMs))
        """
    }
}

public struct BesideOfferReply: Sendable, Equatable {
    public var unit: String
    public var job: String
    public var reply: ReplyCode
    /// Offer → reply as the dispatcher saw it, ms.
    public var ms: Int64

    public init(unit: String, job: String, reply: ReplyCode, ms: Int64) {
        self.unit = unit
        self.job = job
        self.reply = reply
        self.ms = ms
    }
}

/// Nearest-rank percentiles of a sample of milliseconds.
public struct Percentiles: Sendable, Equatable, CustomStringConvertible {
    public let count: Int
    public let p50: Int64?
    public let p95: Int64?
    public let p99: Int64?
    public let max: Int64?

    public init(_ samples: [Int64]) {
        let sorted = samples.sorted()
        count = sorted.count
        func rank(_ p: Double) -> Int64? {
            guard !sorted.isEmpty else { return nil }
            let index = Int((p * Double(sorted.count)).rounded(.up)) - 1
            return sorted[Swift.max(0, Swift.min(sorted.count - 1, index))]
        }
        p50 = rank(0.50)
        p95 = rank(0.95)
        p99 = rank(0.99)
        max = sorted.last
    }

    public var description: String {
        guard let p50, let p95, let p99, let max else { return "n=0" }
        return "n=\(count) p50 \(p50) ms  p95 \(p95) ms  p99 \(p99) ms  max \(max) ms"
    }
}
