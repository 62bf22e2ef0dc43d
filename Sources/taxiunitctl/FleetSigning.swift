import ArgumentParser

/// `gen-key` and `sign-config` moved to taxifleet, the fleet manager's console (docs/fleet.md):
/// they are for the office, not the taxi. The old names stay, hidden, to say where they went.
extension TaxiUnitCtl {
    struct GenKey: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "gen-key", shouldDisplay: false)
        @Argument(parsing: .allUnrecognized) var arguments: [String] = []

        func run() throws { try TaxiUnitCtl.movedToTaxifleet("gen-key") }
    }

    struct SignConfig: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "sign-config", shouldDisplay: false)
        @Argument(parsing: .allUnrecognized) var arguments: [String] = []

        func run() throws { try TaxiUnitCtl.movedToTaxifleet("sign-config") }
    }

    fileprivate static func movedToTaxifleet(_ name: String) throws {
        printToStandardError("taxiunitctl: \(name) moved to taxifleet, the fleet's console for the office: taxifleet \(name) takes the same options (docs/fleet.md)")
        throw ExitCode(64)
    }
}
