import Foundation

/// How many random cases each fuzz property runs. `make test` runs the base counts (at least 100k
/// cases in all); `make fuzz` sets `FUZZ_SCALE=10` for a million. Each property prints its count on
/// a line of its own (`fuzz: NAME N cases`) so the Makefile can add them up.
enum FuzzBudget {
    static let scale: Int = {
        guard let text = ProcessInfo.processInfo.environment["FUZZ_SCALE"], let scale = Int(text), (1...1000).contains(scale) else { return 1 }
        return scale
    }()

    /// `base` scaled, announced under `name`.
    static func cases(_ base: Int, _ name: String) -> Int {
        let count = base * scale
        print("fuzz: \(name) \(count) cases")
        return count
    }
}
