// netres-bench: NetResilience's benchmarks. Each prints Markdown for BENCHMARKS.md.
//   netres-bench netlink [changes] [idle-seconds]   detection latency vs the netlink floor (root)
//   netres-bench idle-baseline                      the Swift runtime at rest (used by `netlink`)
//   netres-bench sip-recovery [floor-samples] [peer-flaps]   SIP recovery vs floor and baresip (root)
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
        let floor = arguments.count > 1 ? Int(arguments[1]) ?? 100 : 100
        let peerFlaps = arguments.count > 2 ? Int(arguments[2]) ?? 50 : 50
        try SIPRecoveryBenchmark(floorSamples: floor, peerFlaps: peerFlaps).run()
    case "runtime":
        await runRuntimeBenchmarks()
    case "idle-baseline":
        // The Swift runtime at rest, for the idle comparison: await something that never comes.
        let never = AsyncStream<Int>(bufferingPolicy: .unbounded, { _ in })
        for await _ in never {}
    default:
        print("usage: netres-bench netlink [changes] [idle-seconds] | sip-recovery [floor] [peer-flaps] | runtime")
        exit(64)
    }
} catch {
    FileHandle.standardError.write(Data("netres-bench: \(error)\n".utf8))
    exit(1)
}
