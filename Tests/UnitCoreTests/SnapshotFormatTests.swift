import Foundation
import TaxiProtocol
import Testing
import UnitCore

/// Snapshots as a release stored them under `unit_snapshot`, encoded the way its
/// `LocalCache.Transaction.saveValue` did (release 038dd7a: `JSONEncoder()`, keys in hash order;
/// since: sorted keys). The files of a release are never regenerated: units in the field hold
/// exactly those bytes. To freeze the snapshots the current code writes, as a new
/// release's set: `TAXIUNITD_WRITE_GOLDENS=<release> swift test --filter SnapshotFormatTests`.
enum SnapshotGoldens {
    static let t: UnitTime = 1_800_000_000_000
    static let pickup = Place(lat: 46.948, lon: 7.4395, address: "Bahnhofplatz 1, Bern")
    static let fix = Fix(time: t - .milliseconds(4000), latitude: 46.94812, longitude: 7.43961, speed: 4.25, track: 271.5, accuracy: 3.8)

    static func directory(_ release: String) -> URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/release-\(release)/snapshots")
    }

    /// One per kind of state, and every optional both present and absent somewhere.
    static let cases: [(name: String, snapshot: UnitSnapshot)] = [
        ("off-duty", UnitSnapshot()),
        ("available-answered-offers", UnitSnapshot(state: .available, answeredOffers: [
            AnsweredOffer(job: "J-0998", reply: JobReply(job: "J-0998", reply: .accept, t: t - .milliseconds(900_000))),
            AnsweredOffer(job: "J-0999", reply: nil),
            AnsweredOffer(
                job: "J-1000", reply: JobReply(job: "J-1000", reply: .reject, reason: "too far", t: t - .milliseconds(300_000)), lastSentAt: t - .milliseconds(120_000)),
            AnsweredOffer(job: "J-1001", reply: JobReply(job: "J-1001", re: .jobUpdate, reply: .invalid, reason: "pickups: too many", t: t - .milliseconds(60_000))),
        ])),
        ("paused-refuel", UnitSnapshot(state: .paused(.refuel))),
        ("paused-break", UnitSnapshot(state: .paused(.break))),
        ("offered-pending-offer", UnitSnapshot(state: .offered(PendingOffer(
            job: Job(id: "J-1002", pickup: pickup, passengers: 2, meetingTime: t + .milliseconds(600_000), shared: false, note: "wheelchair, \"ring twice\""),
            receivedAt: t - .milliseconds(10_000), deadline: t + .milliseconds(50_000))))),
        ("en-route-minimal-job", UnitSnapshot(state: .enRoute(Job(id: "J-1003", pickup: Place(lat: -33.8688, lon: 151.2093))))),
        ("at-pickup-shared", UnitSnapshot(state: .atPickup(
            Job(id: "J-1004", pickup: pickup, passengers: 3, shared: true, addedPickups: [
                Place(lat: 46.9511, lon: 7.4386, address: "Bärenplatz"), Place(lat: 46.9466, lon: 7.4442),
            ]),
            arrivedAt: t - .milliseconds(30_000)))),
        ("on-board-ride-start-fix", UnitSnapshot(state: .onBoard(
            Job(id: "J-1005", pickup: pickup, passengers: 1, note: "ünïcödé ✓"), since: RideStart(time: t - .milliseconds(5000), fix: fix)))),
        ("on-board-fix-without-optionals", UnitSnapshot(state: .onBoard(
            Job(id: "J-1006", pickup: pickup), since: RideStart(time: t - .milliseconds(5000), fix: Fix(time: t - .milliseconds(6000), latitude: 0, longitude: -0.5))))),
        ("on-board-ride-start-without-fix", UnitSnapshot(state: .onBoard(
            Job(id: "J-1007", pickup: pickup), since: RideStart(time: t - .milliseconds(5000), fix: nil)))),
        ("panic-open-stored", UnitSnapshot(
            state: .enRoute(Job(id: "J-1008", pickup: pickup)), panic: Panic(raisedAt: t - .milliseconds(2000), messageID: "0193f7a2c4e87b3d9a1c2e4f6a8b0c1d"))),
        ("panic-open-not-yet-stored", UnitSnapshot(state: .offDuty, panic: Panic(raisedAt: t - .milliseconds(1000)))),
    ]

    /// What formats 2 and 3 added, each key present somewhere: written with `cases` as a later
    /// release's set.
    static let laterCases: [(name: String, snapshot: UnitSnapshot)] = {
        let quoted = Fare(amount: 2350, currency: "EUR", source: .quoted)
        let whole = Job(
            id: "J-2001", pickup: pickup, passengers: 2, meetingTime: t + .milliseconds(900_000),
            dropoff: Place(lat: 46.9591, lon: 7.4474, address: "Kornhausplatz"), passenger: Passenger(name: "R. Muster", phone: "+41 31 000 00 00", pickupCode: "K7"),
            fare: quoted)
        var shift = UnitSnapshot(state: .paused(.break))
        shift.shift = Shift(
            startedAt: t - .milliseconds(28_800_000), startOdometerKm: 120_345, onDutyBefore: .milliseconds(3_600_000), onDutySince: t - .milliseconds(20_000_000),
            driving: .milliseconds(15_000_000), continuousDriving: .milliseconds(14_000_000), lastFixAt: t - .milliseconds(60_000),
            restingSince: t - .milliseconds(600_000),
            warned: [ShiftWarning(limit: .continuousDriving, reached: false, minutesLeft: 15), ShiftWarning(limit: .continuousDriving, reached: true)])
        var offDutyShift = UnitSnapshot()
        offDutyShift.shift = Shift(startedAt: t - .milliseconds(1_000))
        return [
            ("format2-whole-job-seats-reminder", UnitSnapshot(
                state: .enRoute(Job(id: "J-2000", pickup: pickup, meetingTime: t + .milliseconds(1_200_000), dropoff: Place(lat: 46.95, lon: 7.44), passenger: Passenger())),
                freeSeats: 0, reminder: Reminder(job: "J-2000", at: t + .milliseconds(600_000)))),
            ("format3-on-board-quoted-fare", UnitSnapshot(state: .onBoard(whole, since: RideStart(time: t - .milliseconds(5000), fix: fix, arrivedAt: t - .milliseconds(90_000))))),
            ("format3-cancel-request-applied-updates", UnitSnapshot(
                state: .atPickup(Job(id: "J-2002", pickup: pickup, fare: Fare(amount: 0, currency: "ZAR", source: .typed)), arrivedAt: t - .milliseconds(30_000)),
                cancelRequest: CancelRequest(job: "J-2002", reason: .passengerUnreachable, at: t - .milliseconds(2000)),
                appliedUpdates: [
                    AppliedUpdate(key: "J-2002|u1", reply: JobReply(job: "J-2002", re: .jobUpdate, reply: .shown, t: t - .milliseconds(9000), update: "u1")),
                    AppliedUpdate(
                        key: "J-2002|u2", reply: JobReply(job: "J-2002", re: .jobUpdate, reply: .invalid, reason: "5 passengers exceed 4 seats", t: t - .milliseconds(8000)),
                        lastSentAt: t - .milliseconds(7000)),
                ])),
            ("format3-upcoming-next-side-offer", UnitSnapshot(
                state: .onBoard(Job(id: "J-2003", pickup: pickup, fare: Fare(amount: 99_999_999, currency: "USD", source: .meter)), since: RideStart(time: t, fix: nil)),
                upcoming: [
                    Reservation(job: Job(id: "P-1", pickup: pickup, meetingTime: t + .milliseconds(7_200_000)), meetingTime: t + .milliseconds(7_200_000)),
                    Reservation(job: whole, meetingTime: t + .milliseconds(86_400_000)),
                ],
                next: Job(id: "J-2004", pickup: Place(lat: -26.2041, lon: 28.0473, address: "Braamfontein")),
                sideOffer: PendingOffer(job: Job(id: "P-2", pickup: pickup, meetingTime: t + .milliseconds(10_800_000)), receivedAt: t - .milliseconds(5000), deadline: t + .milliseconds(55_000)))),
            ("format3-shift-on-a-break", shift),
            ("format3-shift-just-started-off-duty", offDutyShift),
        ]
    }()

    /// The JSON as a tree of Foundation values, whose equality ignores the order of keys.
    static func tree(_ json: Data) throws -> NSDictionary {
        try #require(try JSONSerialization.jsonObject(with: json) as? NSDictionary)
    }

    static func read(_ name: String, release: String) throws -> Data {
        try Data(contentsOf: directory(release).appendingPathComponent("\(name).json"))
    }
}

@Suite struct SnapshotFormatTests {
    @Test(.enabled(if: ProcessInfo.processInfo.environment["TAXIUNITD_WRITE_GOLDENS"] != nil))
    func writeGoldens() throws {
        let release = try #require(ProcessInfo.processInfo.environment["TAXIUNITD_WRITE_GOLDENS"])
        let directory = SnapshotGoldens.directory(release)
        try #require(!FileManager.default.fileExists(atPath: directory.path), "a release's snapshots are never regenerated")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        for (name, snapshot) in SnapshotGoldens.cases + SnapshotGoldens.laterCases {
            try encoder.encode(snapshot).write(to: directory.appendingPathComponent("\(name).json"))
        }
    }

    @Test(arguments: SnapshotGoldens.cases.map(\.name))
    func aSnapshotOfRelease038dd7aRestoresAndIsWrittenAgainAsItWas(_ name: String) throws {
        let golden = try SnapshotGoldens.read(name, release: "038dd7a")
        let expected = try #require(SnapshotGoldens.cases.first { $0.name == name }?.snapshot)
        let restored = try JSONDecoder().decode(UnitSnapshot.self, from: golden)
        #expect(restored == expected)
        // The same tree with the current format version (formats 2 and 3 add only optional keys,
        // absent here): that release's `JSONEncoder` wrote keys in hash order, different in every process.
        let versioned = try SnapshotGoldens.tree(golden).mutableCopy() as? NSMutableDictionary
        versioned?["v"] = 3
        #expect(try SnapshotGoldens.tree(JSONEncoder().encode(restored)) == versioned)
    }

    /// Format 3 as release d770513 stored it (`saveValue`: sorted keys), every case of both lists:
    /// read back the same, and written again byte for byte while format 3 is the one written.
    @Test(arguments: (SnapshotGoldens.cases + SnapshotGoldens.laterCases).map(\.name))
    func aSnapshotOfReleased770513RestoresAndIsWrittenAgainAsItWas(_ name: String) throws {
        let golden = try SnapshotGoldens.read(name, release: "d770513")
        let expected = try #require((SnapshotGoldens.cases + SnapshotGoldens.laterCases).first { $0.name == name }?.snapshot)
        let restored = try JSONDecoder().decode(UnitSnapshot.self, from: golden)
        #expect(restored == expected)
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        #expect(String(decoding: try encoder.encode(restored), as: UTF8.self) == String(decoding: golden, as: UTF8.self))
    }

    /// A format 1 state as this release writes it (the store sorts keys), one state with every kind
    /// of value: the keys of release 038dd7a, under format 2.
    @Test func aFormat1StateIsWrittenWithTheKeysOfRelease038dd7a() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let snapshot = UnitSnapshot(
            state: .atPickup(
                Job(id: "J1", pickup: Place(lat: 46.5, lon: 7.5, address: "A"), passengers: 2, meetingTime: 9, shared: true, note: "n",
                    addedPickups: [Place(lat: 1, lon: 2)]),
                arrivedAt: 7),
            panic: Panic(raisedAt: 5, messageID: "m"),
            answeredOffers: [AnsweredOffer(job: "J0", reply: JobReply(job: "J0", reply: .reject, reason: "r", t: 3), lastSentAt: 4)])
        let json = String(decoding: try encoder.encode(snapshot), as: UTF8.self)
        #expect(json == """
            {"answeredOffers":[{"job":"J0","lastSentAt":4,"reply":{"job":"J0","re":"job/offer","reason":"r","reply":"reject","t":3}}],\
            "panic":{"messageID":"m","raisedAt":5},\
            "state":{"atPickup":{"_0":{"addedPickups":[{"lat":1,"lon":2}],"id":"J1","meetingTime":9,"note":"n","passengers":2,\
            "pickup":{"address":"A","lat":46.5,"lon":7.5},"shared":true},"arrivedAt":7}},"v":3}
            """)
        let onBoard = UnitSnapshot(state: .onBoard(Job(id: "J2", pickup: Place(lat: 1, lon: 2)), since: RideStart(
            time: 8, fix: Fix(time: 6, latitude: 1.5, longitude: 2.5, speed: 3, track: 4, accuracy: 5))))
        #expect(String(decoding: try encoder.encode(onBoard), as: UTF8.self) == """
            {"answeredOffers":[],"state":{"onBoard":{"_0":{"addedPickups":[],"id":"J2","passengers":1,"pickup":{"lat":1,"lon":2},"shared":false},\
            "since":{"fix":{"accuracy":5,"latitude":1.5,"longitude":2.5,"speed":3,"time":6,"track":4},"time":8}}},"v":3}
            """)
        for snapshot in SnapshotGoldens.cases.map(\.snapshot) + [snapshot, onBoard] {
            #expect(try JSONDecoder().decode(UnitSnapshot.self, from: encoder.encode(snapshot)) == snapshot)
        }
    }

    /// Format 2: the job's drop-off and passenger, the ride's arrival, free seats set by hand and a
    /// pending reminder, each under its own key and absent when it has no value.
    @Test func format2KeepsTheWholeJobSeatsAndTheReminder() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let job = Job(
            id: "J1", pickup: Place(lat: 1, lon: 2), meetingTime: 9, dropoff: Place(lat: 3, lon: 4, address: "D"),
            passenger: Passenger(name: "N", phone: "+1", pickupCode: "C"))
        let snapshot = UnitSnapshot(state: .enRoute(job), freeSeats: 2, reminder: Reminder(job: "J1", at: 5))
        #expect(String(decoding: try encoder.encode(snapshot), as: UTF8.self) == """
            {"answeredOffers":[],"freeSeats":2,"reminder":{"at":5,"job":"J1"},"state":{"enRoute":{"_0":{"addedPickups":[],\
            "dropoff":{"address":"D","lat":3,"lon":4},"id":"J1","meetingTime":9,"passenger":{"name":"N","phone":"+1","pickupCode":"C"},\
            "passengers":1,"pickup":{"lat":1,"lon":2},"shared":false}}},"v":3}
            """)
        let riding = UnitSnapshot(state: .onBoard(job, since: RideStart(time: 8, fix: nil, arrivedAt: 6)))
        for value in [snapshot, riding, UnitSnapshot(state: .enRoute(Job(id: "J", pickup: Place(lat: 1, lon: 2), passenger: Passenger())))] {
            #expect(try JSONDecoder().decode(UnitSnapshot.self, from: encoder.encode(value)) == value)
        }
        // Read back from the disk, a seat count no taxi has is refused, not trusted.
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(UnitSnapshot.self, from: Data(#"{"v":2,"state":{"available":{}},"freeSeats":-1}"#.utf8)) }
    }

    /// Format 3: the driver's pending cancel request and the updates applied to the job, absent when
    /// there are none; a format 2 snapshot reads as having neither.
    @Test func format3KeepsTheCancelRequestAndTheAppliedUpdates() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let reply = JobReply(job: "J1", re: .jobUpdate, reply: .shown, t: 4, update: "U")
        let snapshot = UnitSnapshot(
            state: .enRoute(Job(id: "J1", pickup: Place(lat: 1, lon: 2))), cancelRequest: CancelRequest(job: "J1", reason: .vehicleProblem, at: 3),
            appliedUpdates: [AppliedUpdate(key: "k", reply: reply, lastSentAt: 5)])
        #expect(String(decoding: try encoder.encode(snapshot), as: UTF8.self) == """
            {"answeredOffers":[],"appliedUpdates":[{"key":"k","lastSentAt":5,"reply":{"job":"J1","re":"job/update","reply":"shown","t":4,"update":"U"}}],\
            "cancelRequest":{"at":3,"job":"J1","reason":"vehicle_problem"},\
            "state":{"enRoute":{"_0":{"addedPickups":[],"id":"J1","passengers":1,"pickup":{"lat":1,"lon":2},"shared":false}}},"v":3}
            """)
        #expect(try JSONDecoder().decode(UnitSnapshot.self, from: encoder.encode(snapshot)) == snapshot)
        let format2 = #"{"v":2,"state":{"enRoute":{"_0":{"addedPickups":[],"id":"J1","passengers":1,"pickup":{"lat":1,"lon":2},"shared":false}}}}"#
        let restored = try JSONDecoder().decode(UnitSnapshot.self, from: Data(format2.utf8))
        #expect(restored.cancelRequest == nil)
        #expect(restored.appliedUpdates.isEmpty)
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(UnitSnapshot.self, from: Data(#"{"v":3,"state":{"available":{}},"cancelRequest":{"at":1,"job":"J","reason":"bored"}}"#.utf8))
        }
    }

    /// Format 3: the job's fare, amount in minor units with its currency and source; a format 2
    /// snapshot's job has none, and a fare out of bounds on the disk is refused.
    @Test func format3KeepsTheJobsFare() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let job = Job(id: "J1", pickup: Place(lat: 1, lon: 2), fare: Fare(amount: 2350, currency: "EUR", source: .quoted))
        let riding = UnitSnapshot(state: .onBoard(job, since: RideStart(time: 8, fix: nil, arrivedAt: 6)))
        #expect(String(decoding: try encoder.encode(riding), as: UTF8.self) == """
            {"answeredOffers":[],"state":{"onBoard":{"_0":{"addedPickups":[],"fare":{"amount":2350,"currency":"EUR","source":"quoted"},\
            "id":"J1","passengers":1,"pickup":{"lat":1,"lon":2},"shared":false},"since":{"arrivedAt":6,"time":8}}},"v":3}
            """)
        for source in FareSource.allCases {
            var metered = job
            metered.fare?.source = source
            let value = UnitSnapshot(state: .enRoute(metered))
            #expect(try JSONDecoder().decode(UnitSnapshot.self, from: encoder.encode(value)) == value)
        }
        let format2 = #"{"v":2,"state":{"enRoute":{"_0":{"id":"J","pickup":{"lat":1,"lon":2},"passengers":1,"shared":false,"addedPickups":[]}}}}"#
        #expect(try JSONDecoder().decode(UnitSnapshot.self, from: Data(format2.utf8)).state.job?.fare == nil)
        for fare in [#"{"amount":-1,"currency":"EUR","source":"quoted"}"#, #"{"amount":1,"currency":"eur","source":"quoted"}"#,
                     #"{"amount":1,"currency":"EUR","source":"guessed"}"#, #"{"amount":1.5,"currency":"EUR","source":"typed"}"#] {
            let json = #"{"v":3,"state":{"enRoute":{"_0":{"id":"J","pickup":{"lat":1,"lon":2},"passengers":1,"shared":false,"addedPickups":[],"fare":"# + fare + "}}}}"
            #expect(throws: DecodingError.self, "\(fare)") { try JSONDecoder().decode(UnitSnapshot.self, from: Data(json.utf8)) }
        }
    }

    /// A later release's snapshot, or one that is not a snapshot, fails to decode: the unit sets it
    /// aside and starts off duty instead of guessing.
    @Test func aSnapshotThisReleaseCannotReadIsRefused() throws {
        let decode = { (json: String) in try JSONDecoder().decode(UnitSnapshot.self, from: Data(json.utf8)) }
        #expect(try decode(#"{"v":1,"state":{"available":{}}}"#) == UnitSnapshot(state: .available))
        for refused in [
            #"{"v":4,"state":{"available":{}}}"#, #"{"v":0,"state":{"available":{}}}"#, #"{"v":"1","state":{"available":{}}}"#,
            #"{"state":{"enRoute":{}}}"#, #"{"state":{}}"#, #"{"state":{"offDuty":{},"available":{}}}"#, #"{"state":{"flying":{}}}"#,
            #"{"state":{"offDuty":null}}"#, #"{"state":{"paused":{"_0":"nap"}}}"#,
            #"{"state":{"available":{}},"answeredOffers":[{"job":"J","reply":{"job":"J","re":"job/offer","reply":"maybe","t":1}}]}"#,
            #"{"state":{"onBoard":{"_0":{"id":"J","pickup":{"lat":1},"passengers":1,"shared":false,"addedPickups":[]},"since":{"time":1}}}}"#,
        ] {
            #expect(throws: DecodingError.self, "\(refused)") { try decode(refused) }
        }
    }
}
