import Foundation
import NetworkLab

/// `netres-bench failover [rounds] [accounts]`: the time from a primary registrar's death to every
/// account bound on the backup, beside what a registration costs at the backup.
///
/// NetworkLab's ``ClientAndRegistrars`` (dnsmasq with NAPTR/SRV for `lab.test`, a primary and a
/// backup Kamailio); one `netres run` with `accounts` accounts, half UDP and half TCP, flow pings
/// every 2 s. Each round kills the primary (SIGKILL), measures until every account is bound at the
/// backup (its request log), then starts the primary and waits until they are all back.
///
/// The floor is the registration round trip at the backup: from an account's first REGISTER
/// there to its binding (the challenge and the answered REGISTER), the least a failover costs
/// after the death is noticed. UDP notices at the next flow ping (up to 2 s: ICMP port
/// unreachable), TCP at once (the connection resets).
///
/// Beside them, `twoFlowAccounts` outbound accounts with `flows: 2` (RFC 5626 §4.2, half UDP, half
/// TCP) keep a second registration on the backup. An account's unreachable time is how long after
/// the kill the backup first holds a binding of it: 0 when its second flow was bound there before
/// the kill (each round waits for that, at most 30 s), else its move's time. `TwoFlowsFaultTests`
/// checks with a real call that such a binding carries one at once.
struct FailoverBenchmark {
    var rounds = 3
    var accounts = 100
    var twoFlowAccounts = 10

    func run() async throws {
        let netres = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
            .appendingPathComponent("netres").path
        try await withNetworkLab { network in
            let lab = try await network.addClientAndRegistrars()
            let oneFlow = (0..<accounts).map { $0 % 2 == 0 ? "bu\($0)" : "bt\($0)" }
            let twoFlows = (0..<twoFlowAccounts).map { $0 % 2 == 0 ? "b2u\($0)" : "b2t\($0)" }
            let users = oneFlow + twoFlows
            var extra: [String: String] = [:]
            for (index, user) in twoFlows.enumerated() {
                extra[user] =
                    "outbound: { instance-id: \"urn:uuid:00000000-0000-0000-0000-\(String(100_000_000_000 + index))\", "
                    + "reg-id: 1, flows: 2 }"
            }
            let config = try lab.writeDaemonConfig(
                name: "netres-failover", accounts: users.map { ($0, $0.contains("u") ? "udp" : "tcp") }, flowPing: 2,
                extra: extra)
            try await network.spawn(
                in: lab.client, [netres, "run", "--config", config], output: network.directory + "/netres.log")
            guard await Self.allBound(users, at: lab.primary, after: 0, within: 60) else {
                throw NetworkLabError(.timedOut, "not every account bound at the primary", seed: network.seed)
            }
            var failovers: [Duration] = []
            var floors: [Duration] = []
            var unreachable: (one: [Duration], two: [Duration]) = ([], [])
            var readySince = 0.0
            for _ in 0..<rounds {
                try await Task.sleep(for: .seconds(3))
                // Every second flow bound at the backup since the primary (re)started, at most 30 s.
                _ = await Self.allBound(twoFlows, at: lab.backup, after: readySince, within: 30)
                let secondFlows = Set(
                    lab.backup.requests().filter { $0.kind == "REGISTERED" && $0.at > readySince }.map(\.user))
                let killedAt = realtime()
                await lab.killPrimary()
                guard await Self.allBound(users, at: lab.backup, after: killedAt, within: 60) else {
                    throw NetworkLabError(.timedOut, "not every account moved to the backup", seed: network.seed)
                }
                let requests = lab.backup.requests().filter { $0.at > killedAt }
                let bound = Dictionary(grouping: requests.filter { $0.kind == "REGISTERED" }, by: \.user)
                    .mapValues { $0.map(\.at).min()! }
                failovers.append(.seconds(bound.values.max()! - killedAt))
                for user in oneFlow { unreachable.one.append(.seconds((bound[user] ?? killedAt) - killedAt)) }
                for user in twoFlows {
                    let moved = (bound[user] ?? killedAt) - killedAt
                    unreachable.two.append(.seconds(secondFlows.contains(user) ? 0 : moved))
                }
                for (user, at) in bound {
                    if let first = requests.first(where: { $0.kind == "REGISTER" && $0.user == user }) {
                        floors.append(.seconds(at - first.at))
                    }
                }
                let restartedAt = realtime()
                readySince = restartedAt
                try await lab.primary.start()
                guard await Self.allBound(users, at: lab.primary, after: restartedAt, within: 60) else {
                    throw NetworkLabError(.timedOut, "not every account returned to the primary", seed: network.seed)
                }
            }
            let failover = LatencyStats(failovers)
            let floor = LatencyStats(floors)
            print(
                "### Failover: primary killed → every account bound at the backup (\(accounts) accounts, \(rounds) rounds)\n"
            )
            print("| measure | n | p50 (ms) | p99 (ms) | max (ms) |")
            print("|---|---|---|---|---|")
            print(
                "| registration round trip at the backup (floor, per account) | \(floor.count) | \(format1(floor.p50 / 1000)) | \(format1(floor.p99 / 1000)) | \(format1(floor.max / 1000)) |"
            )
            print(
                "| kill → last account bound at the backup | \(failover.count) | \(format1(failover.p50 / 1000)) | \(format1(failover.p99 / 1000)) | \(format1(failover.max / 1000)) |"
            )
            for (label, samples) in [("one flow", unreachable.one), ("two flows (RFC 5626 §4.2)", unreachable.two)]
            where !samples.isEmpty {
                let stats = LatencyStats(samples)
                print(
                    "| unreachable, \(label), per account | \(stats.count) | \(format1(stats.p50 / 1000)) | \(format1(stats.p99 / 1000)) | \(format1(stats.max / 1000)) |"
                )
            }
        }
    }

    static func allBound(_ users: [String], at registrar: LabRegistrar, after instant: Double, within seconds: Double)
        async -> Bool
    {
        await eventually(within: .seconds(seconds)) {
            Set(registrar.requests().filter { $0.kind == "REGISTERED" && $0.at > instant }.map(\.user)).count
                >= users.count
        }
    }
}
