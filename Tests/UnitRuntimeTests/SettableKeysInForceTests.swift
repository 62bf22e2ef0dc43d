import ControlSocket
import DriverKeys
import Foundation
import GPSReader
import LocalCache
import TaxiProtocol
import TestHarness
import Testing
import UnitConfig
import UnitCore
@testable import UnitRuntime

/// Every key a fleet document may set (docs/protocol.md, "Remotely settable"), one engine each: the
/// behaviour the key governs is shown under the unit's own file, a signed document changing that key
/// alone is acknowledged `applied`, and the same engine, not restarted, behaves as the new value says.
/// The keys come from the one catalogue, so a key added there fails here until it has its probe.
@Suite(.serialized) struct SettableKeysInForceTests {
    /// `section.key` for every remotely settable key.
    static let catalogue: [String] = ((try? ShippedConfiguration.remotelySettable()) ?? [:])
        .flatMap { section, keys in keys.map { "\(section).\($0)" } }.sorted()

    @Test func everySettableKeyHasItsProbe() {
        #expect(Self.catalogue.count > 30, "the catalogue was read")
        #expect(Set(Self.probes.keys) == Set(Self.catalogue))
    }

    @Test(arguments: catalogue) func aFleetDocumentChangesWhatTheKeyGovernsWithoutARestart(key: String) async throws {
        let probe = try #require(Self.probes[key], "no probe for \(key)")
        let rig = try await SettingRig(probe)
        try await probe.before(rig)
        try await rig.apply(probe.settings)
        try await probe.after(rig)
        await rig.unit.stop()
    }

    /// What one key governs, seen through the engine's inputs and outputs.
    struct Probe: Sendable {
        /// The unit's own file (TOML below `[unit] id`, `fleet`; bare keys are `[unit]`'s), beside
        /// the `[fleet]` section that trusts the test's fleet key.
        var local = ""
        /// `[fleet] rollback_after_s` of the unit's own file.
        var rollbackAfterS: Double = 120
        /// A badge reader (`[input.badge]`) on a FIFO the test types into.
        var badgeReader = false
        /// An ignition input (`[input.ignition]`, a switch) on a FIFO the test switches.
        var ignitionInput = false
        /// The store before the engine opens it.
        var prepare: @Sendable (LocalCache) throws -> Void = { _ in }
        /// The document's `settings`: this key alone, changed.
        var settings: String
        /// The behaviour under the unit's own file...
        var before: @Sendable (SettingRig) async throws -> Void
        /// ...and under the document, in the same engine.
        var after: @Sendable (SettingRig) async throws -> Void
    }

    // MARK: The probes

    static let pickup = (latitude: 46.948, longitude: 7.4474)
    /// A square of about 11 km around 46.05, 7.05.
    static let square = "[[46.0, 7.0], [46.0, 7.1], [46.1, 7.1], [46.1, 7.0]]"
    static let squareJSON = "[[46.0,7.0],[46.0,7.1],[46.1,7.1],[46.1,7.0]]"
    /// Each fix handled and stored as it comes, so the status counts it at once.
    static let immediate = "[store]\nposition_commit_ms = 0\n"
    static let rarely = "[reporting]\ninterval_s = 3600\n"

    static let probes: [String: Probe] = [
        // [mqtt]: how the unit reaches its broker, read by the link at each connection.
        "mqtt.host": connectionProbe(#"{"mqtt":{"host":"127.0.0.2"}}"#) { $0.host == "127.0.0.2" },
        "mqtt.hosts": connectionProbe(#"{"mqtt":{"hosts":["127.0.0.2:1884","127.0.0.3:1885"]}}"#) {
            $0.nodes.map(\.description) == ["127.0.0.2:1884", "127.0.0.3:1885"]
        },
        "mqtt.port": connectionProbe(#"{"mqtt":{"port":1884}}"#) { $0.port == 1884 },
        "mqtt.keepalive_s": connectionProbe(#"{"mqtt":{"keepalive_s":17}}"#) { $0.keepaliveS == 17 },
        "mqtt.protocol": connectionProbe(#"{"mqtt":{"protocol":"3.1.1"}}"#) { $0.protocolVersion == "3.1.1" },
        "mqtt.session_expiry_s": connectionProbe(#"{"mqtt":{"session_expiry_s":3600}}"#) { $0.sessionExpiryS == 3600 },
        "mqtt.max_publish_rate": connectionProbe(#"{"mqtt":{"max_publish_rate":50}}"#) { $0.maxPublishRate == 50 },
        "mqtt.reconnect_min_s": connectionProbe(#"{"mqtt":{"reconnect_min_s":2}}"#) { $0.reconnectMinS == 2 },
        "mqtt.reconnect_max_s": connectionProbe(#"{"mqtt":{"reconnect_max_s":30}}"#) { $0.reconnectMaxS == 30 },
        "mqtt.topic_prefix": Probe(
            settings: #"{"mqtt":{"topic_prefix":"cabs"}}"#,
            before: { rig async throws in
                try await rig.eventually("the status under taxi/") { rig.unit.broker.published.contains { $0.topic == "taxi/f/T1/status" } }
            },
            after: { rig async throws in
                try await rig.eventually("the status under cabs/") { rig.unit.broker.published.contains { $0.topic == "cabs/f/T1/status" } }
            }),
        "mqtt.max_inflight": Probe(
            local: immediate + "[mqtt]\nmax_inflight = 1\n[reporting]\nevery_fix = true\n",
            settings: #"{"mqtt":{"max_inflight":5}}"#,
            before: { rig async throws in
                try await rig.fix(46.5, 7.5)
                try await rig.fix(46.5, 7.5)
                try await rig.eventually("one position in flight") { rig.positionsPublished == 1 }
                #expect(try await rig.unit.status().outbox.position == 2, "the other waits")
                try await rig.acknowledgeEverything(until: 2)
            },
            after: { rig async throws in
                for _ in 0..<3 { try await rig.fix(46.5, 7.5) }
                try await rig.eventually("three positions in flight at once") { rig.positionsPublished == 5 }
            }),
        "mqtt.batch_max": Probe(
            local: immediate + "[mqtt]\nbatch_max = 2\nmax_inflight = 100\n[reporting]\nevery_fix = true\n",
            settings: #"{"mqtt":{"batch_max":10}}"#,
            before: { rig async throws in
                #expect(try await rig.largestBackfillAfterAnOutage() == 2)
            },
            after: { rig async throws in
                #expect(try await rig.largestBackfillAfterAnOutage() == 4)
            }),
        "mqtt.inbound_per_s": Probe(
            local: "[mqtt]\ninbound_per_s = 100\n",
            settings: #"{"mqtt":{"inbound_per_s":1}}"#,
            before: { rig async throws in
                try await rig.press("duty")
                rig.flood()
                // An offer after the flood is answered: everything before it was handled.
                try await rig.offer("J1")
                #expect(try await rig.unit.status().refused?["inbound_over_rate"] == 0)
                try await rig.press("reject")
            },
            after: { rig async throws in
                rig.flood()
                // Five seconds' worth at one a second pass; the rest are dropped unread.
                try await rig.eventually("the flood dropped") { try await rig.unit.status().refused?["inbound_over_rate"] ?? 0 >= 20 }
            }),

        // [gps]
        "gps.max_eph_m": Probe(
            local: immediate + "[gps]\nmax_eph_m = 50\n",
            settings: #"{"gps":{"max_eph_m":10}}"#,
            before: { rig async throws in
                let stored = try await rig.unit.status().storedPositions
                try await rig.fix(46.5, 7.5, error: 20)
                #expect(try await rig.unit.status().storedPositions == stored + 1)
            },
            after: { rig async throws in
                let stored = try await rig.unit.status().storedPositions
                rig.send(46.5, 7.5, error: 20)
                try await rig.fix(46.5, 7.5, error: 3)
                #expect(try await rig.unit.status().storedPositions == stored + 1, "only the accurate fix")
            }),
        "gps.zone_hysteresis_m": Probe(
            local: immediate + "[gps]\nzone_hysteresis_m = 500\n[[zones]]\nid = \"Z\"\npolygon = \(square)\n",
            settings: #"{"gps":{"zone_hysteresis_m":50}}"#,
            before: { rig async throws in
                try await rig.fix(46.05, 7.05)
                #expect(try await rig.unit.status().zone == "Z")
                // About 200 m north of the square.
                try await rig.fix(46.1018, 7.05)
                #expect(try await rig.unit.status().zone == "Z", "within the hysteresis")
            },
            after: { rig async throws in
                try await rig.fix(46.1018, 7.05)
                #expect(try await rig.unit.status().zone == nil)
            }),
        "gps.trust_system_clock": Probe(
            local: "[gps]\ntrust_system_clock = false\n",
            settings: #"{"gps":{"trust_system_clock":true}}"#,
            before: { rig async throws in
                try await rig.fix(46.5, 7.5)
                #expect(try await rig.unit.status().clock == "gps")
            },
            after: { rig async throws in
                try await rig.eventually("the unit clock is the system's") { try await rig.unit.status().clock == "system" }
            }),

        // [reporting]: which fixes become positions, decided as each fix comes.
        "reporting.interval_s": Probe(
            local: immediate + rarely,
            settings: #"{"reporting":{"interval_s":10}}"#,
            before: { rig async throws in
                try await rig.fix(46.5, 7.5)
                #expect(try await rig.reports { try await rig.fix(46.5, 7.5, after: 20) } == 0)
            },
            after: { rig async throws in
                #expect(try await rig.reports { try await rig.fix(46.5, 7.5, after: 20) } == 1)
            }),
        "reporting.distance_m": Probe(
            local: immediate + rarely + "distance_m = 1000\n",
            settings: #"{"reporting":{"distance_m":100}}"#,
            before: { rig async throws in
                try await rig.fix(46.5, 7.5)
                // About 220 m further each time.
                #expect(try await rig.reports { try await rig.fix(46.502, 7.5) } == 0)
            },
            after: { rig async throws in
                #expect(try await rig.reports { try await rig.fix(46.504, 7.5) } == 1)
            }),
        "reporting.heading_deg": Probe(
            local: immediate + rarely + "heading_deg = 90\nmin_speed_mps = 1\n",
            settings: #"{"reporting":{"heading_deg":30}}"#,
            before: { rig async throws in
                try await rig.fix(46.5, 7.5, track: 0)
                #expect(try await rig.reports { try await rig.fix(46.5, 7.5, track: 45) } == 0)
            },
            after: { rig async throws in
                #expect(try await rig.reports { try await rig.fix(46.5, 7.5, track: 60) } == 1)
            }),
        "reporting.min_speed_mps": Probe(
            local: immediate + rarely + "heading_deg = 30\nmin_speed_mps = 10\n",
            settings: #"{"reporting":{"min_speed_mps":1}}"#,
            before: { rig async throws in
                try await rig.fix(46.5, 7.5, track: 0)
                #expect(try await rig.reports { try await rig.fix(46.5, 7.5, track: 45) } == 0, "5 m/s is too slow")
            },
            after: { rig async throws in
                #expect(try await rig.reports { try await rig.fix(46.5, 7.5, track: 90) } == 1)
            }),
        "reporting.every_fix": Probe(
            local: immediate + rarely + "every_fix = false\n",
            settings: #"{"reporting":{"every_fix":true}}"#,
            before: { rig async throws in
                try await rig.fix(46.5, 7.5)
                #expect(try await rig.reports { try await rig.fix(46.5, 7.5) } == 0)
            },
            after: { rig async throws in
                #expect(try await rig.reports { try await rig.fix(46.5, 7.5) } == 1)
            }),

        // [privacy]
        "privacy.off_duty_positions": Probe(
            local: immediate + "[privacy]\noff_duty_positions = true\n",
            settings: #"{"privacy":{"off_duty_positions":false}}"#,
            before: { rig async throws in
                let stored = try await rig.unit.status().storedPositions
                try await rig.fix(46.5, 7.5)
                #expect(try await rig.unit.status().storedPositions == stored + 1)
            },
            after: { rig async throws in
                let before = try await rig.unit.status()
                rig.send(46.5, 7.5)
                // The status is handled after the fix: the engine's inputs are handled in order.
                let after = try await rig.unit.status()
                #expect(after.storedPositions == before.storedPositions, "off duty, nothing is stored")
                #expect(after.outbox.position == before.outbox.position, "nor reported")
            }),

        // [[zones]]: a document's list replaces the file's whole; each probe changes one key of its zone.
        "zones.id": Probe(
            local: immediate + "[[zones]]\nid = \"A\"\npolygon = \(square)\n",
            settings: #"{"zones":[{"id":"B","polygon":\#(squareJSON)}]}"#,
            before: { rig async throws in
                try await rig.fix(46.05, 7.05)
                #expect(try await rig.unit.status().zone == "A")
            },
            after: { rig async throws in
                try await rig.fix(46.05, 7.05)
                #expect(try await rig.unit.status().zone == "B")
            }),
        "zones.polygon": Probe(
            local: immediate + "[[zones]]\nid = \"A\"\npolygon = \(square)\n",
            settings: #"{"zones":[{"id":"A","polygon":[[47.0,7.0],[47.0,7.1],[47.1,7.1],[47.1,7.0]]}]}"#,
            before: { rig async throws in
                try await rig.fix(46.05, 7.05)
                #expect(try await rig.unit.status().zone == "A")
            },
            after: { rig async throws in
                try await rig.fix(46.05, 7.05)
                #expect(try await rig.unit.status().zone == nil)
                try await rig.fix(47.05, 7.05)
                #expect(try await rig.unit.status().zone == "A")
            }),

        // [job]: an offer, an arrival or a no-show after the document follows it.
        "job.offer_timeout_s": Probe(
            local: "[job]\noffer_timeout_s = 600\n",
            settings: #"{"job":{"offer_timeout_s":30}}"#,
            before: { rig async throws in
                try await rig.press("duty")
                try await rig.offer("J1")
                #expect(try await rig.unit.status().job?.offerSecondsLeft ?? 0 > 500)
                try await rig.press("reject")
            },
            after: { rig async throws in
                try await rig.offer("J2")
                #expect(try await rig.unit.status().job?.offerSecondsLeft ?? 0 <= 30)
            }),
        "job.arrival_radius_m": Probe(
            local: immediate + "[job]\narrival_radius_m = 20\n",
            settings: #"{"job":{"arrival_radius_m":100}}"#,
            before: { rig async throws in
                try await rig.onTheWay()
                // About 50 m north of the pickup.
                try await rig.fix(pickup.latitude + 0.00045, pickup.longitude)
                #expect(try await rig.unit.status().state == "en_route")
            },
            after: { rig async throws in
                try await rig.fix(pickup.latitude + 0.00045, pickup.longitude)
                #expect(try await rig.unit.status().state == "at_pickup")
            }),
        "job.no_show_wait_s": Probe(
            local: immediate + "[job]\nno_show_wait_s = 600\n",
            settings: #"{"job":{"no_show_wait_s":0}}"#,
            before: { rig async throws in
                try await rig.onTheWay()
                try await rig.fix(pickup.latitude, pickup.longitude)
                #expect(try await rig.press("noshow").hasPrefix("Wait "))
            },
            after: { rig async throws in
                #expect(try await rig.press("noshow").hasPrefix("No-show recorded"))
            }),
        "job.no_show_radius_m": Probe(
            local: immediate + "[job]\nno_show_wait_s = 0\nno_show_radius_m = 100\n",
            settings: #"{"job":{"no_show_radius_m":1000}}"#,
            before: { rig async throws in
                try await rig.onTheWay()
                // About 500 m north of the pickup, before the arrival: the wait runs on the clock the fix set.
                try await rig.fix(pickup.latitude + 0.0045, pickup.longitude)
                try await rig.press("arrived")
                let told = try await rig.press("noshow")
                #expect(told == DriverRefusal.tooFarForNoShow.description, "\(told)")
            },
            after: { rig async throws in
                #expect(try await rig.press("noshow").hasPrefix("No-show recorded"))
            }),
        "job.soon_clear_min": Probe(
            local: "[job]\nsoon_clear_min = 5\n",
            settings: #"{"job":{"soon_clear_min":9}}"#,
            before: { rig async throws in
                try await rig.onTheWay()
                for input in ["arrived", "pob"] { try await rig.press(input) }
                #expect(try await rig.press("soon") == "Clear in 5 min: sent")
            },
            after: { rig async throws in
                #expect(try await rig.press("soon") == "Clear in 9 min: sent")
                #expect(rig.unit.published(on: "event").last?.json["clear_in_min"] as? Int == 9)
            }),
        "job.payments": Probe(
            local: "[job]\npayments = [\"cash\"]\n",
            settings: #"{"job":{"payments":["cash","voucher"]}}"#,
            before: { rig async throws in
                try await rig.onBoard()
                #expect(try await rig.press("clear voucher") == DriverRefusal.unknownPayment.description)
            },
            after: { rig async throws in
                #expect(try await rig.press("clear voucher") == "Ride complete, available")
                #expect(try await rig.lastRide().payment == "voucher")
            }),
        "job.payment_required": Probe(
            // A required payment is picked on the serial terminal: its section is there, its device never opened here.
            local: "[input.serial]\ndevice = \"/dev/taxiunit-test-absent\"\n[job]\npayment_required = true\n",
            settings: #"{"job":{"payment_required":false}}"#,
            before: { rig async throws in
                try await rig.onBoard()
                #expect(try await rig.press("clear") == DriverRefusal.paymentRequired.description)
            },
            after: { rig async throws in
                #expect(try await rig.press("clear") == "Ride complete, available")
                let ride = try await rig.lastRide()
                #expect(ride.job == "J1" && ride.payment == nil)
            }),
        "job.currency": Probe(
            local: "[job]\ncurrency = \"EUR\"\n",
            settings: #"{"job":{"currency":"CHF"}}"#,
            before: { rig async throws in
                try await rig.onBoard()
                try await rig.press("clear cash 1890")
                #expect(try await rig.lastRide().currency == "EUR")
            },
            after: { rig async throws in
                try await rig.onBoard(job: "J2", onDuty: true)
                try await rig.press("clear cash 1890")
                let ride = try await rig.lastRide()
                #expect(ride.job == "J2" && ride.currency == "CHF" && ride.fare == 1890 && ride.fareSource == "typed")
            }),
        "job.reminder_min": Probe(
            local: "[job]\nreminder_min = 1\n",
            settings: #"{"job":{"reminder_min":10}}"#,
            before: { rig async throws in
                try await rig.press("duty")
                // The reminder falls due 2 s after the acceptance: 1 min before the meeting.
                try await rig.acceptReservation("J1", meetingInS: 62)
                try await rig.eventually("the reminder of J1") { rig.logs.count(containing: "Reminder: job J1") > 0 }
                for input in ["arrived", "pob", "clear"] { try await rig.press(input) }
            },
            after: { rig async throws in
                try await rig.acceptReservation("J2", meetingInS: 602)
                try await rig.eventually("the reminder of J2, 10 min before") { rig.logs.count(containing: "Reminder: job J2") > 0 }
            }),
        "job.reservation_lead_min": Probe(
            local: immediate + "[job]\nreservation_lead_min = 0\n",
            settings: #"{"job":{"reservation_lead_min":1}}"#,
            before: { rig async throws in
                try await rig.press("duty")
                try await rig.acceptReservation("R1", meetingInS: 600)
                #expect(try await rig.unit.status().state == "en_route", "without a lead, a reservation occupies the unit at once")
                for input in ["arrived", "pob", "clear"] { try await rig.press(input) }
            },
            after: { rig async throws in
                // The window opens 1 min before the meeting: 6 s after the acceptance.
                try await rig.acceptReservation("R2", meetingInS: 66)
                let booked = try await rig.unit.status()
                #expect(booked.state == "available" && booked.upcoming?.map(\.id) == ["R2"], "kept aside until its window")
                try await rig.eventually("R2's window opens") {
                    let status = try await rig.unit.status()
                    return status.state == "en_route" && status.job?.id == "R2"
                }
                #expect(try await rig.unit.status().upcoming == nil)
            }),
        "job.max_upcoming": Probe(
            local: immediate + "[job]\nreservation_lead_min = 1\nmax_upcoming = 1\n",
            settings: #"{"job":{"max_upcoming":2}}"#,
            before: { rig async throws in
                try await rig.press("duty")
                try await rig.acceptReservation("R1", meetingInS: 600)
                #expect(try await rig.offerRefused("R2", #","meeting_time":\#(TestClock.milliseconds() + 3_600_000)"#) == "pre-bookings full (1)")
            },
            after: { rig async throws in
                try await rig.acceptReservation("R3", meetingInS: 3_600)
                #expect(try await rig.unit.status().upcoming?.map(\.id) == ["R1", "R3"])
            }),
        "job.expected_job_min": Probe(
            local: immediate + "[job]\nreservation_lead_min = 1\nexpected_job_min = 60\n",
            settings: #"{"job":{"expected_job_min":1}}"#,
            before: { rig async throws in
                try await rig.press("duty")
                try await rig.acceptReservation("R1", meetingInS: 600)
                #expect(try await rig.offerRefused("J2")?.hasPrefix("reservation R1 at ") == true, "60 min would run into R1's window")
            },
            after: { rig async throws in
                try await rig.offer("J3")
                #expect(try await rig.unit.status().state == "offered")
            }),

        // [ignition]: the ignition goes off while the driver is available.
        "ignition.off_while_available": Probe(
            local: "[ignition]\noff_while_available = \"ignore\"\noff_duty_after_min = 0\n", ignitionInput: true,
            settings: #"{"ignition":{"off_while_available":"off_duty"}}"#,
            before: { rig async throws in
                try await rig.press("duty")
                try await rig.ignition(false)
                #expect(try await rig.unit.status().state == "available")
                try await rig.ignition(true)
            },
            after: { rig async throws in
                try await rig.ignition(false)
                try await rig.eventually("off duty with the ignition off") { try await rig.unit.status().state == "off_duty" }
            }),
        "ignition.off_duty_after_min": Probe(
            local: "[ignition]\noff_while_available = \"off_duty\"\noff_duty_after_min = 60\n", ignitionInput: true,
            settings: #"{"ignition":{"off_duty_after_min":0}}"#,
            before: { rig async throws in
                try await rig.press("duty")
                try await rig.ignition(false)
                #expect(try await rig.unit.status().state == "available", "an hour to go")
                try await rig.ignition(true)
            },
            after: { rig async throws in
                try await rig.ignition(false)
                try await rig.eventually("off duty at once") { try await rig.unit.status().state == "off_duty" }
            }),

        // [unit]
        "unit.seats": Probe(
            settings: #"{"unit":{"seats":2}}"#,
            before: { rig async throws in #expect(try await rig.unit.status().seatsLeft == 4) },
            after: { rig async throws in #expect(try await rig.unit.status().seatsLeft == 2) }),
        "unit.language": Probe(
            local: "catalogues = \"\(Corpus.packageRoot)/share/taxiunitd/lang\"\n" + drivers("D1", "D2"),
            settings: #"{"unit":{"language":"st"}}"#,
            before: { rig async throws in
                // A driver without a language of their own starts from the unit's.
                try await rig.press("login D1 \(pin)")
                #expect(try await rig.press("lang next").contains("language it"), "after en")
                try await rig.press("logout")
            },
            after: { rig async throws in
                try await rig.press("login D2 \(pin)")
                #expect(try await rig.press("lang next").contains("language xh"), "after st")
            }),

        // [store]
        "store.max_mb": Probe(
            local: "[store]\nmax_mb = 64\n",
            settings: #"{"store":{"max_mb":1}}"#,
            before: { rig async throws in
                try await rig.eventually("the store's bound measured") { try await rig.unit.status().store?.limitBytes ?? 0 > 1 << 20 }
            },
            after: { rig async throws in
                try await rig.eventually("the store's bound is 1 MB") { try await rig.unit.status().store?.limitBytes ?? .max <= 1 << 20 }
            }),
        "store.retention_days": Probe(
            // Retention runs on the system clock only, and at the first upkeep after the start.
            local: "[store]\nretention_days = 7\n[gps]\ntrust_system_clock = true\n",
            prepare: { store in
                // Two days old: past a day's retention, within a week's.
                let created = TestClock.now() - .seconds(2 * 86_400)
                try store.write { transaction in
                    for index in 0..<5 {
                        try transaction.insertPosition(Fix(time: created + .seconds(index), latitude: 46.5, longitude: 7.5), createdAt: created)
                    }
                }
            },
            settings: #"{"store":{"retention_days":1}}"#,
            before: { rig async throws in
                try await rig.eventually("the first retention pass") { try await rig.unit.status().store != nil }
                #expect(try await rig.unit.status().storedPositions == 5, "two days old, within a week")
            },
            after: { rig async throws in
                // Three upkeep ticks: the store's chores run every two seconds.
                try await rig.eventually("the positions past a day are removed", within: 6) { try await rig.unit.status().storedPositions == 0 }
            }),
        "store.position_commit_ms": Probe(
            local: "[store]\nposition_commit_ms = 60000\n",
            settings: #"{"store":{"position_commit_ms":0}}"#,
            before: { rig async throws in
                try await rig.fix(46.5, 7.5)
                try await rig.fix(46.5, 7.5)
                #expect(try await rig.unit.status().storedPositions <= 1, "the second waits for the minute's commit")
            },
            after: { rig async throws in
                try await rig.fix(46.5, 7.5)
                #expect(try await rig.unit.status().storedPositions == 3)
            }),

        // [fleet]
        "fleet.rollback_after_s": Probe(
            rollbackAfterS: 1,
            settings: #"{"fleet":{"rollback_after_s":3600}}"#,
            before: { rig async throws in
                // A move to another broker that never answers is undone after the file's second.
                try await rig.apply(#"{"mqtt":{"port":1884}}"#, scope: "unit")
                try await rig.acknowledged(scope: "unit", version: 1, "rolled_back")
            },
            after: { rig async throws in
                try await rig.apply(#"{"mqtt":{"port":1885}}"#, scope: "unit")
                // Twice the old window: a trial can only be seen not to end by waiting.
                try await Task.sleep(for: .seconds(2))
                #expect(try await rig.unit.status().config?.onTrial == "unit")
                #expect(!rig.acknowledgedAny(scope: "unit", version: 2, "rolled_back"))
            }),

        // [driver]
        "driver.drivers": Probe(
            local: drivers("D1"),
            settings: #"{"driver":{"drivers":{"D2":"\#(credential)"}}}"#,
            before: { rig async throws in #expect(try await rig.press("login D2 \(pin)") == DriverRefusal.wrongLogin.description) },
            after: { rig async throws in #expect(try await rig.press("login D2 \(pin)") == "Logged in: D2") }),
        "driver.badges": Probe(
            local: drivers("D1"),
            badgeReader: true,
            settings: #"{"driver":{"badges":{"\#(badgeCredential)":"D1"}}}"#,
            before: { rig async throws in
                try await rig.readBadge()
                try await rig.eventually("the badge refused") { rig.logs.count(containing: "badge read: \(DriverRefusal.wrongLogin.description)") == 1 }
            },
            after: { rig async throws in
                try await rig.readBadge()
                try await rig.eventually("the badge's driver logged in") { rig.logs.count(containing: "badge read: Logged in: D1") == 1 }
            }),
        "driver.require_login": Probe(
            local: "[driver]\nrequire_login = false\n",
            settings: #"{"driver":{"require_login":true}}"#,
            before: { rig async throws in
                #expect(try await rig.press("duty").hasPrefix("On duty"))
                try await rig.press("duty")
            },
            after: { rig async throws in #expect(try await rig.press("duty") == DriverRefusal.loginRequired.description) }),
        "driver.free_tries": Probe(
            local: drivers("D1") + "free_tries = 3\nlock_s = 600\n",
            settings: #"{"driver":{"free_tries":1}}"#,
            before: { rig async throws in
                #expect(try await rig.press("login D1 0000") == DriverRefusal.wrongLogin.description)
                #expect(try await rig.press("login D1 \(pin)") == "Logged in: D1")
                try await rig.press("logout")
            },
            after: { rig async throws in
                #expect(try await rig.press("login D1 0000") == DriverRefusal.loginLocked(secondsLeft: 600).description)
            }),
        "driver.lock_s": Probe(
            local: drivers("D1") + "free_tries = 1\nlock_s = 1\n",
            settings: #"{"driver":{"lock_s":600}}"#,
            before: { rig async throws in
                #expect(try await rig.press("login D1 0000") == DriverRefusal.loginLocked(secondsLeft: 1).description)
                try await rig.eventually("the lock of a second is over") { try await rig.press("login D1 \(pin)") == "Logged in: D1" }
                try await rig.press("logout")
            },
            after: { rig async throws in
                #expect(try await rig.press("login D1 0000") == DriverRefusal.loginLocked(secondsLeft: 600).description)
            }),
        "driver.longest_lock_s": Probe(
            local: drivers("D1") + "longest_lock_s = 3600\n",
            prepare: { store in
                // Locked for 50 minutes by wrong logins before the start.
                try store.saveDriverSession(DriverSessionRecord(failures: 9, lockedUntil: TestClock.now() + .seconds(3_000)))
            },
            settings: #"{"driver":{"longest_lock_s":60}}"#,
            before: { rig async throws in
                let told = try await rig.press("login D1 \(pin)")
                #expect(told.hasPrefix("Too many wrong logins; wait ") && told.contains(/wait 299\d s|wait 3000 s/), "\(told)")
            },
            after: { rig async throws in
                #expect(try await rig.press("login D1 \(pin)") == DriverRefusal.loginLocked(secondsLeft: 60).description)
            }),

        // [messages]
        "messages.canned": Probe(
            local: "[messages]\ncanned = [\"Traffic\"]\n",
            settings: #"{"messages":{"canned":["Held up"]}}"#,
            before: { rig async throws in
                try await rig.press("duty")
                #expect(try await rig.sendCanned() == "Traffic")
            },
            after: { rig async throws in #expect(try await rig.sendCanned() == "Held up") }),
        "shift.max_shift_min": Probe(
            local: "[shift]\nmax_shift_min = 1440\n",
            prepare: storeWithAnOpenShift(hoursAgo: 2),
            settings: #"{"shift":{"max_shift_min":30}}"#,
            before: { rig async throws in
                try await rig.fix(46.5, 7.5)
                #expect(rig.shiftEvents("limit").isEmpty)
            },
            after: { rig async throws in
                try await rig.fix(46.5, 7.5)
                try await rig.eventually("the shift limit event") { rig.shiftEvents("limit").last?["limit"] as? String == "shift_length" }
            }),
        "shift.max_continuous_driving_min": Probe(
            local: "[shift]\nmax_continuous_driving_min = 1440\n",
            prepare: storeWithAnOpenShift(hoursAgo: 2, drivingHours: 2),
            settings: #"{"shift":{"max_continuous_driving_min":60}}"#,
            before: { rig async throws in
                try await rig.fix(46.5, 7.5)
                #expect(rig.shiftEvents("limit").isEmpty)
            },
            after: { rig async throws in
                try await rig.fix(46.5, 7.5)
                try await rig.eventually("the driving limit event") { rig.shiftEvents("limit").last?["limit"] as? String == "continuous_driving" }
            }),
        "shift.break_min": Probe(
            local: "[shift]\nbreak_min = 1440\n",
            prepare: storeWithAnOpenShift(hoursAgo: 2, drivingHours: 2),
            settings: #"{"shift":{"break_min":0}}"#,
            before: { rig async throws in
                for input in ["duty", "pause break", "resume"] { try await rig.press(input) }
                #expect(try await rig.unit.status().shift?.continuousDrivingS ?? 0 >= 2 * 3600, "a short break resets nothing")
            },
            after: { rig async throws in
                for input in ["pause break", "resume"] { try await rig.press(input) }
                #expect(try await rig.unit.status().shift?.continuousDrivingS == 0, "any break resets continuous driving")
                #expect(rig.shiftEvents("break").isEmpty, "and with 0 none is reported")
            }),
        "shift.warn_before_min": Probe(
            local: "[shift]\nmax_shift_min = 1440\nwarn_before_min = 0\n",
            prepare: storeWithAnOpenShift(hoursAgo: 2),
            settings: #"{"shift":{"warn_before_min":1440}}"#,
            before: { rig async throws in
                try await rig.fix(46.5, 7.5)
                #expect(rig.logs.count(containing: "Shift limit in") == 0)
            },
            after: { rig async throws in
                try await rig.fix(46.5, 7.5)
                try await rig.eventually("the warning") { rig.logs.count(containing: "Shift limit in") == 1 }
            }),
    ]

    /// A key the broker link reads when it connects: the document makes the engine connect again
    /// with the new value (the link itself is held by the real-parts tests).
    static func connectionProbe(_ settings: String, _ holds: @escaping @Sendable (UnitConfiguration.MQTT) -> Bool) -> Probe {
        Probe(
            settings: settings,
            before: { rig async throws in
                let first = try #require(rig.unit.broker.connections.last)
                #expect(!holds(first.mqtt))
            },
            after: { rig async throws in
                try await rig.eventually("a connection with the new value") { rig.unit.broker.connections.last.map { holds($0.mqtt) } ?? false }
            })
    }

    static let pin = "4711"
    /// `pin`, hashed by the fleet's tool.
    static let credential = hashed(pin)
    static let badge = "0004279"
    static let badgeCredential = hashed(badge, "--badge")

    static func hashed(_ secret: String, _ options: String = "") -> String {
        let tool = Corpus.binary("taxiunitctl")
        let (output, _) = (try? runCommand("/bin/sh", ["-c", "echo \(secret) | '\(tool)' hash-pin \(options) --rounds 1000"])) ?? ("", 1)
        return output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// `[driver]` with `ids`, each with `pin`.
    static func drivers(_ ids: String...) -> String {
        "[driver]\ndrivers = { \(ids.map { "\($0) = \"\(credential)\"" }.joined(separator: ", ")) }\n"
    }
}

/// One engine whose file trusts a fleet key, and fixes dated on a GPS clock the test moves.
final class SettingRig {
    let unit: EngineUnderTest
    let logs = LogRecorder()
    private let scratch: ScratchDirectory
    private let signer: FleetSigner
    private let badgeReader: EvdevFIFO?
    private let ignitionSwitch: EvdevFIFO?
    private var versions: [String: Int] = [:]
    /// The GPS time of the next fix, whole seconds: an hour back, so the fixes never run ahead of the clock.
    private var fixTimeS = TestClock.seconds() - 3600

    init(_ probe: SettableKeysInForceTests.Probe) async throws {
        scratch = try ScratchDirectory("keys")
        signer = try FleetSigner(in: scratch)
        let reader = probe.badgeReader ? try EvdevFIFO(path: scratch.file("badge")) : nil
        badgeReader = reader
        let ignition = probe.ignitionInput ? try EvdevFIFO(path: scratch.file("ignition")) : nil
        ignitionSwitch = ignition
        let device = reader.map { "[input.badge]\ndevice = \"\($0.path)\"\n" } ?? ""
        let ignitionDevice = ignition.map { "[input.ignition]\ndevice = \"\($0.path)\"\ncode = \"SW_DOCK\"\n" } ?? ""
        unit = try EngineUnderTest(
            probe.local + device + ignitionDevice + signer.fleetSection(rollbackAfterS: probe.rollbackAfterS), logs: logs,
            devices: reader != nil || ignition != nil, prepare: probe.prepare)
        try await unit.start()
        unit.broker.acceptConnection()
        try await reader?.connect()
        try await ignition?.connect()
    }

    /// Polls `condition`, accepting every connection the engine asks for on the way.
    func eventually(_ what: String, within seconds: Double = 20, _ condition: () async throws -> Bool) async throws {
        try await unit.eventually(what, within: seconds) {
            if unit.broker.connectionPending { unit.broker.acceptConnection() }
            return try await condition()
        }
    }

    // MARK: The fleet

    /// Sends `settings` signed, as the next version of `scope`, and waits for the `applied` ack.
    func apply(_ settings: String, scope: String = "fleet") async throws {
        let version = versions[scope, default: 0] + 1
        versions[scope] = version
        let topic = scope == "fleet" ? "taxi/f/config" : unit.topicBase + "config"
        unit.broker.receive(topic, try signer.sign(#"{"settings":\#(settings),"version":\#(version)}"#, topic: topic))
        try await acknowledged(scope: scope, version: version, "applied")
    }

    func acknowledged(scope: String, version: Int, _ result: String) async throws {
        try await eventually("\(scope) v\(version) \(result)") { acknowledgedAny(scope: scope, version: version, result) }
    }

    /// On any topic prefix: the document may have changed it.
    func acknowledgedAny(scope: String, version: Int, _ result: String) -> Bool {
        unit.broker.published.contains { publish in
            let ack = publish.json
            return publish.topic.hasSuffix("/T1/config/ack") && ack["scope"] as? String == scope && ack["version"] as? Int == version
                && ack["result"] as? String == result
        }
    }

    // MARK: Fixes

    /// A fix `after` seconds of GPS time after the last, not waited for.
    func send(_ latitude: Double, _ longitude: Double, track: Double = 90, error: Double = 3, after: Int64 = 10) {
        fixTimeS += after
        unit.fixes.send(GPSSample(
            mode: 3, time: Double(fixTimeS), latitude: latitude, longitude: longitude, speed: 5, track: track, horizontalError: error))
    }

    /// A valid fix, handled: the status names it.
    func fix(_ latitude: Double, _ longitude: Double, track: Double = 90, error: Double = 3, after: Int64 = 10) async throws {
        send(latitude, longitude, track: track, error: error, after: after)
        let time = fixTimeS * 1000
        try await eventually("the fix at \(time)") { try await unit.status().gps.lastFixTime == time }
    }

    /// How many positions `fixes` made waiting for the broker.
    func reports(_ fixes: () async throws -> Void) async throws -> Int {
        let before = try await unit.status().outbox.position
        try await fixes()
        return try await unit.status().outbox.position - before
    }

    var positionsPublished: Int { unit.published(on: "pos").count }

    /// The broker acknowledges what it was handed until `count` positions were published.
    func acknowledgeEverything(until count: Int) async throws {
        var acknowledged = 0
        try await eventually("\(count) positions acknowledged") {
            for publish in unit.broker.published.dropFirst(acknowledged) { unit.broker.acknowledge(publish) }
            acknowledged = unit.broker.published.count
            let inFlight = try await unit.status().outbox.inFlight
            return positionsPublished >= count && inFlight == 0
        }
    }

    /// Five fixes during an outage, then the broker back: the most points one backfill message held.
    func largestBackfillAfterAnOutage() async throws -> Int {
        try await acknowledgeEverything(until: positionsPublished)
        unit.broker.loseConnection()
        for _ in 0..<5 { try await fix(46.5, 7.5) }
        let before = unit.broker.published.count
        unit.broker.acceptConnection()
        func backfill() -> [RecordingBroker.Publish] {
            unit.broker.published.dropFirst(before).filter { $0.topic == unit.topicBase + "pos" && $0.json["backfill"] as? Bool == true }
        }
        // The newest of the five goes live, the other four in backfill.
        try await eventually("the history") { backfill().reduce(0) { $0 + (($1.json["points"] as? [Any])?.count ?? 0) } >= 4 }
        return backfill().map { ($0.json["points"] as? [Any])?.count ?? 0 }.max() ?? 0
    }

    /// The `shift` events published with `what`.
    func shiftEvents(_ what: String) -> [[String: Any]] {
        unit.published(on: "event").map(\.json).filter { $0["type"] as? String == "shift" && $0["what"] as? String == what }
    }

    // MARK: The dispatcher and the driver

    @discardableResult
    func press(_ input: String) async throws -> String {
        try await unit.press(input).message ?? ""
    }

    func offer(_ job: String, _ extra: String = "") async throws {
        let pickup = SettableKeysInForceTests.pickup
        unit.broker.receive(
            unit.topicBase + "job/offer",
            #"{"job":"\#(job)","pickup":{"lat":\#(pickup.latitude),"lon":\#(pickup.longitude),"address":"Bahnhofplatz 1"}\#(extra)}"#)
        try await eventually("offered \(job)") { try await unit.status().job?.id == job }
    }

    /// On duty, on the way to the pickup of an accepted offer.
    func onTheWay() async throws {
        try await press("duty")
        try await offer("J1")
        try await press("accept")
        #expect(try await unit.status().state == "en_route")
    }

    /// Passengers of an accepted offer on board.
    func onBoard(job: String = "J1", onDuty: Bool = false) async throws {
        if !onDuty { try await press("duty") }
        try await offer(job)
        for input in ["accept", "arrived", "pob"] { try await press(input) }
        #expect(try await unit.status().state == "on_board")
    }

    /// The newest ride of the history, as `taxiunitctl jobs` reads it from the store.
    func lastRide() async throws -> ControlRide {
        try #require(try await unit.control(ControlRequest(cmd: .jobs, limit: 1)).rides?.first)
    }

    func acceptReservation(_ job: String, meetingInS: Int64) async throws {
        try await offer(job, #","meeting_time":\#(TestClock.milliseconds() + meetingInS * 1000)"#)
        #expect(try await press("accept").contains("accepted"))
    }

    /// Offers `job` and returns the reason of the `busy` it is answered with.
    func offerRefused(_ job: String, _ extra: String = "") async throws -> String? {
        let pickup = SettableKeysInForceTests.pickup
        unit.broker.receive(
            unit.topicBase + "job/offer",
            #"{"job":"\#(job)","pickup":{"lat":\#(pickup.latitude),"lon":\#(pickup.longitude)}\#(extra)}"#)
        func answer() -> [String: Any]? { unit.published(on: "job/reply").map(\.json).last { $0["job"] as? String == job } }
        try await eventually("\(job) answered") { answer() != nil }
        #expect(answer()?["reply"] as? String == "busy")
        return answer()?["reason"] as? String
    }

    /// Thirty messages at once, for a job the unit does not have.
    func flood() {
        for _ in 0..<30 { unit.broker.receive(unit.topicBase + "job/cancel", #"{"job":"J-none"}"#) }
    }

    /// The driver's first canned message, chosen and sent: its text as the dispatcher gets it.
    func sendCanned() async throws -> String {
        let sent = unit.published(on: "msg/reply").count
        try await press("reply 1")
        try await press("send")
        try await eventually("the canned message sent") { unit.published(on: "msg/reply").count == sent + 1 }
        return unit.published(on: "msg/reply").last?.json["text"] as? String ?? ""
    }

    /// Switches the ignition and waits until the unit has told the dispatcher.
    func ignition(_ on: Bool) async throws {
        let told = unit.published(on: "event").count { $0.json["type"] as? String == "ignition" }
        try #require(ignitionSwitch).send(
            InputEventDecoder.encode(InputEventRecord(type: IgnitionSignal.switchType, code: 5, value: on ? 1 : 0))
                + InputEventDecoder.encode(InputEventRecord(type: 0, code: 0, value: 0)))
        try await eventually("the ignition \(on ? "on" : "off") told") {
            unit.published(on: "event").count { $0.json["type"] as? String == "ignition" } == told + 1
        }
    }

    func readBadge() async throws {
        try #require(badgeReader).send(EvdevFIFO.badgeTyped(SettableKeysInForceTests.badge))
    }
}
