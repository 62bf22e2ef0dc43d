extension StringProtocol {
    /// Without leading and trailing whitespace and line breaks: what Foundation's
    /// `trimmingCharacters(in: .whitespacesAndNewlines)` gives, in the standard library alone, so a
    /// module need not link Foundation and its ICU data for it (bench/README.md, "Footprint").
    public func trimmingWhitespace() -> String {
        guard let first = firstIndex(where: { !$0.isWhitespace }), let last = lastIndex(where: { !$0.isWhitespace }) else {
            return ""
        }
        return String(self[first...last])
    }
}
