/// What a unit runs, as the retained `status` announces it (docs/protocol.md, "Versions").
public enum SoftwareVersion {
    /// The release: `taxiunitd --version`, `taxiunitctl --version`, `status.software` and the Debian
    /// package's version (the Makefile reads it from this line; bump it here for a release).
    public static let software = "0.250"

    /// The wire protocol this release speaks (`status.protocol`): raised by an incompatible change to
    /// a payload, which then carries `"v"` with the new number (docs/protocol.md, "Versions").
    public static let wireProtocol = 2
}
