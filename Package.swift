// swift-tools-version:6.1
import PackageDescription

// Release builds of the programs a taxi runs (`make release`, which bench/ uses too: the static
// runtime and one section per function, RELEASE_FLAGS) are laid out for a small resident set
// (bench/README.md, "Memory"):
// relative relocations packed (DT_RELR, glibc 2.36), no dynamic symbol table for our own objects
// (the static runtime's -export-dynamic would map 1.5 MB of it; nothing looks them up at run time),
// and the code the daemon runs placed together in the order of scripts/taxiunitd.order, which
// scripts/symbol-order.sh regenerates.
let packageRoot = String(#filePath.dropLast("Package.swift".count))
let compactRelease: [LinkerSetting] = [
    .unsafeFlags([
        "-use-ld=lld",
        "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs", "-Xlinker", "--no-export-dynamic",
        "-Xlinker", "--symbol-ordering-file=\(packageRoot)scripts/taxiunitd.order",
        "-Xlinker", "--no-warn-symbol-ordering",
    ], .when(platforms: [.linux], configuration: .release)),
]

// The release build does not autolink full Foundation (Makefile, NO_FOUNDATION_AUTOLINK: taxiunitctl is
// 20.1 MB without it and its ICU data, 63.1 MB with): the programs that use it (taxifleet, dispatchsim,
// the test harness) link it by name, with the libraries its import would have brought along.
let fullFoundation: [LinkerSetting] = [
    "Foundation", "FoundationInternationalization", "CoreFoundation", "_FoundationICU",
    "FoundationEssentials", "_FoundationCollections", "_FoundationCShims", "swiftDispatch", "dispatch", "BlocksRuntime",
].map {
    .linkedLibrary($0, .when(platforms: [.linux], configuration: .release))
}

let package = Package(
    name: "taxiunitd",
    platforms: [.macOS(.v15)],  // Synchronization.Mutex
    products: [
        .executable(name: "taxiunitd", targets: ["taxiunitd"]),
        .executable(name: "taxiunitctl", targets: ["taxiunitctl"]),
        .executable(name: "taxifleet", targets: ["taxifleet"]),
        .executable(name: "dispatchsim", targets: ["dispatchsim"]),
        .executable(name: "terminal-latency-bench", targets: ["TerminalLatencyBench"]),
    ],
    dependencies: [
        .package(url: "https://github.com/LebJe/TOMLKit.git", from: "0.6.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/x-sheep/swift-property-based.git", from: "2.0.1"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "3.12.3"),
        // X.509 and PEM: what `--check` reads of the TLS files, and PEM (SPKI/PKCS#8) Ed25519 keys.
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.4"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        // taxifleet serve's live fleet page.
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
    ],
    targets: [
        // C libraries, found through pkg-config; apt names them for a fresh Debian 12.
        .systemLibrary(name: "CGPS", pkgConfig: "libgps", providers: [.apt(["libgps-dev"])]),
        .systemLibrary(name: "CMosquitto", pkgConfig: "libmosquitto", providers: [.apt(["libmosquitto-dev"])]),
        .systemLibrary(name: "CSystemd", pkgConfig: "libsystemd", providers: [.apt(["libsystemd-dev"])]),
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        // The one C shim: the Linux and glibc calls Swift's Glibc module leaves out (adjtimex,
        // mallopt, pthread_setname_np).
        .target(name: "CTaxiUnitLinux"),

        // Strict JSON: the parser that refuses what a signature could disagree about, the canonical
        // form, and the one byte writer (and string escaper) every hand-written message uses.
        .target(name: "StrictJSON"),
        // The wire protocol (docs/protocol.md): the topic catalogue, every message type, the
        // envelope of the unit's messages, the inbound decoder and its limits. Pure.
        .target(name: "TaxiProtocol", dependencies: ["StrictJSON"]),
        // Pure domain: no IO, no clock, no threads, no logging.
        .target(name: "UnitCore", dependencies: ["TaxiProtocol"]),
        .target(name: "UnitConfig", dependencies: [
            "TaxiProtocol", "UnitCore", "DriverKeys", "StrictJSON",
            .product(name: "TOMLKit", package: "TOMLKit"),
            .product(name: "X509", package: "swift-certificates"),
            .product(name: "SwiftASN1", package: "swift-asn1"),
            .product(name: "Crypto", package: "swift-crypto"),
        ]),
        // Fleet configuration and commands: parsing, signatures, version ordering, merging. Pure.
        // The one core above the machines: every input, one step (UnitCoordinator.swift). Pure.
        .target(name: "UnitCoordination", dependencies: ["TaxiProtocol", "UnitCore", "UnitConfig", "FleetControl"]),
        .target(name: "FleetControl", dependencies: [
            "TaxiProtocol", "UnitCore", "UnitConfig", "StrictJSON",
            .product(name: "Crypto", package: "swift-crypto"),
            // PBKDF2 for the drivers' PIN hashes.
            .product(name: "_CryptoExtras", package: "swift-crypto"),
        ]),

        // Heartbeats of the adapters' library threads, read by the systemd watchdog.
        .target(name: "Liveness"),
        // The adapters' POSIX layer: the one EINTR/errno wrapper and the one blocking-thread type.
        .target(name: "Platform", dependencies: ["CTaxiUnitLinux", "Liveness"]),
        // An adapter as a Service: apart from Platform, which taxiunitctl links whole (one object per
        // module in a release build), so that ServiceLifecycle stays out of it.
        .target(name: "AdapterLifecycle", dependencies: [
            "Platform",
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        ]),
        // stderr lines with syslog priority prefixes for journald, bursts of repeats rate-limited.
        .target(name: "JournalLog", dependencies: [
            "Platform",
            .product(name: "Logging", package: "swift-log"),
        ]),

        // One adapter per outside thing.
        .target(name: "SystemdNotify", dependencies: ["CSystemd"]),
        .target(name: "GPSReader", dependencies: [
            "CGPS", "UnitCore", "Liveness", "Platform",
            .product(name: "Logging", package: "swift-log"),
        ]),
        .target(name: "MQTTLink", dependencies: [
            "CMosquitto", "Liveness", "Platform",
            .product(name: "Logging", package: "swift-log"),
        ]),
        .target(name: "LocalCache", dependencies: ["CSQLite", "TaxiProtocol", "UnitCore"]),
        .target(name: "ControlSocket", dependencies: ["Platform"]),

        // The driver's buttons and serial terminal: pure decoding and drawing, then the two device adapters.
        .target(name: "DriverKeys"),
        .target(name: "DriverDisplay", dependencies: ["TaxiProtocol", "UnitCore", "UnitConfig"]),
        .target(name: "DriverDevices", dependencies: [
            "DriverKeys", "DriverDisplay", "Platform", "TaxiProtocol", "UnitCore",
            .product(name: "Logging", package: "swift-log"),
        ]),

        // The imperative shell: runs UnitCore against the adapters.
        .target(name: "UnitRuntime", dependencies: [
            "TaxiProtocol", "UnitCore", "UnitCoordination", "UnitConfig", "FleetControl", "GPSReader", "MQTTLink", "LocalCache", "ControlSocket",
            "DriverDevices", "StrictJSON", "DriverDisplay", "SystemdNotify", "Liveness", "CTaxiUnitLinux", "Platform", "DriverKeys",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "Metrics", package: "swift-metrics"),
            .product(name: "CoreMetrics", package: "swift-metrics"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        ]),

        .executableTarget(name: "taxiunitd", dependencies: [
            "UnitRuntime", "UnitConfig", "UnitCore", "LocalCache", "GPSReader", "ControlSocket", "SystemdNotify", "JournalLog",
            "CTaxiUnitLinux", "Platform", "AdapterLifecycle",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "Metrics", package: "swift-metrics"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        ], linkerSettings: compactRelease),
        .executableTarget(name: "taxiunitctl", dependencies: [
            "ControlSocket", "FleetControl", "UnitConfig", "UnitCore", "Platform", "StrictJSON",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ], linkerSettings: compactRelease),

        // The fleet manager's console, for the office: what it decides and shows is FleetConsole
        // (pure), the broker is MQTTLink.
        .target(name: "FleetConsole", dependencies: [
            "TaxiProtocol", "UnitCore", "UnitConfig", "FleetControl", "StrictJSON",
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "SwiftASN1", package: "swift-asn1"),
        ]),
        .executableTarget(name: "taxifleet", dependencies: [
            "TaxiProtocol", "FleetConsole", "FleetControl", "UnitConfig", "UnitCore", "MQTTLink", "Platform", "StrictJSON",
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "Hummingbird", package: "hummingbird"),
        ], linkerSettings: fullFoundation),

        // The reference dispatcher (a simulator for the demo, the end-to-end tests and the fleet
        // benchmark): a pure core and a small shell on the project's MQTT adapter.
        .target(name: "DispatchCore", dependencies: ["TaxiProtocol"]),
        .executableTarget(name: "dispatchsim", dependencies: [
            "TaxiProtocol", "DispatchCore", "UnitCore", "UnitConfig", "MQTTLink", "AdapterLifecycle",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        ], linkerSettings: fullFoundation),

        // Starts real mosquitto, gpsd (via gpsfake), socat and the daemon in their own process groups.
        .target(name: "TestHarness", dependencies: [
            "TaxiProtocol", "MQTTLink", "ControlSocket", "UnitCore", "UnitConfig", "LocalCache", "DriverKeys",
            .product(name: "Logging", package: "swift-log"),
        ], path: "Tests/TestHarness"),

        // bench/terminal-latency.sh: key press to job/reply PUBLISH on the real parts.
        .executableTarget(name: "TerminalLatencyBench", dependencies: [
            "TestHarness", "MQTTLink", "ControlSocket", "LocalCache", "DriverKeys",
            .product(name: "Logging", package: "swift-log"),
        ], path: "bench/terminal-latency", linkerSettings: fullFoundation),

        .testTarget(name: "UnitCoreTests", dependencies: [
            "TaxiProtocol", "UnitCore", "StrictJSON",
            .product(name: "PropertyBased", package: "swift-property-based"),
        ]),
        // Property-based fuzzing of every decoder and encoder that reads outside data (FuzzBudget).
        .testTarget(name: "FuzzTests", dependencies: [
            "TaxiProtocol", "UnitCore", "UnitConfig", "DriverKeys", "GPSReader", "StrictJSON",
            .product(name: "PropertyBased", package: "swift-property-based"),
        ]),
        .testTarget(name: "UnitConfigTests", dependencies: [
            "TaxiProtocol", "UnitConfig", "UnitCore", "DriverKeys", "TestHarness",
            .product(name: "Crypto", package: "swift-crypto"),
        ]),
        .testTarget(name: "DispatchCoreTests", dependencies: ["TaxiProtocol", "DispatchCore", "UnitCore"]),
        .testTarget(name: "EndToEndTests", dependencies: ["TestHarness", "MQTTLink", "ControlSocket"]),
        .testTarget(name: "DriverKeysTests", dependencies: [
            "DriverKeys",
            .product(name: "PropertyBased", package: "swift-property-based"),
        ]),
        .testTarget(name: "DriverDisplayTests", dependencies: ["TaxiProtocol", "DriverDisplay", "UnitCore", "TestHarness"]),
        .testTarget(name: "DriverDevicesTests", dependencies: ["DriverDevices", "DriverKeys", "DriverDisplay", "TaxiProtocol", "TestHarness"]),
        .testTarget(name: "FleetControlTests", dependencies: [
            "TaxiProtocol", "FleetControl", "UnitConfig", "UnitCore", "UnitCoordination", "StrictJSON",
            .product(name: "Crypto", package: "swift-crypto"),
        ]),
        .testTarget(name: "FleetConsoleTests", dependencies: [
            "TaxiProtocol", "FleetConsole", "FleetControl", "UnitConfig", "UnitCore", "StrictJSON",
            .product(name: "Crypto", package: "swift-crypto"),
        ]),
        .testTarget(name: "SystemServiceTests", dependencies: [
            "JournalLog", "Liveness", "ControlSocket", "Platform",
            .product(name: "Logging", package: "swift-log"),
        ]),
        .testTarget(name: "GPSReaderTests", dependencies: ["GPSReader", "TaxiProtocol", "UnitCore", "TestHarness"]),
        .testTarget(name: "LocalCacheTests", dependencies: [
            "TaxiProtocol", "LocalCache", "UnitCore", "TestHarness", "UnitRuntime",
            // sqlite3_db_status: what a connection's page cache holds.
            "CSQLite",
        ]),
        .testTarget(name: "MQTTLinkTests", dependencies: [
            "MQTTLink", "TestHarness",
            .product(name: "Logging", package: "swift-log"),
        ]),
        .testTarget(name: "UnitRuntimeTests", dependencies: [
            "TaxiProtocol", "UnitRuntime", "UnitCore", "DriverKeys", "UnitConfig", "LocalCache", "MQTTLink", "GPSReader", "ControlSocket", "DriverDisplay",
            "TestHarness",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "Metrics", package: "swift-metrics"),
            // A second connection that holds the write lock: a store that refuses writes, without root.
            "CSQLite",
        ]),
        .testTarget(name: "IntegrationTests", dependencies: [
            "TaxiProtocol", "TestHarness", "MQTTLink", "LocalCache", "UnitCore", "ControlSocket", "FleetControl", "DriverKeys",
            .product(name: "Logging", package: "swift-log"),
        ]),
    ]
)
