/// Which keys of a section the fleet may set remotely.
public enum RemoteAccess: Sendable, Equatable {
    case everyKey
    case only(Set<String>)
    /// For sections whose settings are limits, except the named local ones (paths).
    case everyKeyExcept(Set<String>)
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
    /// Validates remote settings laid, in order, over the local file: only remotely settable keys in
    /// each layer, and the merged document must pass the same validation as a local file. Every
    /// problem is reported; the result is the configuration the unit would run with.
    public static func overlay(_ layers: [ConfigValue], on local: ConfigValue) throws(ConfigError) -> UnitConfiguration {
        var problems = layers.flatMap(remoteAccessProblems)
        var merged: UnitConfiguration?
        let document = layers.reduce(local) { $0.overlaid(by: $1) }
        do {
            merged = try UnitConfiguration(document: document)
        } catch {
            problems += error.problems
        }
        // The local file's allow_plaintext waives TLS for its own brokers only: every node the
        // fleet names is held to it, not only the first.
        if let merged, merged.mqtt.tls == nil {
            let ownNodes = (try? UnitConfiguration(document: local))?.mqtt.nodes ?? []
            let listed = if case .table(let root) = document, case .table(let mqtt)? = root["mqtt"] { mqtt["hosts"] != nil } else { false }
            let key = listed ? "mqtt.hosts" : "mqtt.host"
            for node in merged.mqtt.nodes where !isLoopback(node.host) && !ownNodes.contains(node) {
                problems.append("\(key): a fleet config cannot move the unit to a broker off this machine without TLS (\(node))")
            }
        }
        guard let merged, problems.isEmpty else { throw ConfigError(problems: problems) }
        return merged
    }

    private static func remoteAccessProblems(_ settings: ConfigValue) -> [String] {
        guard case .table(let sections) = settings else {
            return ["settings must be an object, found \(settings.typeName)"]
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
            case .everyKeyExcept(let local):
                guard case .table(let entries) = value else { break }
                for key in entries.keys.sorted() where local.contains(key) {
                    problems.append("\(section).\(key) is not remotely settable")
                }
            }
        }
        return problems
    }
}

extension UnitConfiguration.MQTT {
    /// Same broker and credentials: differences only in how the unit talks to it. A key added to
    /// [mqtt] counts as part of the broker's identity unless it is blanked out here.
    public func isSameBroker(as other: Self) -> Bool {
        var mine = self, theirs = other
        for settings in [\Self.keepaliveS, \Self.maxInflight, \Self.batchMax] as [WritableKeyPath<Self, Int>] {
            mine[keyPath: settings] = 0
            theirs[keyPath: settings] = 0
        }
        for settings in [\Self.reconnectMinS, \Self.reconnectMaxS, \Self.inboundPerS] as [WritableKeyPath<Self, Double>] {
            mine[keyPath: settings] = 0
            theirs[keyPath: settings] = 0
        }
        mine.topicPrefix = ""
        theirs.topicPrefix = ""
        return mine == theirs
    }

    /// Same connection: only the outbox's in-flight limit and the inbound rate may differ, which
    /// need no reconnect.
    public func isSameConnection(as other: Self) -> Bool {
        var theirs = other
        theirs.maxInflight = maxInflight
        theirs.inboundPerS = inboundPerS
        return self == theirs
    }
}
