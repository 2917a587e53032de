// netres-bench: NetResilience's benchmarks. Each prints Markdown for BENCHMARKS.md.
//   netres-bench netlink [changes] [idle-seconds]   detection latency vs the netlink floor (root)
//   netres-bench idle-baseline                      the Swift runtime at rest (used by `netlink`)
//   netres-bench sip-recovery [flaps] [peer-flaps] [floor]   SIP recovery vs floor and baresip (root)
//   netres-bench runtime                            executor and keep-alive figures (RuntimeBenchmarks.swift)
import Foundation

let arguments = Array(CommandLine.arguments.dropFirst())
do {
    switch arguments.first {
    case "netlink":
        if try runInsideOwnNamespace(arguments: arguments) { break }
        let changes = arguments.count > 1 ? Int(arguments[1]) ?? 2000 : 2000
        let idle = arguments.count > 2 ? Int(arguments[2]) ?? 60 : 60
        try await NetlinkBenchmark(changes: changes, idleSeconds: idle).run()
    case "sip-recovery":
        let flaps = arguments.count > 1 ? Int(arguments[1]) ?? 50 : 50
        let peerFlaps = arguments.count > 2 ? Int(arguments[2]) ?? flaps : flaps
        let floor = arguments.count > 3 ? Int(arguments[3]) ?? 100 : 100
        try SIPRecoveryBenchmark(floorSamples: floor, flaps: flaps, peerFlaps: peerFlaps).run()
    case "runtime":
        await runRuntimeBenchmarks()
    case "idle-baseline":
        // The Swift runtime at rest, for the idle comparison: await something that never comes.
        let never = AsyncStream<Int>(bufferingPolicy: .unbounded, { _ in })
        for await _ in never {}
    default:
        print(
            "usage: netres-bench netlink [changes] [idle-seconds] | sip-recovery [flaps] [peer-flaps] [floor]"
                + " | runtime")
        exit(64)
    }
} catch {
    FileHandle.standardError.write(Data("netres-bench: \(error)\n".utf8))
    exit(1)
}
