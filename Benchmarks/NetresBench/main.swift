// netres-bench: NetResilience's benchmarks. Each prints Markdown for BENCHMARKS.md.
//   netres-bench netlink [changes] [idle-seconds]   detection latency vs the netlink floor (root)
//   netres-bench idle-baseline                      the Swift runtime at rest (used by `netlink`)
//   netres-bench sip-recovery [flaps] [peer-flaps|none] [floor] [changes=N] [gap=MS] [capture] [log=LEVEL] [transport=udp|tcp|tls]
//                                                   SIP recovery vs floor and baresip (root)
//   netres-bench scale N[,N…] [idle=S] [rates=R,R…] [ceiling=C]   N accounts on one registrar vs sipp and baresip (root)
//   netres-bench calls [flaps] [changes] [peer|none] [relay]   call recovery vs floor and baresip (root);
//                                                   `relay`: media through rtpengine
//   netres-bench runtime                            executor and wake-up figures (RuntimeBenchmarks.swift)
//   netres-bench idle-daemon [seconds]              a daemon at rest after hooks, a flap and a wait (root)
//   netres-bench failover [rounds] [accounts] [two-flow accounts]  primary registrar killed → all bound at the backup (root)
//   netres-bench push [calls] [idle-seconds]        push → 180 vs the registrar round trip; asleep vs background (root)
//   netres-bench nat [minutes] [rebindings]         idle reachability behind NAT, rebinding → binding and media (root)
//   netres-bench amnesia [udp=N] [tcp=M] [ping=S]   binding checks: their cost, a registrar's restart (root)
//   netres-bench memory [accounts=N] [flood=S] [after=S] [soak=MIN] [fault-every=S]
//                                                   RSS before, during and after a flood; across a soak (root)
//   netres-bench background-restart [after=S]       a registrar's restart in the background, UDP vs TCP (root)
//   netres-bench pjsip [changes]                    pjsua2 alone, told, and with netres: address change → binding, re-INVITE (root)
//   netres-bench ctl [runs] [pushes]                netres-ctl vs netres ctl start; push over a session → REGISTER (root)
import Foundation
import ResilienceDaemon

let arguments = Array(CommandLine.arguments.dropFirst())
do {
    switch arguments.first {
    case "netlink":
        if try await runInsideOwnNamespace(arguments: arguments) { break }
        let changes = arguments.count > 1 ? Int(arguments[1]) ?? 2000 : 2000
        let idle = arguments.count > 2 ? Int(arguments[2]) ?? 60 : 60
        try await NetlinkBenchmark(changes: changes, idleSeconds: idle).run()
    case "sip-recovery":
        try await sipRecoveryBenchmark(arguments: Array(arguments.dropFirst())).run()
    case "calls":
        let words = Array(arguments.dropFirst())
        var benchmark = CallRecoveryBenchmark()
        benchmark.flaps = max(1, min(words.first.flatMap { Int($0) } ?? 30, 500))
        benchmark.addressChanges = max(0, min(words.dropFirst().first.flatMap { Int($0) } ?? 2, 20))
        benchmark.peer = words.dropFirst(2).first != "none"
        benchmark.relay = words.contains("relay")
        try await benchmark.run()
    case "runtime":
        await runRuntimeBenchmarks()
    case "idle-daemon":
        let seconds = arguments.count > 1 ? Int(arguments[1]) ?? 60 : 60
        try await IdleDaemonBenchmark(seconds: min(max(seconds, 10), 600)).run()
    case "failover":
        let words = Array(arguments.dropFirst())
        var benchmark = FailoverBenchmark()
        benchmark.rounds = max(1, min(words.first.flatMap { Int($0) } ?? 3, 50))
        benchmark.accounts = max(2, min(words.dropFirst().first.flatMap { Int($0) } ?? 100, 1000))
        benchmark.twoFlowAccounts = max(0, min(words.dropFirst(2).first.flatMap { Int($0) } ?? 10, 100))
        try await benchmark.run()
    case "push":
        let calls = arguments.count > 1 ? Int(arguments[1]) ?? 10 : 10
        let idle = arguments.count > 2 ? Int(arguments[2]) ?? 600 : 600
        try await PushBenchmark(calls: max(1, min(calls, 100)), idleSeconds: max(10, min(idle, 3600))).run()
    case "nat":
        let minutes = arguments.count > 1 ? Int(arguments[1]) ?? 10 : 10
        let rebindings = arguments.count > 2 ? Int(arguments[2]) ?? 10 : 10
        try await NATBenchmark(minutes: min(max(minutes, 1), 120), rebindings: min(max(rebindings, 1), 100)).run()
    case "amnesia":
        var benchmark = AmnesiaBenchmark()
        for (name, value) in try numberOptions(arguments.dropFirst(), of: "amnesia") {
            switch name {
            case "udp": benchmark.udpAccounts = min(max(value, 0), 1000)
            case "tcp": benchmark.tcpAccounts = min(max(value, 0), 200)
            case "ping": benchmark.flowPing = min(max(value, 2), 600)
            default: throw BenchError("unknown amnesia option \(name)")
            }
        }
        try await benchmark.run()
    case "memory":
        var benchmark = MemoryBenchmark()
        for (name, value) in try numberOptions(arguments.dropFirst(), of: "memory") {
            guard let (field, range) = MemoryBenchmark.options[name] else {
                throw BenchError("unknown memory option \(name)")
            }
            benchmark[keyPath: field] = min(max(value, range.lowerBound), range.upperBound)
        }
        try await benchmark.run()
    case "background-restart":
        var benchmark = BackgroundRestartBenchmark()
        for option in arguments.dropFirst() {
            guard option.hasPrefix("after="), let value = Int(option.dropFirst(6)) else {
                throw BenchError("unknown background-restart option \(option)")
            }
            benchmark.after = min(max(value, 0), 590)
        }
        try await benchmark.run()
    case "pjsip":
        var benchmark = PJSIPBenchmark()
        benchmark.changes = max(1, min(arguments.dropFirst().first.flatMap { Int($0) } ?? 5, 50))
        try await benchmark.run()
    case "ctl":
        var benchmark = ControlClientBenchmark()
        benchmark.runs = max(5, min(arguments.dropFirst().first.flatMap { Int($0) } ?? 50, 1000))
        benchmark.pushes = max(1, min(arguments.dropFirst(2).first.flatMap { Int($0) } ?? 20, 200))
        try await benchmark.run()
    case "scale":
        try await scaleBenchmark(arguments: Array(arguments.dropFirst())).run()
    case "idle-baseline":
        // The Swift runtime at rest, for the idle comparison: await something that never comes.
        // `idle-baseline quiet` first takes the runtime off libdispatch, as `netres` does.
        // `… sleep` does one 10 ms `Task.sleep` first (does a sleep start libdispatch's monitor?).
        if arguments.dropFirst().first == "quiet" { QuietConcurrencyRuntime.install() }
        if arguments.last == "sleep" { try await Task.sleep(for: .milliseconds(10)) }
        let never = AsyncStream<Int>(bufferingPolicy: .unbounded, { _ in })
        for await _ in never {}
    default:
        print(
            "usage: netres-bench netlink [changes] [idle-seconds]"
                + " | sip-recovery [flaps] [peer-flaps|none] [floor] [changes=N] [gap=MS] [capture] [log=LEVEL] [transport=udp|tcp|tls] | runtime"
                + " | scale N[,N…] [idle=S] [rates=R,R…] [ceiling=C] | idle-daemon [seconds] | calls [flaps] [changes] [peer|none] [relay]"
                + " | failover [rounds] [accounts] [two-flow accounts]"
                + " | push [calls] [idle-seconds]"
                + " | nat [minutes] [rebindings]"
                + " | amnesia [udp=N] [tcp=M] [ping=S]"
                + " | memory [accounts=N] [flood=S] [after=S] [soak=MIN] [fault-every=S]"
                + " | background-restart [after=S]"
        )
        exit(64)
    }
} catch {
    FileHandle.standardError.write(Data("netres-bench: \(error)\n".utf8))
    exit(1)
}

/// `sip-recovery [flaps] [peer-flaps|none] [floor] [changes=N] [gap=MS] [capture] [log=LEVEL] [transport=udp|tcp|tls]`: positional
/// counts first (`none` leaves baresip out), then options in any order. Address changes are
/// bounded to 1...100.
func sipRecoveryBenchmark(arguments: [String]) throws -> SIPRecoveryBenchmark {
    let positional = arguments.prefix { !$0.contains("=") && $0 != "capture" }
    let options = arguments.dropFirst(positional.count)
    let flaps = positional.count > 0 ? Int(positional[0]) ?? 50 : 50
    let peerFlaps: Int? = positional.count > 1 ? (positional[1] == "none" ? nil : Int(positional[1]) ?? flaps) : flaps
    let floor = positional.count > 2 ? Int(positional[2]) ?? 100 : 100
    var benchmark = SIPRecoveryBenchmark(floorSamples: floor, flaps: flaps, peerFlaps: peerFlaps)
    for option in options {
        if option == "capture" {
            benchmark.capture = true
        } else if option.hasPrefix("changes="), let count = Int(option.dropFirst(8)), (1...100).contains(count) {
            benchmark.addressChanges = count
        } else if option.hasPrefix("gap="), let millis = Double(option.dropFirst(4)), (0...1000).contains(millis) {
            benchmark.addressChangeGap = .microseconds(Int64(millis * 1000))
        } else if option.hasPrefix("transport="), ["udp", "tcp", "tls"].contains(String(option.dropFirst(10))) {
            benchmark.transport = String(option.dropFirst(10))
        } else if option.hasPrefix("log=") {
            benchmark.netresLogLevel = String(option.dropFirst(4))
        } else {
            throw BenchError("unknown sip-recovery option \(option)")
        }
    }
    return benchmark
}

/// `scale N[,N…] [idle=S] [rates=R,R…] [ceiling=C]`: account counts 1…5000, idle windows 10…600 s, sipp
/// rates 1…20000 per second (at most 8), netres's `register-rate-ceiling` 1…100000 (the
/// daemon's default when not given).
func scaleBenchmark(arguments: [String]) throws -> ScaleBenchmark {
    func numbers(_ text: Substring, in range: ClosedRange<Int>, what: String) throws -> [Int] {
        let values = text.split(separator: ",").compactMap { Int($0) }
        guard !values.isEmpty, values.count <= 8, values.allSatisfy(range.contains) else {
            throw BenchError("scale: \(what) must be 1 to 8 comma-separated numbers in \(range), found \(text)")
        }
        return values
    }
    guard let first = arguments.first else {
        throw BenchError("scale: give the account count(s), e.g. scale 1,100,1000")
    }
    var benchmark = ScaleBenchmark(counts: try numbers(Substring(first), in: 1...5000, what: "account counts"))
    for option in arguments.dropFirst() {
        if option.hasPrefix("idle=") {
            benchmark.idleSeconds = try numbers(option.dropFirst(5), in: 10...600, what: "idle")[0]
        } else if option.hasPrefix("rates=") {
            benchmark.sippRates = try numbers(option.dropFirst(6), in: 1...20_000, what: "rates")
        } else if option.hasPrefix("ceiling=") {
            benchmark.registerRateCeiling = try numbers(option.dropFirst(8), in: 1...100_000, what: "ceiling")[0]
        } else {
            throw BenchError("unknown scale option \(option)")
        }
    }
    return benchmark
}
