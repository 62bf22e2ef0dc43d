#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The local settings as a fleet installs them: the main file (the image's, shared by every unit),
/// then `conf.d/*.toml` beside it in name order (fleet settings, one small per-unit file), each
/// laid over the ones before it like a fleet document (tables merge key by key, anything else
/// replaces). Two values are resolved here, so that the validator and everything after it see plain
/// settings: a unit id of `"hostname"` or `"machine-id"`, and file settings naming a systemd
/// credential (`"credential:NAME"`: `$CREDENTIALS_DIRECTORY/NAME`, from `LoadCredential=`).
public struct LocalConfigSources: Sendable, Equatable {
    /// The merged settings, resolved.
    public var value: ConfigValue
    /// Where each setting came from: dotted key (`mqtt.host`; a list such as `zones` as a whole) →
    /// the file that set it last, with what was resolved (`(hostname)`, `(credential)`).
    public var origins: [String: String]
    /// The files read, in order.
    public var files: [String]

    /// Settings that name a file and may name a systemd credential instead.
    static let fileSettings: [(section: String, key: String)] = [
        ("mqtt", "password_file"), ("mqtt", "cafile"), ("mqtt", "certfile"), ("mqtt", "keyfile"),
        ("owntracks", "password_file"), ("owntracks", "certfile"), ("owntracks", "keyfile"),
    ]
    static let credentialPrefix = "credential:"
    /// Where drop-ins live, relative to the main file's directory.
    public static let dropInDirectoryName = "conf.d"

    /// What the loader needs from the machine, injectable for tests.
    public struct Machine: Sendable {
        public var hostName: @Sendable () -> String?
        public var machineID: @Sendable () -> String?
        public var credentialsDirectory: String?

        public init(hostName: @escaping @Sendable () -> String?, machineID: @escaping @Sendable () -> String?, credentialsDirectory: String?) {
            self.hostName = hostName
            self.machineID = machineID
            self.credentialsDirectory = credentialsDirectory
        }

        public static let current = Machine(
            hostName: { ProcessInfo.processInfo.hostName },
            machineID: { try? String(contentsOfFile: "/etc/machine-id", encoding: .utf8) },
            credentialsDirectory: ProcessInfo.processInfo.environment["CREDENTIALS_DIRECTORY"])
    }

    /// Reads `path` and the drop-ins in `conf.d/` beside it. Every unreadable file, syntax error and
    /// unresolvable value is one problem; all are reported together.
    public static func load(path: String, machine: Machine = .current) throws(ConfigError) -> LocalConfigSources {
        let directory = path.lastIndex(of: "/").map { String(path[..<$0]) } ?? ""
        let dropIns = (directory.isEmpty ? "." : directory) + "/" + dropInDirectoryName
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: dropIns)) ?? [])
            .filter { $0.hasSuffix(".toml") && !$0.hasPrefix(".") }
            .sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
        let files = [path] + names.map { dropIns + "/" + $0 }
        var problems: [String] = []
        var merged = ConfigValue.table([:])
        var origins: [String: String] = [:]
        for file in files {
            do {
                let layer = try ConfigValue.loadTOML(path: file)
                merged = merged.overlaid(by: layer)
                for key in layer.settingKeys() { origins[key] = file }
            } catch {
                problems += error.problems.map { file == path ? $0 : "\(file): \($0)" }
            }
        }
        var sources = LocalConfigSources(value: merged, origins: origins, files: files)
        problems += sources.resolveUnitID(machine)
        problems += sources.resolveCredentials(machine)
        guard problems.isEmpty else { throw ConfigError(problems: problems) }
        return sources
    }

    private mutating func resolveUnitID(_ machine: Machine) -> [String] {
        guard case .string(let wanted)? = value.member("unit", "id"), ["hostname", "machine-id"].contains(wanted) else { return [] }
        let found = wanted == "hostname" ? machine.hostName().map(Self.hostLabel) : machine.machineID()
        let id = found?.trimmingWhitespace() ?? ""
        guard !id.isEmpty, id.utf8.count <= 64, id.unicodeScalars.allSatisfy(Self.isTopicSafe) else {
            return ["unit.id = \"\(wanted)\": this machine's \(wanted) (\(id.prefix(64).debugDescription)) is not a usable unit id (1-64 letters, digits, '-', '_')"]
        }
        value = value.setting("unit", "id", to: .string(id))
        origins["unit.id"] = (origins["unit.id"] ?? "") + " (\(wanted))"
        return []
    }

    private mutating func resolveCredentials(_ machine: Machine) -> [String] {
        var problems: [String] = []
        for (section, key) in Self.fileSettings {
            guard case .string(let setting)? = value.member(section, key), setting.hasPrefix(Self.credentialPrefix) else { continue }
            let name = String(setting.dropFirst(Self.credentialPrefix.count))
            guard !name.isEmpty, !name.contains("/" as Character), name != ".", name != ".." else {
                problems.append("\(section).\(key) = \"\(setting)\": a credential is named by a plain file name")
                continue
            }
            guard let directory = machine.credentialsDirectory, !directory.isEmpty else {
                problems.append("\(section).\(key) = \"\(setting)\": no systemd credentials here ($CREDENTIALS_DIRECTORY is not set; see LoadCredential= in systemd.exec)")
                continue
            }
            value = value.setting(section, key, to: .string(directory + "/" + name))
            origins["\(section).\(key)"] = (origins["\(section).\(key)"] ?? "") + " (credential)"
        }
        return problems
    }

    /// A host name's first label: `taxi-t042.fleet.example` → `taxi-t042`.
    static func hostLabel(_ name: String) -> String {
        String(name.split(separator: ".", maxSplits: 1).first ?? "")
    }

    static func isTopicSafe(_ scalar: Unicode.Scalar) -> Bool {
        scalar.isASCII && (scalar.properties.isAlphabetic || scalar.properties.numericType != nil || scalar == "-" || scalar == "_")
    }
}

extension ConfigValue {
    /// `section.key` of a table of tables, if there is one.
    func member(_ section: String, _ key: String) -> ConfigValue? {
        guard case .table(let root) = self, case .table(let table)? = root[section] else { return nil }
        return table[key]
    }

    /// The same table with `section.key` set to `value`.
    func setting(_ section: String, _ key: String, to value: ConfigValue) -> ConfigValue {
        overlaid(by: .table([section: .table([key: value])]))
    }

    /// Every setting's dotted key: keys of tables within tables, anything else (lists too) as a whole.
    func settingKeys(prefix: String = "") -> [String] {
        guard case .table(let entries) = self else { return prefix.isEmpty ? [] : [prefix] }
        return entries.flatMap { key, value -> [String] in
            let path = prefix.isEmpty ? key : prefix + "." + key
            if case .table = value { return value.settingKeys(prefix: path) }
            return [path]
        }
    }
}
