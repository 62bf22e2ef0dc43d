import FleetControl
import TaxiProtocol
import Testing
import UnitConfig
import UnitCore

@Suite struct FleetConfigMachineTests {
    let fleet = FleetFixture()

    @Test func aValidDocumentIsStoredSwappedAndAcked() throws {
        var machine = try fleet.machine()
        let event = try fleet.config(3, #"{"reporting":{"interval_s":10}}"#)
        let actions = machine.handle(event)
        guard case .received(_, _, let payload, _, _) = event else { return }
        let record = ConfigScopeRecord(seenVersion: 3, applied: AppliedConfigDocument(version: 3, payload: payload, topic: fleet.fleetTopic))
        #expect(actions == [
            .commit(.fleet, record, ack: ConfigAck(scope: .fleet, version: 3, result: .applied)),
            .use(machine.configuration, reconnect: false),
        ])
        #expect(machine.configuration.reporting.rule(for: "en_route").intervalS == 10)
        #expect(machine.versions == [.fleet: 3])
    }

    @Test func anInvalidDocumentListsEveryProblemAndChangesNothing() throws {
        var machine = try fleet.machine()
        _ = machine.handle(try fleet.config(1, #"{"reporting":{"interval_s":10}}"#))
        let before = machine.configuration
        let actions = machine.handle(try fleet.config(2, #"{"reporting":{"interval_s":"fast","colour":1},"gpsd":{"port":1},"unit":{"id":"X"},"mqtt":{"port":70000}}"#))
        #expect(actions.count == 1)
        let ack = try #require(actions.acks.first)
        #expect(ack.result == .rejected && ack.version == 2 && ack.reason == "invalid")
        #expect(ack.errors == [
            "[gpsd] is not remotely settable",
            "unit.id is not remotely settable",
            "mqtt.port must be between 1 and 65535, found 70000",
            "reporting.interval_s must be a number, found string",
            "unknown key reporting.colour",
        ])
        #expect(machine.configuration == before)
        #expect(machine.versions == [.fleet: 1])
    }

    @Test func localOnlyKeysOfAPartlySettableSectionAreRefused() throws {
        var machine = try fleet.machine()
        let ack = try #require(machine.handle(try fleet.config(1, #"{"fleet":{"require_signed":false,"rollback_after_s":5}}"#)).acks.first)
        #expect(ack.errors == ["fleet.require_signed is not remotely settable"])
    }

    @Test func theSameVersionIsIgnoredAndAnOlderOneRejectedAsStale() throws {
        var machine = try fleet.machine()
        _ = machine.handle(try fleet.config(5, #"{"reporting":{"interval_s":10}}"#))
        #expect(machine.handle(try fleet.config(5, #"{"reporting":{"interval_s":10}}"#)) == [.ignore(.fleet, because: "version 5 is the one held")])
        let stale = machine.handle(try fleet.config(4, #"{"reporting":{"interval_s":1}}"#))
        #expect(stale.acks == [ConfigAck(scope: .fleet, version: 4, result: .rejected, reason: "stale",
                                         errors: ["version 4 is older than version 5 held for the fleet scope"])])
        #expect(machine.configuration.reporting.rule(for: "en_route").intervalS == 10)
        #expect(machine.handle(try fleet.config(4, #"{"reporting":{"interval_s":1}}"#, retained: true))
            == [.ignore(.fleet, because: "retained version 4 is older than version 5 held")], "the broker's old copy is not news")
    }

    @Test func scopesKeepTheirOwnVersions() throws {
        var machine = try fleet.machine()
        _ = machine.handle(try fleet.config(9, #"{"reporting":{"interval_s":10}}"#))
        let actions = machine.handle(try fleet.config(1, #"{"mqtt":{"max_inflight":3}}"#, scope: .unit))
        #expect(actions.acks.map(\.result) == [.applied])
        #expect(machine.versions == [.fleet: 9, .unit: 1])
    }

    @Test func theUnitScopeOverridesTheFleetScopeWhicheverArrivesFirst() throws {
        var unitFirst = try fleet.machine()
        _ = unitFirst.handle(try fleet.config(1, #"{"reporting":{"interval_s":2}}"#, scope: .unit))
        _ = unitFirst.handle(try fleet.config(1, #"{"reporting":{"interval_s":10},"mqtt":{"max_inflight":4}}"#))
        var fleetFirst = try fleet.machine()
        _ = fleetFirst.handle(try fleet.config(1, #"{"reporting":{"interval_s":10},"mqtt":{"max_inflight":4}}"#))
        _ = fleetFirst.handle(try fleet.config(1, #"{"reporting":{"interval_s":2}}"#, scope: .unit))
        for machine in [unitFirst, fleetFirst] {
            #expect(machine.configuration.reporting.rule(for: "en_route").intervalS == 2)
            #expect(machine.configuration.mqtt.maxInflight == 4)
            #expect(machine.configuration.mqtt.host == "broker-a", "the local file stays underneath")
        }
        #expect(unitFirst.remoteSettings == fleetFirst.remoteSettings)
    }

    @Test func aFleetDocumentIsValidatedTogetherWithTheUnitDocumentAboveIt() throws {
        var machine = try fleet.machine()
        _ = machine.handle(try fleet.config(1, #"{"mqtt":{"reconnect_max_s":10}}"#, scope: .unit))
        let ack = try #require(machine.handle(try fleet.config(1, #"{"mqtt":{"reconnect_min_s":20}}"#)).acks.first)
        #expect(ack.result == .rejected)
        #expect(ack.errors == ["mqtt.reconnect_min_s must not exceed reconnect_max_s"])
    }

    @Test func signaturesAreRequiredAndChecked() throws {
        var machine = try fleet.machine()
        let unsigned = FleetConfigEvent.received(.fleet, topic: fleet.fleetTopic, payload: Array(#"{"version":1,"settings":{}}"#.utf8), retained: false, at: 0)
        #expect(machine.handle(unsigned).acks == [ConfigAck(scope: .fleet, version: 1, result: .rejected, reason: "signature", errors: ["the document is not signed"])])

        let signed = try fleet.signed(#"{"version":2,"settings":{"reporting":{"interval_s":10}}}"#, topic: fleet.fleetTopic)
        let tampered = Array(String(decoding: signed, as: UTF8.self).replacingOccurrences(of: "10", with: "11").utf8)
        #expect(machine.handle(.received(.fleet, topic: fleet.fleetTopic, payload: tampered, retained: false, at: 0)).acks.first?.reason == "signature")

        let otherUnit = machine.handle(.received(.unit, topic: "taxi/north/T8/config", payload: signed, retained: false, at: 0))
        #expect(otherUnit.acks.first?.reason == "signature", "the topic is part of what is signed")

        let stranger = FleetFixture()
        let foreign = try stranger.signed(#"{"version":3,"settings":{}}"#, topic: fleet.fleetTopic)
        #expect(machine.handle(.received(.fleet, topic: fleet.fleetTopic, payload: foreign, retained: false, at: 0)).acks.first?.errors
            == ["signature does not match any of the configured keys"])
        #expect(machine.versions.isEmpty)
    }

    @Test func unsignedDocumentsPassOnlyWhenTheLocalFileSaysSo() throws {
        var machine = try fleet.machine(requireSigned: false)
        let unsigned = FleetConfigEvent.received(.fleet, topic: fleet.fleetTopic, payload: Array(#"{"version":1,"settings":{"reporting":{"interval_s":7}}}"#.utf8), retained: false, at: 0)
        #expect(machine.handle(unsigned).acks.map(\.result) == [.applied])
        let badlySigned = Array(#"{"version":2,"settings":{},"signature":"AAAA"}"#.utf8)
        #expect(machine.handle(.received(.fleet, topic: fleet.fleetTopic, payload: badlySigned, retained: false, at: 0)).acks.first?.reason == "signature")
    }

    @Test func badPayloadsGetAClearReason() throws {
        var machine = try fleet.machine()
        let huge = Array(repeating: UInt8(ascii: " "), count: FleetMessage.maximumBytes + 1)
        #expect(machine.handle(.received(.fleet, topic: fleet.fleetTopic, payload: huge, retained: false, at: 0)).acks
            == [ConfigAck(scope: .fleet, version: nil, result: .rejected, reason: "too_large", errors: ["payload is 65537 bytes, more than the limit of 65536"])])
        #expect(machine.handle(.received(.fleet, topic: fleet.fleetTopic, payload: Array("not json".utf8), retained: false, at: 0)).acks.first?.reason == "not_json")
        #expect(machine.handle(.received(.fleet, topic: fleet.fleetTopic, payload: Array("[1]".utf8), retained: false, at: 0)).acks.first?.errors == ["the payload must be a JSON object"])
        #expect(machine.handle(.received(.fleet, topic: fleet.fleetTopic, payload: [], retained: false, at: 0)) == [.ignore(.fleet, because: "empty message (retained document cleared)")])
        let noVersion = try fleet.signed(#"{"settings":{}}"#, topic: fleet.fleetTopic)
        #expect(machine.handle(.received(.fleet, topic: fleet.fleetTopic, payload: noVersion, retained: false, at: 0)).acks.first?.errors == ["version must be an integer from 1 to 9007199254740992"])
        let extra = try fleet.signed(#"{"version":1,"settings":{},"comment":"x"}"#, topic: fleet.fleetTopic)
        #expect(machine.handle(.received(.fleet, topic: fleet.fleetTopic, payload: extra, retained: false, at: 0)).acks.first?.errors == ["unknown key comment"])
        #expect(machine.versions.isEmpty)
    }

    @Test func onlyAnotherBrokerIsOnTrialAndOnlyConnectionChangesReconnect() throws {
        var machine = try fleet.machine()
        #expect(machine.handle(try fleet.config(1, #"{"mqtt":{"max_inflight":3}}"#)).last == .use(machine.configuration, reconnect: false))
        #expect(machine.handle(try fleet.config(2, #"{"mqtt":{"keepalive_s":60,"topic_prefix":"cab"}}"#)).last == .use(machine.configuration, reconnect: true))
        #expect(machine.onProbation == nil)
        #expect(machine.handle(try fleet.config(3, #"{"mqtt":{"port":8883}}"#)).last == .startRollbackTimer(after: .seconds(30)))
    }

    @Test func anMQTTChangeIsOnTrialUntilTheFleetsRetainedConfigArrivesOnTheNewBroker() throws {
        var machine = try fleet.machine()
        let actions = machine.handle(try fleet.config(1, #"{"mqtt":{"host":"broker-b"}}"#, at: 5_000))
        #expect(actions.contains(.use(machine.configuration, reconnect: true)))
        #expect(actions.last == .startRollbackTimer(after: .seconds(30)))
        #expect(machine.onProbation == .fleet)
        #expect(machine.startupActions(now: 5_000) == [.startRollbackTimer(after: .seconds(30))])

        // A connection alone proves nothing (any broker accepts one): the machine is not even told.
        // A retained document that is not the fleet's (unsigned, or signed by someone else) neither.
        let unsigned = Array(#"{"version":1,"settings":{"mqtt":{"host":"broker-b"}}}"#.utf8)
        _ = machine.handle(.received(.fleet, topic: fleet.fleetTopic, payload: unsigned, retained: true, at: 6_000))
        let stranger = try FleetFixture().config(1, #"{"mqtt":{"host":"broker-b"}}"#, retained: true)
        _ = machine.handle(stranger)
        // The fleet's own document, live rather than the broker's stored copy, neither.
        _ = machine.handle(try fleet.config(1, #"{"mqtt":{"host":"broker-b"}}"#))
        #expect(machine.onProbation == .fleet)

        // The broker's retained copy of the fleet's signed config: the fleet's own broker.
        let answered = machine.handle(try fleet.config(1, #"{"mqtt":{"host":"broker-b"}}"#, retained: true))
        #expect(answered.first == .cancelRollbackTimer)
        guard case .commit(.fleet, let record, ack: nil) = answered.dropFirst().first else { Issue.record("not committed"); return }
        #expect(record.probation == nil)
        #expect(answered.last == .ignore(.fleet, because: "version 1 is the one held"))
        #expect(machine.onProbation == nil)
        #expect(machine.handle(.rollbackDue(lastError: nil)) == [])
        #expect(machine.configuration.mqtt.host == "broker-b")
    }

    @Test func theUnitScopesRetainedConfigEndsTheTrialToo() throws {
        var machine = try fleet.machine()
        _ = machine.handle(try fleet.config(1, #"{"mqtt":{"host":"broker-b"}}"#))
        let answered = machine.handle(try fleet.config(4, #"{"reporting":{"interval_s":9}}"#, scope: .unit, retained: true))
        #expect(answered.first == .cancelRollbackTimer)
        #expect(answered.acks.map(\.result) == [.applied])
        #expect(machine.onProbation == nil)
    }

    @Test func anUnreachableBrokerRollsBackToTheLastGoodConfigAndItsRetainedCopyDoesNotLoop() throws {
        var machine = try fleet.machine()
        let good = try fleet.config(1, #"{"mqtt":{"keepalive_s":20}}"#)
        _ = machine.handle(good)
        let bad = try fleet.config(2, #"{"mqtt":{"host":"nowhere","keepalive_s":20}}"#)
        _ = machine.handle(bad)
        #expect(machine.configuration.mqtt.host == "nowhere")
        #expect(machine.handle(try fleet.config(3, #"{}"#)).acks.first?.reason == "busy")

        let actions = machine.handle(.rollbackDue(lastError: "Connection refused"))
        #expect(actions.acks == [ConfigAck(scope: .fleet, version: 2, result: .rolledBack, reason: "unreachable",
                                           errors: ["did not get the fleet's signed config from the broker nowhere:1883 within 30.0 s: Connection refused"])])
        #expect(actions.last == .use(machine.configuration, reconnect: true))
        #expect(machine.configuration.mqtt.host == "broker-a")
        #expect(machine.configuration.mqtt.keepaliveS == 20)
        #expect(machine.versions == [.fleet: 1])
        #expect(machine.onProbation == nil)
        #expect(machine.handle(bad) == [.ignore(.fleet, because: "version 2 is the one held")])
        #expect(machine.handle(try fleet.config(3, #"{"reporting":{"interval_s":1}}"#)).acks.map(\.result) == [.applied])
    }

    @Test func aRollbackWithNothingBeforeGoesBackToTheLocalFile() throws {
        var machine = try fleet.machine()
        _ = machine.handle(try fleet.config(1, #"{"mqtt":{"port":1884}}"#, scope: .unit))
        _ = machine.handle(.rollbackDue(lastError: nil))
        #expect(machine.configuration.mqtt.port == 1883)
        #expect(machine.versions.isEmpty)
        #expect(machine.records[.unit]?.seenVersion == 1)
    }

    @Test func storedRecordsComeBackAfterARestart() throws {
        var machine = try fleet.machine()
        var stored: [ConfigScope: ConfigScopeRecord] = [:]
        for event in [try fleet.config(2, #"{"reporting":{"interval_s":10}}"#), try fleet.config(4, #"{"mqtt":{"host":"broker-c"}}"#, scope: .unit)] {
            for case .commit(let scope, let record, _) in machine.handle(event) { stored[scope] = record }
        }
        let restarted = try fleet.machine(records: stored)
        #expect(restarted.configuration == machine.configuration)
        #expect(restarted.restoreProblems.isEmpty)
        #expect(restarted.onProbation == .unit)
        #expect(restarted.startupActions(now: 0) == [.startRollbackTimer(after: .seconds(30))])
        // The window runs from the trial's start, across restarts; a clock gone back gives no more.
        #expect(restarted.startupActions(now: 20_000) == [.startRollbackTimer(after: .seconds(10))])
        #expect(restarted.startupActions(now: 45_000) == [.startRollbackTimer(after: .seconds(0))])
        #expect(restarted.startupActions(now: -5_000) == [.startRollbackTimer(after: .seconds(30))])
    }

    @Test func aTrialKeepsTheWindowOfTheConfigBeforeItAcrossRestarts() throws {
        var machine = try fleet.machine()
        var stored: [ConfigScope: ConfigScopeRecord] = [:]
        for case .commit(let scope, let record, _) in machine.handle(try fleet.config(1, #"{"mqtt":{"host":"broker-b"},"fleet":{"rollback_after_s":600}}"#, at: 1_000)) {
            stored[scope] = record
        }
        #expect(stored[.fleet]?.probation == .init(lastGood: nil, startedAt: 1_000, windowS: 30))
        let restarted = try fleet.machine(records: stored)
        #expect(restarted.configuration.fleet.rollbackAfterS == 600)
        #expect(restarted.startupActions(now: 11_000) == [.startRollbackTimer(after: .seconds(20))])
    }

    @Test func storedDocumentsAreVerifiedAgainAtStartSoARemovedKeyRevokesThem() throws {
        var machine = try fleet.machine()
        var stored: [ConfigScope: ConfigScopeRecord] = [:]
        for event in [try fleet.config(2, #"{"reporting":{"interval_s":10}}"#), try fleet.config(3, #"{"reporting":{"interval_s":11}}"#, scope: .unit)] {
            for case .commit(let scope, let record, _) in machine.handle(event) { stored[scope] = record }
        }
        #expect(try fleet.machine(records: stored).restoreProblems.isEmpty)

        // The same unit after its file trusts another key only.
        let rekeyed = FleetFixture()
        let restarted = try FleetConfigMachine(local: ConfigValue.parseTOML(rekeyed.localTOML()), restoring: stored)
        #expect(restarted.restoreProblems == [
            "stored fleet config version 2: signature does not match any of the configured keys",
            "stored unit config version 3: signature does not match any of the configured keys",
        ])
        #expect(restarted.configuration.reporting.rule(for: "en_route").intervalS == 5)
        #expect(restarted.versions.isEmpty)

        // A document stored before topics were kept is checked against its scope's topic.
        var old = stored
        old[.fleet]?.applied?.topic = nil
        #expect(try fleet.machine(records: old).restoreProblems.isEmpty)
        // And a tampered one is refused like any other.
        old[.fleet]?.applied?.payload = Array(String(decoding: stored[.fleet]!.applied!.payload, as: UTF8.self).replacingOccurrences(of: "10", with: "12").utf8)
        #expect(try fleet.machine(records: old).restoreProblems.count == 1)
    }

    @Test func aRevokedLastGoodDocumentIsNotRolledBackTo() throws {
        var machine = try fleet.machine()
        var stored: [ConfigScope: ConfigScopeRecord] = [:]
        for event in [try fleet.config(1, #"{"reporting":{"interval_s":10}}"#), try fleet.config(2, #"{"mqtt":{"host":"broker-b"}}"#)] {
            for case .commit(let scope, let record, _) in machine.handle(event) { stored[scope] = record }
        }
        // The trial's document is re-signed by the key that stays; the last good one's key is removed.
        let kept = FleetFixture()
        let resigned = try kept.signed(#"{"version":2,"settings":{"mqtt":{"host":"broker-b"}}}"#, topic: kept.fleetTopic)
        stored[.fleet]?.applied = AppliedConfigDocument(version: 2, payload: resigned, topic: kept.fleetTopic)
        var restarted = try FleetConfigMachine(local: ConfigValue.parseTOML(kept.localTOML()), restoring: stored)
        #expect(restarted.restoreProblems == ["stored fleet config version 1 (the last good one): signature does not match any of the configured keys"])
        #expect(restarted.configuration.mqtt.host == "broker-b")
        _ = restarted.handle(.rollbackDue(lastError: nil))
        #expect(restarted.configuration.mqtt.host == "broker-a")
        #expect(restarted.configuration.reporting.rule(for: "en_route").intervalS == 5)
    }

    @Test func versionsAboveTheCeilingAreInvalidAndTheCeilingItselfIsHeld() throws {
        var machine = try fleet.machine()
        for version in [Int.max, FleetConfigMachine.highestVersion + 1] {
            #expect(machine.handle(try fleet.config(version, "{}")).acks == [ConfigAck(
                scope: .fleet, version: version, result: .rejected, reason: "invalid",
                errors: ["version must be an integer from 1 to 9007199254740992"])])
        }
        #expect(machine.versions.isEmpty)
        #expect(machine.handle(try fleet.config(FleetConfigMachine.highestVersion, #"{"reporting":{"interval_s":10}}"#)).acks.map(\.result) == [.applied])
        #expect(machine.versions == [.fleet: 9_007_199_254_740_992])
    }

    /// The held version is the trusted key's: once its key is removed, the next key's documents
    /// start afresh, whatever version the old key signed.
    @Test func rotatingTheKeyUnblocksAScopeHeldAtTheCeiling() throws {
        var machine = try fleet.machine()
        var stored: [ConfigScope: ConfigScopeRecord] = [:]
        for case .commit(let scope, let record, _) in machine.handle(try fleet.config(FleetConfigMachine.highestVersion, #"{"reporting":{"interval_s":10}}"#)) {
            stored[scope] = record
        }
        #expect(machine.handle(try fleet.config(2, #"{"reporting":{"interval_s":11}}"#)).acks.map(\.reason) == ["stale"])

        let rotated = FleetFixture()
        var restarted = try FleetConfigMachine(local: ConfigValue.parseTOML(rotated.localTOML()), restoring: stored)
        #expect(restarted.records[.fleet]?.seenVersion == 0)
        #expect(restarted.handle(try rotated.config(2, #"{"reporting":{"interval_s":11}}"#)).acks.map(\.result) == [.applied])
        #expect(restarted.configuration.reporting.rule(for: "en_route").intervalS == 11)

        // While both keys are trusted the old key's version still counts.
        let both = try ConfigValue.parseTOML(fleet.localTOML(extra: "").replacingOccurrences(
            of: "config_pubkeys = [\"", with: "config_pubkeys = [\"\(rotated.key.publicKey.rawRepresentation.base64EncodedString())\", \""))
        var overlapping = try FleetConfigMachine(local: both, restoring: stored)
        #expect(overlapping.handle(try rotated.config(2, #"{"reporting":{"interval_s":11}}"#)).acks.map(\.reason) == ["stale"])
    }

    /// A store written before the ceiling may hold a version above it: it is set aside at start.
    @Test func aStoredVersionAboveTheCeilingIsSetAside() throws {
        let payload = try fleet.signed(#"{"version":\#(Int.max),"settings":{"reporting":{"interval_s":10}}}"#, topic: fleet.fleetTopic)
        let stored: [ConfigScope: ConfigScopeRecord] = [.fleet: ConfigScopeRecord(
            seenVersion: Int.max, applied: AppliedConfigDocument(version: Int.max, payload: payload, topic: fleet.fleetTopic))]
        var machine = try fleet.machine(records: stored)
        #expect(machine.restoreProblems == [
            "stored fleet config: held version 9223372036854775807 is above the highest version 9007199254740992",
            "stored fleet config version 9223372036854775807: version 9223372036854775807 is above the highest version 9007199254740992",
        ])
        #expect(machine.versions.isEmpty && machine.records[.fleet]?.seenVersion == 0)
        #expect(machine.handle(try fleet.config(3, #"{"reporting":{"interval_s":12}}"#)).acks.map(\.result) == [.applied])
    }

    @Test func storedRecordsThatNoLongerFitTheLocalFileAreSetAside() throws {
        var stored: [ConfigScope: ConfigScopeRecord] = [:]
        let payload = try fleet.signed(#"{"version":1,"settings":{"reporting":{"interval_s":10},"gpsd":{"port":1}}}"#, topic: fleet.fleetTopic)
        stored[.fleet] = ConfigScopeRecord(seenVersion: 1, applied: AppliedConfigDocument(version: 1, payload: payload))
        let machine = try fleet.machine(records: stored)
        #expect(machine.configuration.reporting.rule(for: "en_route").intervalS == 5)
        #expect(machine.restoreProblems.count == 1)
        #expect(machine.restoreProblems.first?.contains("[gpsd] is not remotely settable") == true)
        #expect(machine.versions.isEmpty)
        #expect(machine.records[.fleet]?.seenVersion == 1)
    }
}
