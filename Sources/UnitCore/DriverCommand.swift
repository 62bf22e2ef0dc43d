/// A driver's input parsed once, where it is written: a mapped key at configuration load, a word
/// typed to `taxiunitctl press` when it arrives. The engine only ever sees commands.
public struct DriverCommand: Sendable, Equatable {
    public enum Action: Sendable, Equatable {
        /// Who drives: login, logout, language, alert style (`DriverSession`).
        case session(SessionInput)
        /// What the driver does with the taxi and its job (`UnitStateMachine`).
        case job(DriverInput)
    }

    /// The words as written (`pob 2`, `lang next`): for the terminal's key labels and the log.
    public let text: String
    public let action: Action

    public init(text: String, action: Action) {
        self.text = text
        self.action = action
    }

    /// The words of `taxiunitctl press`, of a key's mapping, of anything that says what to do.
    public static func parse(_ text: String) -> Result<DriverCommand, DriverInput.ParseError> {
        if let session = SessionInput.parse(text) {
            return session.map { DriverCommand(text: text, action: .session($0)) }
        }
        return DriverInput.parse(text).map { DriverCommand(text: text, action: .job($0)) }
    }
}
