// swift-tools-version:6.2
import PackageDescription

/// Settings every Swift target shares: Swift 6 mode (complete concurrency checking) plus the
/// upcoming features that keep module boundaries honest. Warnings are errors.
let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
    .treatAllWarnings(as: .error),
]

let log = Target.Dependency.product(name: "Logging", package: "swift-log")
let lifecycle = Target.Dependency.product(name: "ServiceLifecycle", package: "swift-service-lifecycle")
let metrics = Target.Dependency.product(name: "Metrics", package: "swift-metrics")

let package = Package(
    name: "swift-net-resilience",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "NetResilience", targets: ["NetResilience"]),
        .library(name: "ResilienceTesting", targets: ["ResilienceTesting"]),
        .library(name: "SIPPlugin", targets: ["SIPPlugin"]),
        .library(name: "HTTPGate", targets: ["HTTPGate"]),
        .library(name: "ResiliencePolicyFile", targets: ["ResiliencePolicyFile"]),
        .library(name: "NetworkLab", targets: ["NetworkLab"]),
        .executable(name: "netres", targets: ["ResilienceCLI"]),
        .executable(name: "netres-bench", targets: ["NetresBench"]),
        .executable(name: "netres-ctl", targets: ["NetresCtl"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.3"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        // `swift package generate-documentation`: DocC for every public module, checked in `make test`.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        // The C door to libnl-3. Only NetlinkMonitor imports it.
        .systemLibrary(
            name: "CNetlink",
            pkgConfig: "libnl-route-3.0",
            providers: [.apt(["libnl-3-dev", "libnl-route-3-dev"])]
        ),
        // Vocabulary: network facts, path, transitions, app state, services, actions, plugin API.
        .target(name: "ResilienceCore", dependencies: [log, lifecycle], swiftSettings: strictSettings),
        // The pure rules engine and the built-in default policy.
        .target(name: "ResilienceRules", dependencies: ["ResilienceCore"], swiftSettings: strictSettings),
        // Policy files (YAML) with located errors.
        .target(
            name: "ResiliencePolicyFile",
            dependencies: ["ResilienceCore", "ResilienceRules", .product(name: "Yams", package: "Yams")],
            resources: [.copy("default-policy.yaml")],
            swiftSettings: strictSettings
        ),
        // Executor, keep-alive scheduler and the ResilienceManager facade.
        .target(
            name: "ResilienceRuntime",
            dependencies: [
                "ResilienceCore", "ResilienceRules", log, metrics, lifecycle,
                .product(name: "HeapModule", package: "swift-collections"),
            ],
            swiftSettings: strictSettings
        ),
        // The only importer of CNetlink.
        .target(
            name: "NetlinkMonitor", dependencies: ["CNetlink", "ResilienceCore", log], swiftSettings: strictSettings),
        // Fakes for users' own tests: scripted network, recording plugin, manual clock.
        .target(
            name: "ResilienceTesting",
            dependencies: ["ResilienceCore", log],
            swiftSettings: strictSettings
        ),
        // Umbrella a client stack imports.
        .target(
            name: "NetResilience",
            dependencies: ["ResilienceCore", "ResilienceRules", "ResilienceRuntime", "NetlinkMonitor"],
            swiftSettings: strictSettings
        ),
        // Protocol plugins: ordinary targets under Plugins/, not SwiftPM build-tool plugins.
        .target(
            name: "SIPPlugin",
            dependencies: [
                "ResilienceCore", log, lifecycle, metrics,
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
            ],
            path: "Plugins/SIPPlugin",
            swiftSettings: strictSettings
        ),
        // A gate around the app's HTTP client: drain-http and open-http.
        .target(
            name: "HTTPGate", dependencies: ["ResilienceCore", log], path: "Plugins/HTTPGate",
            swiftSettings: strictSettings),
        // `netres run`: config file, assembly, control socket, push-token store.
        .target(
            name: "ResilienceDaemon",
            dependencies: [
                "ResilienceCore", "ResilienceRules", "ResiliencePolicyFile", "ResilienceRuntime", "NetlinkMonitor",
                "SIPPlugin", "ResilienceHooks", "ResilienceOutput", .product(name: "Yams", package: "Yams"), log,
                lifecycle, metrics,
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            swiftSettings: strictSettings
        ),
        // What `netres watch`, `status` and `run` print: WatchRecord and log-line formats and the project's
        // one JSON writer. Package access only, so the CLI's watch/status need not link the daemon.
        .target(
            name: "ResilienceOutput", dependencies: ["ResilienceCore", "ResilienceRuntime"],
            swiftSettings: strictSettings),
        // Hook scripts run on path transitions.
        .target(
            name: "ResilienceHooks", dependencies: ["ResilienceCore", "ChildProcesses", "CProcessControl", log],
            swiftSettings: strictSettings),
        .executableTarget(
            name: "ResilienceCLI",
            dependencies: [
                "ResilienceCore", "ResilienceRules", "ResiliencePolicyFile", "ResilienceRuntime", "NetlinkMonitor",
                "ResilienceDaemon", "ResilienceHooks", "ResilienceOutput", "NetworkLab",
                .product(name: "Yams", package: "Yams"),
                log, lifecycle, .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strictSettings
        ),
        // `netres-ctl`: the control-socket client alone, linking no Foundation, so it starts in a
        // few milliseconds (a push handler runs it per push); `netres ctl` is the same with help texts.
        .executableTarget(name: "NetresCtl", swiftSettings: strictSettings),
        .executableTarget(
            name: "NetresBench",
            dependencies: [
                "ChildProcesses", "ResilienceCore", "ResilienceRuntime", "ResilienceRules", "ResilienceTesting",
                "NetlinkMonitor", "NetworkLab", "ResilienceDaemon", log,
            ],
            path: "Benchmarks/NetresBench",
            swiftSettings: strictSettings
        ),
        // posix_spawn without a shell: hook scripts, and tests and benchmarks that drive real processes.
        .target(name: "ChildProcesses", swiftSettings: strictSettings),
        // prctl(PR_SET_CHILD_SUBREAPER) and pipe2(O_CLOEXEC), which Swift's Glibc module lacks.
        .target(name: "CProcessControl"),
        // Public fault-injection kit: namespaces, veth links, faults without netem, a Kamailio registrar.
        .target(
            name: "NetworkLab", dependencies: ["ChildProcesses", "CProcessControl", "ResilienceCore"],
            swiftSettings: strictSettings),
        .testTarget(name: "ResilienceCoreTests", dependencies: ["ResilienceCore"], swiftSettings: strictSettings),
        .testTarget(
            name: "ResilienceRulesTests",
            dependencies: ["ResilienceCore", "ResilienceRules", "ResiliencePolicyFile"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "ResilienceRuntimeTests",
            dependencies: [
                "ResilienceCore", "ResilienceRules", "ResilienceRuntime", "ResilienceTesting", log, lifecycle, metrics,
                .product(name: "MetricsTestKit", package: "swift-metrics"),
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "NetlinkMonitorTests",
            dependencies: ["NetlinkMonitor", "ResilienceCore", log],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "FaultInjectionTests",
            // ResilienceDaemon: ControlClient opens the idle control connections of the crowd test.
            dependencies: [
                "ChildProcesses", "NetlinkMonitor", "NetworkLab", "ResilienceCore", "ResilienceDaemon",
                "ResilienceTesting", log,
            ],
            // The sipp scenarios are read through #filePath (CallFaultLab), not bundled.
            exclude: ["Resources"],
            swiftSettings: strictSettings
        ),
        // ResilienceTesting: ManualTaskExecutor (the lab's waits hold no thread).
        .testTarget(
            name: "NetworkLabTests", dependencies: ["NetworkLab", "ResilienceTesting"], swiftSettings: strictSettings),
        .testTarget(
            // ResilienceTesting: ManualTaskExecutor and RecordingLogHandler (a hook run holds no thread).
            name: "ResilienceHooksTests",
            dependencies: ["ResilienceHooks", "ResilienceCore", "ResilienceTesting", log],
            swiftSettings: strictSettings),
        .testTarget(
            name: "ResilienceCLITests",
            dependencies: ["ChildProcesses", "ResilienceCore"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "ResilienceDaemonTests",
            dependencies: [
                "ChildProcesses", "ResilienceDaemon", "ResilienceCore", "ResilienceOutput", "ResiliencePolicyFile",
                "ResilienceRuntime",
                "SIPPlugin", "ResilienceTesting", "ResilienceRules", log, lifecycle, metrics,
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "SIPPluginTests",
            // NetworkLab: the Kamailio registrar on loopback (LabRegistrar), polling (eventually).
            // ResilienceDaemon: the `netres run` integration test runs against that registrar.
            dependencies: [
                "ChildProcesses", "NetworkLab", "SIPPlugin", "ResilienceCore", "ResilienceDaemon", "ResilienceRuntime",
                "ResilienceTesting", log, lifecycle, metrics, .product(name: "NIOCore", package: "swift-nio"),
                // The SIP article's example imports the umbrella, as an app does.
                "NetResilience",
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                // ByteToMessageDecoderVerifier for the stream decoder.
                .product(name: "NIOTestUtils", package: "swift-nio"),
                // EmbeddedChannel: the read-coalescing handler on a hand-advanced clock.
                .product(name: "NIOEmbedded", package: "swift-nio"),
                // A TLS registrar stand-in and a TLS peer reaching a Contact's listener.
                .product(name: "NIOPosix", package: "swift-nio"), .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            // The Kamailio config template is read through #filePath, not bundled.
            exclude: ["Resources"],
            swiftSettings: strictSettings
        ),
        // Every Swift block of README.md and the DocC articles, compiled; a test fails when a block
        // and its copy drift (DocBlocks.swift). Blocks that are whole tests run in their module's suite.
        .testTarget(
            name: "DocumentationTests",
            dependencies: [
                "NetResilience", "ResilienceCore", "ResilienceRules", "ResilienceRuntime", "ResiliencePolicyFile",
                "HTTPGate", "SIPPlugin", "ResilienceTesting", "NetworkLab", log, lifecycle,
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "HTTPGateTests",
            // A real HTTP/1.1 server (NIOHTTP1) and URLSession on loopback.
            dependencies: [
                "HTTPGate", "ResilienceCore", "ResilienceRuntime", "ResilienceTesting", log, lifecycle,
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            swiftSettings: strictSettings
        ),
    ]
)

// libFuzzer targets (Fuzz/README.md). They exist only when NETRES_FUZZER_LIBRARY names libFuzzer's
// runtime without `main` (libclang_rt.fuzzer_no_main-ARCH.a; `scripts/fuzz.sh` finds it and builds
// in .build-fuzz), so the ordinary build and `swift test` never see them. Then this package's own
// modules are compiled with `-sanitize=fuzzer` (coverage for libFuzzer), and each target's
// `main.swift` hands its test function to libFuzzer's driver through CFuzzerDriver. Linking
// `-sanitize=fuzzer` instead would force in libFuzzer's `main`, which clashes with SwiftPM's.
if let fuzzerLibrary = Context.environment["NETRES_FUZZER_LIBRARY"], !fuzzerLibrary.isEmpty {
    for target in package.targets where target.type != .system {
        target.swiftSettings = (target.swiftSettings ?? []) + [.unsafeFlags(["-sanitize=fuzzer"])]
    }
    let fuzzTargets: [(name: String, dependencies: [Target.Dependency])] = [
        ("FuzzSIPParser", ["SIPPlugin"]),
        ("FuzzSIPFramer", ["SIPPlugin", .product(name: "NIOCore", package: "swift-nio")]),
        ("FuzzDigestChallenge", ["SIPPlugin"]),
        ("FuzzSDP", ["SIPPlugin"]),
        ("FuzzPolicyFile", ["ResiliencePolicyFile", "FuzzSupport"]),
        ("FuzzDaemonConfig", ["ResilienceDaemon", "ResiliencePolicyFile", "FuzzSupport"]),
    ]
    package.targets.append(.target(name: "CFuzzerDriver", path: "Fuzz/CFuzzerDriver"))
    // Checks more than one target makes.
    package.targets.append(
        .target(
            name: "FuzzSupport", dependencies: ["ResiliencePolicyFile"], path: "Fuzz/FuzzSupport",
            swiftSettings: strictSettings))
    for target in fuzzTargets {
        package.targets.append(
            .executableTarget(
                name: target.name, dependencies: ["CFuzzerDriver"] + target.dependencies,
                path: "Fuzz/\(target.name)", swiftSettings: strictSettings + [.unsafeFlags(["-sanitize=fuzzer"])],
                // libFuzzer is C++.
                linkerSettings: [.unsafeFlags(["-Xlinker", fuzzerLibrary]), .linkedLibrary("stdc++")]
            ))
        package.products.append(.executable(name: target.name, targets: [target.name]))
    }
}
