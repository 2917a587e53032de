import Foundation
import NetworkLab
import Testing

/// RFC 3263 failover with `netres run` against real servers: dnsmasq serving NAPTR/SRV/A for a
/// domain without an A record of its own, a primary and a backup Kamailio (NetworkLab's
/// ``ClientAndRegistrars``), 100 accounts (50 UDP, 50 TCP) in one daemon. Asserted through the
/// servers' request logs.
@Suite(
    .serialized, .needsNamespaces,
    .enabled(if: LabRegistrar.isInstalled && LabDNS.isInstalled, "needs kamailio and dnsmasq (dnsmasq-base)"),
    .timeLimit(.minutes(2)))
struct RegistrarFailoverFaultTests {
    static let flowPing = 2.0
    /// A flow ping unanswered this long counts as a dead flow (RFC 5626's 10 s scaled down: the
    /// silent primary is noticed in 2 + 3 s, not 2 + 10 s; the bounds below are unchanged).
    static let flowPingTimeout = 3
    /// RFC 3261 timer F with T1 = 500 ms: one REGISTER timeout.
    static let registerTimeout = 32.0
    static let udpUsers = (1...50).map { "fu\($0)" }
    static let tcpUsers = (1...50).map { "ft\($0)" }
    static var users: [String] { udpUsers + tcpUsers }
    /// Accounts that also keep a message-summary subscription (registration must come first).
    static let subscribed: Set<String> = ["fu1", "fu2", "ft1", "ft2"]

    /// A `netres run` config with every account, registrar `lab.test` with no port (SRV decides).
    /// Binding checks on (the default): with this test's 2 s flow ping the 100 accounts take
    /// turns at each registrar (one query per 1.5 s there, not one per ping), so the storm bound
    /// below holds with them.
    static func writeConfig(_ lab: ClientAndRegistrars) throws -> String {
        try lab.writeDaemonConfig(
            name: "netres-failover", accounts: users.map { ($0, $0.hasPrefix("fu") ? "udp" : "tcp") },
            flowPing: Int(flowPing), flowPingTimeout: flowPingTimeout,
            extra: Dictionary(
                uniqueKeysWithValues: subscribed.map { ($0, "subscriptions: [{ package: message-summary }]") }))
    }

    /// The first `REGISTERED` instant of each user at `registrar` after `instant`.
    static func bound(at registrar: LabRegistrar, after instant: Double) -> [String: Double] {
        var first: [String: Double] = [:]
        for line in registrar.requests() where line.kind == "REGISTERED" && line.at > instant {
            if first[line.user] == nil { first[line.user] = line.at }
        }
        return first
    }

    /// Waits (≤ `seconds`) until every user is bound at `registrar` after `instant`; the bindings.
    static func everyoneBound(at registrar: LabRegistrar, after instant: Double, within seconds: Double) async
        -> [String: Double]
    {
        _ = await eventually(within: .seconds(seconds)) { bound(at: registrar, after: instant).count >= users.count }
        return bound(at: registrar, after: instant)
    }

    @Test func aKilledOrSilencedPrimaryMovesEveryAccountToTheBackupAndBackWhenItReturns() async throws {
        try await withNetworkLab { network in
            let lab = try await network.addClientAndRegistrars()
            let netres = Bundle.main.bundleURL.appendingPathComponent("netres").path
            let output = network.directory + "/netres-failover.out"
            try await network.spawn(
                in: lab.client, [netres, "run", "--config", try Self.writeConfig(lab)], output: output)
            // `lab.test` has NAPTR and SRV records only: every account found the primary through them.
            let initial = await Self.everyoneBound(at: lab.primary, after: 0, within: 30)
            try #require(
                initial.count == Self.users.count,
                "bound at the primary: \(initial.count)/100; netres: \(Self.tail(output))")
            #expect(Self.bound(at: lab.backup, after: 0).isEmpty, "the backup bound accounts before any fault")

            // 1. The primary dies (SIGKILL): TCP flows are reset, UDP pings refused.
            let killedAt = realtime()
            await lab.killPrimary()
            let moved = await Self.everyoneBound(
                at: lab.backup, after: killedAt, within: Self.flowPing + Self.registerTimeout)
            #expect(moved.count == Self.users.count, "on the backup after the kill: \(moved.count)/100")
            let killFailover = (moved.values.max() ?? killedAt) - killedAt
            // The first unanswered request goes at the latest one flow-ping interval after the kill.
            #expect(killFailover <= Self.flowPing + Self.registerTimeout, "last account moved after \(killFailover) s")
            await Self.expectRegistrationFirstAndNoStorm(at: lab.backup, since: killedAt, bound: moved, log: output)

            // 2. The primary returns: accounts go back to it, probed at the failover's backoff.
            let returnedAt = realtime()
            try await lab.primary.start()
            let back = await Self.everyoneBound(at: lab.primary, after: returnedAt, within: 20)
            #expect(back.count == Self.users.count, "back on the primary: \(back.count)/100")
            let backAt = back.values.max() ?? returnedAt
            let probes = lab.primary.requests().filter { $0.kind == "OPTIONS" && $0.at > returnedAt }.count
            #expect(probes <= 3 * Self.users.count, "\(probes) OPTIONS to the returning primary")

            // 3. The primary goes silent (every packet dropped): unanswered flow pings move them.
            let silencedAt = realtime()
            try await lab.silencePrimary()
            let fled = await Self.everyoneBound(
                at: lab.backup, after: silencedAt, within: Self.flowPing + Self.registerTimeout)
            #expect(fled.count == Self.users.count, "on the backup after silence: \(fled.count)/100")
            let silentFailover = (fled.values.max() ?? silencedAt) - silencedAt
            #expect(
                silentFailover <= Self.flowPing + Self.registerTimeout, "last account moved after \(silentFailover) s")
            await Self.expectRegistrationFirstAndNoStorm(at: lab.backup, since: silencedAt, bound: fled, log: output)
            let milliseconds = [killFailover, silentFailover, backAt - returnedAt].map { Int($0 * 1000) }
            print(
                "failover (100 accounts): kill \(milliseconds[0]) ms, silence \(milliseconds[1]) ms, back \(milliseconds[2]) ms"
            )
        }
    }

    /// The lab's DNS faults: a domain with SRV records only (no NAPTR, no A record: RFC 3263 §4.1
    /// "If no NAPTR records are found, the client constructs SRV queries") is accepted by
    /// `netres run` and registered through; with dnsmasq down, a network change (which drops the
    /// cached answers) still finds the primary through the last answer (served stale); with a
    /// record change (the backup now first) the next network change moves the accounts there.
    @Test func aDNSServerDownKeepsTheLastAnswerAndARecordChangeIsFollowedAfterANetworkChange() async throws {
        try await withNetworkLab { network in
            let lab = try await network.addClientAndRegistrars()
            var srvOnly = ClientAndRegistrars.records(domain: lab.domain, ttl: 60)
            srvOnly.naptr = []
            try await lab.dns.replace(srvOnly)
            let netres = Bundle.main.bundleURL.appendingPathComponent("netres").path
            let users = ["du1", "dt1"]
            let config = try lab.writeDaemonConfig(
                name: "netres-dns", accounts: users.map { ($0, $0 == "du1" ? "udp" : "tcp") })
            let output = network.directory + "/netres-dns.out"
            try await network.spawn(in: lab.client, [netres, "run", "--config", config], output: output)
            let bound = await eventually(within: .seconds(20)) {
                Set(lab.primary.requests().filter { $0.kind == "REGISTERED" }.map(\.user)).count == users.count
            }
            try #require(bound, "not bound at the primary through SRV records only: \(Self.tail(output))")
            let srvAsked = lab.dns.queries().contains { $0.type == "SRV" && $0.name.hasSuffix("._udp.\(lab.domain)") }
            #expect(srvAsked, "no SRV question for \(lab.domain): \(lab.dns.queries().suffix(10))")

            await lab.dns.stop()
            let downAt = realtime()
            _ = try await network.inject(.adminDown(lab.link, for: .seconds(1)))
            let stale = await eventually(within: .seconds(15)) {
                Set(Self.bound(at: lab.primary, after: downAt).keys) == Set(users)
            }
            #expect(stale, "not registered again at the primary with the DNS server down: \(Self.tail(output))")

            try await lab.dns.replace(ClientAndRegistrars.records(domain: lab.domain, ttl: 60, primaryFirst: false))
            let changedAt = realtime()
            _ = try await network.inject(.adminDown(lab.link, for: .seconds(1)))
            let moved = await eventually(within: .seconds(15)) {
                Set(Self.bound(at: lab.backup, after: changedAt).keys) == Set(users)
            }
            #expect(moved, "the changed records did not move the accounts to the backup: \(Self.tail(output))")
            let asked = lab.dns.queries().filter { $0.name == lab.domain || $0.name.hasSuffix("." + lab.domain) }
            #expect(!asked.isEmpty, "dnsmasq logged no question for \(lab.domain)")
        }
    }

    /// After a move to `registrar`: each subscribed account's SUBSCRIBE reached it after its
    /// REGISTER was bound (RFC 3261 order of a client: registration first), and no account sent it
    /// more than two REGISTER transactions (the challenged one and the answered one), twice over
    /// for a retry at most.
    static func expectRegistrationFirstAndNoStorm(
        at registrar: LabRegistrar, since: Double, bound: [String: Double], log: String
    ) async {
        func authorizedSubscribe(of user: String) -> RegistrarRequest? {
            registrar.requests().first {
                $0.kind == "AUTHORIZED" && $0.user == user && $0.fields["method"] == "SUBSCRIBE" && $0.at > since
            }
        }
        // The subscriptions follow the registration: give them their moment.
        _ = await eventually(within: .seconds(10)) { subscribed.allSatisfy { authorizedSubscribe(of: $0) != nil } }
        for user in subscribed {
            let subscribe = authorizedSubscribe(of: user)
            #expect(subscribe != nil, "\(user) did not subscribe at the backup: \(trace(user, registrar, since, log))")
            if let subscribe, let registered = bound[user] {
                #expect(subscribe.at >= registered, "\(user) subscribed before it was registered")
            }
        }
        let storm = users.filter { registrar.transactionCount(of: "REGISTER", from: $0, since: since) > 4 }
        #expect(
            storm.isEmpty,
            "more than 4 REGISTER transactions: \(storm): \(storm.first.map { trace($0, registrar, since, log) } ?? "")"
        )
    }

    /// What `user` did at `registrar` since `since`, and its lines in the daemon's log.
    static func trace(_ user: String, _ registrar: LabRegistrar, _ since: Double, _ log: String) -> String {
        let requests = registrar.requests().filter { $0.user == user && $0.at > since }.map {
            "\($0.kind) \($0.fields["method"] ?? "") \($0.fields["cseq"] ?? "") +\(Int(($0.at - since) * 1000))ms"
        }
        let lines = ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n").filter {
            $0.contains("\"\(user)") || $0.contains("\(user).")
        }
        return requests.joined(separator: "; ") + "\n" + lines.suffix(40).joined(separator: "\n")
    }

    static func tail(_ path: String) -> String {
        String(((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").suffix(1500))
    }
}
