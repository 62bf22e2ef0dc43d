import StrictJSON
import UnitCore

/// `taxiunitctl config`: every setting in force and the source that set it last — the main file,
/// a drop-in, or a fleet document — laid over each other in the order the daemon uses.
public struct EffectiveSetting: Sendable, Equatable, Codable {
    /// Dotted key (`mqtt.host`; a list such as `zones` as a whole).
    public var key: String
    /// The value as JSON.
    public var value: String
    /// The file (with what was resolved, e.g. `(hostname)`), or `fleet document version N`.
    public var origin: String

    public init(key: String, value: String, origin: String) {
        self.key = key
        self.value = value
        self.origin = origin
    }
}

public enum ConfigProvenance {
    /// A fleet document in force: its scope's name, version and settings.
    public struct Layer: Sendable, Equatable {
        public var scope: String
        public var version: Int
        public var settings: ConfigValue

        public init(scope: String, version: Int, settings: ConfigValue) {
            self.scope = scope
            self.version = version
            self.settings = settings
        }
    }

    /// `layers` in the order they are laid over the local files (fleet scope, then unit scope).
    /// Sorted by key. Settings left at their defaults are not listed.
    public static func effective(local: LocalConfigSources, layers: [Layer]) -> [EffectiveSetting] {
        var merged = local.value
        var origins = local.origins
        for layer in layers {
            merged = merged.overlaid(by: layer.settings)
            for key in layer.settings.settingKeys() { origins[key] = "\(layer.scope) document version \(layer.version)" }
        }
        return merged.settings().map { key, value in
            EffectiveSetting(key: key, value: String(decoding: JSONDocument(value).canonicalBytes, as: UTF8.self), origin: origins[key] ?? "?")
        }.sorted { $0.key < $1.key }
    }
}

extension ConfigValue {
    /// Every setting with its value, keyed like `settingKeys()`.
    func settings(prefix: String = "") -> [(key: String, value: ConfigValue)] {
        guard case .table(let entries) = self else { return prefix.isEmpty ? [] : [(prefix, self)] }
        return entries.flatMap { key, value -> [(key: String, value: ConfigValue)] in
            let path = prefix.isEmpty ? key : prefix + "." + key
            if case .table = value { return value.settings(prefix: path) }
            return [(path, value)]
        }
    }
}
