import UnitCore

/// A key map as a test writes it (`["a": "accept"]`), parsed as the configuration parses one.
public func driverCommands(_ keys: [String: String]) -> [String: DriverCommand] {
    keys.mapValues { text in
        guard case .success(let command) = DriverCommand.parse(text) else { preconditionFailure("\(text) is no driver input") }
        return command
    }
}
