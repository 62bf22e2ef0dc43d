import StrictJSON
import UnitCore

/// `taxifleet status`: which units to show, in which order, as a table or JSON.
public struct StatusQuery: Sendable, Equatable {
    public enum SortKey: String, Sendable, CaseIterable {
        case unit, online, software, state, zone, fixAge = "fix-age", outbox
    }

    /// Only these units; empty: every unit.
    public var units: [String] = []
    /// Only units that are not online.
    public var offlineOnly = false
    /// Only units running this software release.
    public var software: String?
    /// Only units whose newest fix is older than this many seconds, or that have none.
    public var staleFixS: Double?
    public var sort: SortKey = .unit

    public init() {}

    public func rows(of state: FleetState, now: Int64) -> [UnitReport] {
        let selected = state.units.values.filter { report in
            (units.isEmpty || units.contains(report.unit))
                && (!offlineOnly || !report.online)
                && (software.map { report.software == $0 } ?? true)
                && (staleFixS.map { limit in report.fixAgeS(now: now).map { $0 > limit } ?? true } ?? true)
        }
        let byUnit = selected.sorted { $0.unit < $1.unit }
        switch sort {
        case .unit: return byUnit
        case .online: return byUnit.sortedStably { !$0.online && $1.online }
        case .software: return byUnit.sortedStably { ($0.software ?? "") < ($1.software ?? "") }
        case .state: return byUnit.sortedStably { ($0.state ?? "") < ($1.state ?? "") }
        case .zone: return byUnit.sortedStably { ($0.zone ?? "") < ($1.zone ?? "") }
        // Oldest fix first, units without one before all.
        case .fixAge: return byUnit.sortedStably { ($0.fixAgeS(now: now) ?? .infinity) > ($1.fixAgeS(now: now) ?? .infinity) }
        case .outbox: return byUnit.sortedStably { ($0.outboxDepth ?? 0) > ($1.outboxDepth ?? 0) }
        }
    }
}

extension Array {
    /// Sorted by `before`, keeping the present order among equals.
    func sortedStably(by before: (Element, Element) -> Bool) -> [Element] {
        enumerated().sorted { a, b in
            before(a.element, b.element) || (!before(b.element, a.element) && a.offset < b.offset)
        }.map(\.element)
    }
}

public enum StatusTable {
    public static let headers = ["UNIT", "ONLINE", "SINCE", "SOFTWARE", "PROTO", "CONFIG", "DRIVER", "STATE", "ZONE", "FIX AGE", "OUTBOX", "ASIDE"]

    /// One line per unit, columns padded to their widest cell; `-` where the unit did not say.
    public static func render(_ rows: [UnitReport], now: Int64) -> String {
        let grid: [[String]] = [headers] + rows.map { cells(of: $0, now: now) }
        var widths = Array(repeating: 0, count: headers.count)
        for row in grid {
            for (column, cell) in row.enumerated() { widths[column] = max(widths[column], cell.count) }
        }
        var lines: [String] = []
        for row in grid {
            var line = ""
            for (column, cell) in row.enumerated() {
                line += column == row.count - 1 ? cell : cell + String(repeating: " ", count: widths[column] - cell.count + 2)
            }
            lines.append(line)
        }
        return lines.joined(separator: "\n") + "\n"
    }

    static func cells(of report: UnitReport, now: Int64) -> [String] {
        let config = report.configVersions.sorted { $0.key < $1.key }.map { "\($0.key.prefix(1))\($0.value)" }.joined(separator: " ")
        let aside = report.setAside.values.reduce(0, +)
        return [
            report.unit,
            report.status == nil ? "?" : (report.online ? "yes" : "no"),
            report.since.map { duration(seconds: Double(now - $0) / 1000) } ?? "-",
            report.software ?? "-",
            report.protocolVersion.map(String.init) ?? "-",
            config.isEmpty ? "-" : config,
            report.driver ?? "-",
            report.state ?? "-",
            report.zone ?? "-",
            report.fixAgeS(now: now).map { duration(seconds: $0) } ?? "-",
            report.outboxDepth.map(String.init) ?? "-",
            aside == 0 ? "-" : String(aside),
        ]
    }

    /// `42s`, `7m05s`, `3h12m`, `2d04h`: short enough for a column, exact enough to act on.
    public static func duration(seconds: Double) -> String {
        let total = Int(max(0, seconds).rounded(.down))
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : String(value) }
        switch total {
        case ..<60: return "\(total)s"
        case ..<3600: return "\(total / 60)m\(two(total % 60))s"
        case ..<86400: return "\(total / 3600)h\(two(total % 3600 / 60))m"
        default: return "\(total / 86400)d\(two(total % 86400 / 3600))h"
        }
    }

    public static func json(_ rows: [UnitReport], now: Int64) -> JSONDocument {
        .array(rows.map { report in
            .members([
                ("unit", .string(report.unit)),
                ("online", .bool(report.online)),
                ("since", report.since.map { .int(Int($0)) }),
                ("software", report.software.map(JSONDocument.string)),
                ("protocol", report.protocolVersion.map(JSONDocument.int)),
                ("config_versions", .object(report.configVersions.sorted { $0.key < $1.key }.map { (key: $0.key, value: .int($0.value)) })),
                ("driver", report.driver.map(JSONDocument.string)),
                ("state", report.state.map(JSONDocument.string)),
                ("zone", report.zone.map(JSONDocument.string)),
                ("fix_age_s", report.fixAgeS(now: now).map { .number(literal: String(Int($0.rounded(.down)))) }),
                ("lat", report.lastPosition.map { .number(literal: "\($0.lat)") }),
                ("lon", report.lastPosition.map { .number(literal: "\($0.lon)") }),
                ("outbox", report.outboxDepth.map(JSONDocument.int)),
                ("aside", .object(report.setAside.sorted { $0.key < $1.key }.map { (key: $0.key, value: .int($0.value)) })),
            ])
        })
    }
}
