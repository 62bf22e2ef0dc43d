#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// An OwnTracks `location` (https://owntracks.org/booklet/tech/json/, `_type=location`), so that
/// OwnTracks Recorder, Home Assistant and Node-RED's world map show the fleet with no bridge
/// (docs/protocol.md, "OwnTracks"). Their units: whole seconds, metres, km/h, degrees.
public struct OwnTracksLocation: Sendable, Equatable, Encodable {
    public var type = "location"
    /// Fix time, whole seconds since the epoch.
    public var tst: Int64
    public var lat: Double
    public var lon: Double
    /// Estimated horizontal error, metres.
    public var acc: Int64?
    /// Speed over ground, km/h.
    public var vel: Int64?
    /// Course over ground, degrees 0–359.
    public var cog: Int64?
    /// Altitude above sea level, metres.
    public var alt: Int64?
    /// Tracker id: the initials a map shows.
    public var tid: String
    /// Trigger: `t`, a timer- or movement-based report (the apps' move mode).
    public var t = "t"

    enum CodingKeys: String, CodingKey {
        case type = "_type", tst, lat, lon, acc, vel, cog, alt, tid, t
    }

    /// From a valid fix in the units of `pos` (ms, m/s, metres); a value that does not convert is
    /// left out, as OwnTracks makes every field but `lat`, `lon` and `tst` optional. Coordinates are
    /// kept to 1e-7 degree, as on `pos`.
    public init(
        timeMs: Int64, latitude: Double, longitude: Double, accuracyM: Double?, speedMS: Double?, course: Double?, altitudeM: Double?, tid: String
    ) {
        tst = timeMs / 1000
        lat = (latitude * 1e7).rounded() / 1e7
        lon = (longitude * 1e7).rounded() / 1e7
        acc = accuracyM.flatMap { Int64(roundingChecked: $0) }
        vel = speedMS.flatMap { Int64(roundingChecked: $0 * 3.6) }
        cog = course.flatMap { Int64(roundingChecked: $0) }.map { $0 % 360 }
        alt = altitudeM.flatMap { Int64(roundingChecked: $0) }
        self.tid = tid
    }

    public func json() throws -> [UInt8] {
        Array(try JSONEncoder.wire.encode(self))
    }

    /// `template` with `{fleet}` and `{unit}` replaced (`[owntracks] topic`).
    public static func topic(_ template: String, fleet: String, unit: String) -> String {
        template.replacing("{fleet}", with: fleet).replacing("{unit}", with: unit)
    }
}

/// An OwnTracks `lwt` (`_type=lwt`): the device went away; `tst` is when its connection began, as the
/// apps send it. The will of the OwnTracks feed's own connection (docs/protocol.md, "OwnTracks").
public struct OwnTracksLastWill: Sendable, Equatable, Encodable {
    public var type = "lwt"
    /// When the connection began, whole seconds since the epoch.
    public var tst: Int64

    enum CodingKeys: String, CodingKey {
        case type = "_type", tst
    }

    public init(connectedAtMs: Int64) {
        tst = connectedAtMs / 1000
    }

    public func json() throws -> [UInt8] {
        Array(try JSONEncoder.wire.encode(self))
    }
}
