#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import SwiftASN1
import X509

/// What `taxiunitd --check` finds in the TLS files of `[mqtt]` (and `[owntracks]`): that they exist
/// and parse, that the key belongs to the certificate, and how long the certificates stay valid.
/// Pure: the caller reads the files and gives the time.
public enum TLSFileCheck {
    public struct Findings: Sendable, Equatable {
        public var problems: [String] = []
        public var warnings: [String] = []
    }

    /// A client certificate expiring sooner than this is warned about: renewing takes a visit or a push.
    public static let expiryWarningS: TimeInterval = 30 * 86_400
    /// No CA bundle, certificate or key is larger; a bigger file is refused unread.
    public static let maximumFileBytes = 1 << 20

    /// `[mqtt]`'s files, and with `[owntracks] enabled` the feed's client certificate (its CA is `[mqtt]`'s).
    public static func check(_ configuration: UnitConfiguration, now: Date, read: (String) -> Result<[UInt8], FileProblem>) -> Findings {
        guard let tls = configuration.mqtt.tls else { return Findings() }
        var findings = check(tls, now: now, read: read)
        let ownTracks = configuration.ownTracks
        if ownTracks.enabled, ownTracks.certFile != nil {
            let feed = UnitConfiguration.TLS(caFile: nil, certFile: ownTracks.certFile, keyFile: ownTracks.keyFile, version: tls.version)
            let feedFindings = check(feed, section: "owntracks", now: now, read: read)
            findings.problems += feedFindings.problems
            findings.warnings += feedFindings.warnings
        }
        return findings
    }

    /// `read` gives a file's bytes, or why it cannot be read; `section` names the settings in what is found.
    public static func check(
        _ tls: UnitConfiguration.TLS, section: String = "mqtt", now: Date, read: (String) -> Result<[UInt8], FileProblem>
    ) -> Findings {
        var findings = Findings()
        func pem(_ role: String, _ path: String) -> String? {
            switch read(path) {
            case .failure(let problem):
                findings.problems.append("\(section).\(role) \(path): \(problem.description)")
                return nil
            case .success(let bytes) where bytes.count > maximumFileBytes:
                findings.problems.append("\(section).\(role) \(path) is larger than \(maximumFileBytes) bytes; not a PEM file")
                return nil
            case .success(let bytes):
                return String(decoding: bytes, as: UTF8.self)
            }
        }
        if let caFile = tls.caFile, let text = pem("cafile", caFile) {
            let certificates = Self.certificates(in: text)
            if certificates.isEmpty {
                findings.problems.append("\(section).cafile \(caFile) holds no PEM certificate")
            }
            for certificate in certificates where certificate.notValidAfter < now {
                findings.problems.append("\(section).cafile \(caFile): the CA \(certificate.subject) expired on \(Self.day(certificate.notValidAfter))")
            }
        }
        guard let certFile = tls.certFile, let keyFile = tls.keyFile else { return findings }
        let certificate = pem("certfile", certFile).flatMap { text in
            let first = Self.certificates(in: text).first
            if first == nil { findings.problems.append("\(section).certfile \(certFile) holds no PEM certificate") }
            return first
        }
        let key = pem("keyfile", keyFile).flatMap { text in
            do {
                return try Certificate.PrivateKey(pemEncoded: text)
            } catch {
                findings.problems.append("\(section).keyfile \(keyFile) is not an unencrypted PEM private key (RSA, EC or Ed25519)")
                return nil
            }
        }
        guard let certificate else { return findings }
        if let key, key.publicKey != certificate.publicKey {
            findings.problems.append("\(section).keyfile \(keyFile) does not belong to the certificate in \(section).certfile \(certFile)")
        }
        if certificate.notValidAfter < now {
            findings.problems.append("\(section).certfile \(certFile) expired on \(Self.day(certificate.notValidAfter)): the broker will refuse it")
        } else if certificate.notValidBefore > now {
            findings.problems.append("\(section).certfile \(certFile) is not valid before \(Self.day(certificate.notValidBefore)) (is the clock right?)")
        } else if certificate.notValidAfter.timeIntervalSince(now) < expiryWarningS {
            let days = Int(certificate.notValidAfter.timeIntervalSince(now) / 86_400)
            findings.warnings.append("\(section).certfile \(certFile) expires on \(Self.day(certificate.notValidAfter)), in \(days) days: renew it")
        }
        return findings
    }

    public enum FileProblem: Error, Sendable, Equatable, CustomStringConvertible {
        case missing
        case unreadable(String)

        public var description: String {
            switch self {
            case .missing: "no such file"
            case .unreadable(let why): "cannot be read: \(why)"
            }
        }
    }

    /// Every `CERTIFICATE` block that parses; other blocks (a key in the same file) are skipped.
    static func certificates(in text: String) -> [Certificate] {
        guard let documents = try? PEMDocument.parseMultiple(pemString: text) else { return [] }
        return documents.filter { $0.discriminator == "CERTIFICATE" }.compactMap { try? Certificate(derEncoded: $0.derBytes) }
    }

    static func day(_ date: Date) -> String {
        Date.ISO8601FormatStyle().year().month().day().format(date)
    }
}
