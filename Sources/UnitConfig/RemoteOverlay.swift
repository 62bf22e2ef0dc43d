/// Which keys of a section the fleet may set remotely.
public enum RemoteAccess: Sendable, Equatable {
    case everyKey
    case only(Set<String>)
}

extension ConfigValue {
    /// `overlay`'s values win; tables merge key by key, anything else (arrays included) is replaced
    /// whole, so a fleet's list of zones replaces the local one rather than mixing with it.
    public func overlaid(by overlay: ConfigValue) -> ConfigValue {
        guard case .table(let base) = self, case .table(let top) = overlay else { return overlay }
        var merged = base
        for (key, value) in top {
            merged[key] = base[key].map { $0.overlaid(by: value) } ?? value
        }
        return .table(merged)
    }
}

extension UnitConfiguration {
    /// Validates remote settings laid over `base` (the local file, with lower scopes already laid
    /// over it) and under `top` (a higher scope, if any): only remotely settable keys in `settings`,
    /// and the merged document must pass the same validation as a local file. Every problem is
    /// reported; the result is the configuration the unit would run with.
    public static func overlay(_ settings: ConfigValue, on base: ConfigValue, under top: ConfigValue? = nil) throws(ConfigError) -> UnitConfiguration {
        guard case .table(let sections) = settings else {
            throw ConfigError(problems: ["settings must be an object, found \(settings.typeName)"])
        }
        var problems: [String] = []
        for (section, value) in sections.sorted(by: { $0.key < $1.key }) {
            switch remotelySettable[section] {
            case nil:
                problems.append("[\(section)] is not remotely settable")
            case .everyKey:
                break
            case .only(let allowed):
                guard case .table(let entries) = value else { break }
                for key in entries.keys.sorted() where !allowed.contains(key) {
                    problems.append("\(section).\(key) is not remotely settable")
                }
            }
        }
        var merged: UnitConfiguration?
        do {
            let layered = base.overlaid(by: settings)
            merged = try UnitConfiguration(document: top.map { layered.overlaid(by: $0) } ?? layered)
        } catch {
            problems += error.problems
        }
        guard let merged, problems.isEmpty else { throw ConfigError(problems: problems) }
        return merged
    }
}
