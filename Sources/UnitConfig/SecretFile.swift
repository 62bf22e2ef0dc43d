#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// Files holding secrets (the broker password, the client key) must be private to their owner:
/// a secret anyone on the board can read is no secret.
public enum SecretFile {
    /// Refuses a file that its group or others may read or write.
    public static func checkPrivate(_ path: String, role: String) throws(ConfigError) {
        let attributes: [FileAttributeKey: Any]
        do {
            attributes = try FileManager.default.attributesOfItem(atPath: path)
        } catch {
            throw ConfigError(problems: ["cannot read \(role) \(path): \(describeFileError(error))"])
        }
        let mode = (attributes[.posixPermissions] as? UInt).map { Int($0) } ?? 0o777
        guard mode & 0o077 == 0 else {
            throw ConfigError(problems: [
                "\(role) \(path) is accessible by group or others (mode \(String(mode, radix: 8))); "
                    + "refusing to use it: chmod 600 it, owned by the daemon's user"
            ])
        }
    }

    /// The first line of a private file, without its line break.
    public static func read(_ path: String, role: String) throws(ConfigError) -> String {
        try checkPrivate(path, role: role)
        do {
            let text = try String(contentsOfFile: path, encoding: .utf8)
            return String(text.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false).first ?? "")
        } catch {
            throw ConfigError(problems: ["cannot read \(role) \(path): \(describeFileError(error))"])
        }
    }
}

extension UnitConfiguration.MQTT {
    /// The broker login, its password read from `password_file`; also refuses a client key others
    /// can read. nil without a username.
    public func login() throws(ConfigError) -> (username: String, password: String?)? {
        if let keyFile = tls?.keyFile { try SecretFile.checkPrivate(keyFile, role: "keyfile") }
        guard let username else { return nil }
        let password = try passwordFile.map { path throws(ConfigError) in try SecretFile.read(path, role: "password_file") }
        return (username, password)
    }
}

/// Why a file could not be read, in strerror's words ("No such file or directory"): Foundation's
/// `localizedDescription` would link its ICU data into every program (bench/README.md, "Footprint").
public func describeFileError(_ error: any Error) -> String {
    guard let cocoa = error as? CocoaError else { return "\(error)" }
    if let posix = cocoa.underlying as? POSIXError { return String(cString: strerror(posix.code.rawValue)) }
    if cocoa.code == .fileReadInapplicableStringEncoding { return "not UTF-8 text" }
    return "\(cocoa.code)"
}

extension UnitConfiguration.OwnTracks {
    /// The feed connection's login, its password read from `password_file`; also refuses a client
    /// key others can read.
    public func login(fleet: String, unit: String) throws(ConfigError) -> (username: String, password: String?) {
        if let keyFile { try SecretFile.checkPrivate(keyFile, role: "owntracks.keyfile") }
        let password = try passwordFile.map { path throws(ConfigError) in try SecretFile.read(path, role: "owntracks.password_file") }
        return (username(fleet: fleet, unit: unit), password)
    }
}
