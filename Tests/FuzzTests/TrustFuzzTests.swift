import Foundation
import PropertyBased
import Testing
import UnitConfig

/// What the unit reads of keys and TLS files (`[fleet] *_pubkeys`, `[mqtt] cafile/certfile/keyfile`
/// for `--check`): mutated PEM and base64 never trap the parsers, and nothing weak gets through.
@Suite struct TrustFuzzTests {
    static let publicPEM = Array("""
        -----BEGIN PUBLIC KEY-----
        MCowBQYDK2VwAyEAJuXWNMu1o71mj6gc9CUJhX+M68mHJ6IEmX4fztAkSFo=
        -----END PUBLIC KEY-----
        """.utf8)

    /// A self-signed P-256 certificate made with openssl, as a CA or client file holds it.
    static let certificatePEM = Array("""
        -----BEGIN CERTIFICATE-----
        MIIBfDCCASOgAwIBAgIUc+l29WyTHLh9Wzt2YYbHFVKG0B0wCgYIKoZIzj0EAwIw
        FDESMBAGA1UEAwwJdGF4aSB0ZXN0MB4XDTI2MTEyNDA4MjUwMloXDTM2MTEyMTA4
        MjUwMlowFDESMBAGA1UEAwwJdGF4aSB0ZXN0MFkwEwYHKoZIzj0CAQYIKoZIzj0D
        AQcDQgAEpWFhIgX1eMES/4paLxX+HMnuF9RbC5/pNWJwBqrrG4W96aUl44uLxDX1
        VZ8lqkrcCsPHG6ezw43ZVzsrNt1FLqNTMFEwHQYDVR0OBBYEFJ25izEb+g6bRzKt
        l/GEgsUBIJ4FMB8GA1UdIwQYMBaAFJ25izEb+g6bRzKtl/GEgsUBIJ4FMA8GA1Ud
        EwEB/wQFMAMBAf8wCgYIKoZIzj0EAwIDRwAwRAIgaNAynut2Y2k3vWIh+UE1ltP5
        FJxL4yC1aCVgQ4bYwd0CIFJU+B/OaKmG8R8zCKdXCcIVO/pKg1hZbI9Mbq3GtvqW
        -----END CERTIFICATE-----
        """.utf8)

    static func mutated(_ base: [UInt8], _ mutations: [(Int, Int)], _ tail: [Int]) -> [UInt8] {
        var bytes = base
        for (position, byte) in mutations { bytes[position % bytes.count] = UInt8(byte) }
        if mutations.count % 2 == 1 { bytes += tail.map { UInt8($0) } }
        return bytes
    }

    @Test func mutatedKeysNeverTrapAndNoWeakKeyIsAccepted() async {
        let mutation = zip(Gen.int(in: 0...10_000), Gen.int(in: 0...255))
        await propertyCheck(count: FuzzBudget.cases(5_000, "fleet-key-mutated"), input: mutation.array(of: 0...6), Gen.int(in: 0...255).array(of: 0...40)) { mutations, tail in
            let text = String(decoding: Self.mutated(Self.publicPEM, mutations, tail), as: UTF8.self)
            for candidate in [text, text.split(separator: "\n").dropFirst().first.map(String.init) ?? ""] {
                if case .success(let raw) = FleetPublicKey.parse(candidate) {
                    #expect(raw.count == 32 && !FleetPublicKey.isWeak(raw))
                }
            }
        }
    }

    static func tls(_ files: String) throws -> UnitConfiguration.TLS {
        try #require(try UnitConfiguration(document: ConfigValue.parseTOML("[unit]\nid = \"T1\"\nfleet = \"f\"\n[mqtt]\ntls = true\n" + files)).mqtt.tls)
    }

    @Test func mutatedTLSFilesNeverTrapTheCheck() async throws {
        let mutation = zip(Gen.int(in: 0...10_000), Gen.int(in: 0...255))
        let tls = try Self.tls("cafile = \"ca\"\ncertfile = \"cert\"\nkeyfile = \"key\"\n")
        await propertyCheck(count: FuzzBudget.cases(2_000, "tls-files-mutated"), input: mutation.array(of: 0...6), Gen.int(in: 0...255).array(of: 0...40)) { mutations, tail in
            let bytes = Self.mutated(Self.certificatePEM, mutations, tail)
            let findings = TLSFileCheck.check(tls, now: Date(timeIntervalSince1970: 1_800_000_000)) { _ in .success(bytes) }
            // The key file is never a key here: at least that is reported.
            #expect(findings.problems.contains { $0.hasPrefix("mqtt.keyfile key is not") })
        }
    }

    @Test func theUnmutatedCertificateParsesAndIsValidIn2027() throws {
        let findings = TLSFileCheck.check(try Self.tls("cafile = \"ca\"\n"), now: Date(timeIntervalSince1970: 1_800_000_000)) { _ in .success(Self.certificatePEM) }
        #expect(findings.problems.isEmpty && findings.warnings.isEmpty, "\(findings)")
    }
}
