import Foundation
import Glibc
import NetworkLab
import Testing

/// A registrar that forgets (issue 23 point 6), against the built `netres run` and a real
/// Kamailio: bindings checked with a query (a REGISTER without Contact, RFC 3261 §10.2.3) in
/// place of the flow pings, and everything renewed after the daemon itself was stopped.
@Suite(.serialized, .needsNamespaces, .enabled(if: DaemonLab.isInstalled, "needs kamailio"), .timeLimit(.minutes(2)))
struct BindingAmnesiaFaultTests {
    /// The accounts' flow-ping interval: short, so the suite's wall time stays small.
    static let flowPing = 5.0

    /// The users with a binding at the client's address (`ul.dump`).
    static func boundUsers(_ lab: DaemonLab) async -> Set<String> {
        let bindings = (try? await lab.registrar.bindings()) ?? []
        return Set(bindings.filter { isContact($0.contact, at: lab.initial.ipv4) }.map(\.addressOfRecord))
    }

    /// RFC 3261 §10.2.3: "A UA can also query the current bindings by sending a REGISTER request
    /// without a Contact header field". Kamailio restarted without a persistent location table
    /// forgets every binding and answers the UDP accounts' pings as before; their next ping (a
    /// query) finds the binding gone, and they register again, paced. The TCP accounts notice the
    /// closed connection. All 60 are bound again within one flow-ping interval of the restart.
    @Test func afterARegistrarRestartThatForgetsEveryBinding50UDPAnd10TCPAccountsAreBoundAgainWithinOneFlowPing()
        async throws
    {
        let accounts =
            (0..<50).map { (user: "amnesiau\($0)", transport: "udp") }
            + (0..<10).map { (user: "amnesiat\($0)", transport: "tcp") }
        let everyone = Set(accounts.map(\.user))
        try await DaemonLab.with { lab in
            let config = try lab.writeDaemonConfig(
                name: "amnesia", accounts: accounts, account: ["flow-ping: \(Int(Self.flowPing))s"])
            try await lab.startClient(user: "amnesia", config: config)
            let first = await eventually(within: .seconds(60)) { await Self.boundUsers(lab) == everyone }
            let before = await Self.boundUsers(lab).count
            try #require(first, "bound before the restart: \(before)/60")
            let allBoundAt = realtime()
            // A ping interval and more before the fault: the accounts' queries have started.
            try await Task.sleep(for: .seconds(Self.flowPing + 1))
            // Kamailio keeps bindings in memory only (usrloc db_mode 0): the restart forgets them
            // all. Accounts may register again while it restarts (a TCP connection closed, a UDP
            // ping answered by ICMP port unreachable): under load the restart takes seconds, so
            // what counts is each account's first REGISTERED after the stop, not a snapshot.
            let downAt = realtime()
            await lab.registrar.stop()
            try await lab.registrar.start()
            let upAt = realtime()
            // A hang guard; the measured instants below are the assertion.
            let rebound = await eventually(within: .seconds(Self.flowPing * 4)) {
                await Self.boundUsers(lab) == everyone
            }
            let boundNow = await Self.boundUsers(lab)
            let missing = everyone.subtracting(boundNow).sorted()
            #expect(rebound, "\(missing.count) accounts not bound again: \(missing.prefix(10))")
            let requests = lab.registrar.requests()
            var boundAgainAt: [String: Double] = [:]
            for line in requests where line.kind == "REGISTERED" && line.at > downAt && boundAgainAt[line.user] == nil {
                boundAgainAt[line.user] = line.at
            }
            let slowest = boundAgainAt.values.max().map { max($0 - upAt, 0) } ?? .infinity
            #expect(
                boundAgainAt.count == 60 && slowest <= Self.flowPing,
                "\(boundAgainAt.count) bound again, the last \(slowest) s after the restart (flow ping \(Self.flowPing) s)"
            )
            // The 60 accounts take turns (BindingQueryTurns): one query per 3/4 of the interval at
            // the registrar, not one per account and ping (60 per 5 s before the turns).
            let queries = requests.filter { $0.kind == "QUERIED" && $0.at > allBoundAt && $0.at < downAt }.count
            let turns = Int((downAt - allBoundAt) / (Self.flowPing * 3 / 4)) + 1
            #expect(queries >= 1 && queries <= turns, "\(queries) queries in \(downAt - allBoundAt) s, turns: \(turns)")
            // The UDP accounts whose ping came after the restart learnt it from one query's answer:
            // the account that asked registers again, and alarms every other one bound there.
            let output = (try? String(contentsOfFile: lab.clientOutput(of: "amnesia"), encoding: .utf8)) ?? ""
            let foundByQuery =
                output.contains("sip.binding-lost") && output.contains("registrar forgot another account's binding")
            // A keep-alive sent while Kamailio was down met ICMP port unreachable: the UDP accounts
            // share one socket, so that flow loss, not a query, re-registered them all (a slow
            // restart always meets one; a quick one about every other run). Without it, only the
            // query can have told them (BindingQueryPeerTests covers its answer on a ManualClock).
            let flowLost = output.contains("sip.udp-unreachable")
            if !flowLost {
                #expect(foundByQuery, "no account found its binding gone through a query")
            } else {
                print(
                    "amnesia: a keep-alive met the stopped registrar (restart \(upAt - downAt) s); query path not required"
                )
            }
            // No storm: each account's REGISTER transactions since the restart are few.
            var transactions: [String: Set<String>] = [:]
            for line in requests where line.kind == "REGISTER" && line.at > upAt {
                transactions[line.user, default: []].insert(line.fields["cseq"] ?? "")
            }
            let busiest = transactions.max { $0.value.count < $1.value.count }
            #expect(
                (busiest?.value.count ?? 0) <= 6, "REGISTERs of \(busiest?.key ?? ""): \(busiest?.value.count ?? 0)")
            print(
                "amnesia: \(boundAgainAt.count) accounts bound again, the last \(slowest) s after the restart (flow ping \(Self.flowPing) s)"
            )
        }
    }

    /// The daemon itself stopped (SIGSTOP) longer than the notifier waits for an answer to a
    /// NOTIFY: Kamailio gave up on the NOTIFY a registration change caused and dropped the
    /// subscription; nothing on the wire tells netres when it continues. After SIGCONT it
    /// registers again and refreshes the subscription, the refresh is answered 481, and the
    /// subscription is recreated (RFC 6665 §4.1.2.2: "If a 481 response is received to a
    /// SUBSCRIBE request, the subscriber SHOULD attempt to create a new subscription"). Scaled
    /// from the field's 40 s stop against Kamailio's 30 s transaction timeout to a 6 s stop
    /// against 2 s.
    @Test func afterASIGSTOPLongerThanTheNotifiersTimeoutSIGCONTRecreatesTheDroppedSubscription() async throws {
        let user = "stopped"
        try await DaemonLab.with { lab in
            let config = try lab.writeDaemonConfig(user: user, account: ["subscriptions:", "  - { package: reg }"])
            let pid = try await lab.startClient(user: user, config: config)
            let subscribed = await eventually(within: .seconds(15)) {
                lab.actionLog(of: user).contains { $0.service.hasSuffix("reg") && $0.outcome == "succeeded" }
            }
            try #require(subscribed, "not subscribed: \(lab.actionLog(of: user))")
            // kamcmd exits 0 on an RPC error: its answer is the witness.
            let shortened = try await lab.registrar.kamcmd(["cfg.set_now_int", "tm", "fr_timer", "2000"])
            try #require(!shortened.lowercased().contains("error"), "fr_timer not set: \(shortened)")
            kill(pid, SIGSTOP)
            // A second device of the same user registers: the reg NOTIFY goes to a stopped netres.
            try await lab.registrar.kamcmd([
                "ul.add", "location", user, "sip:\(user)@198.18.99.1:5060", "120", "1.0", "s:0", "0", "0", "0",
            ])
            try await Task.sleep(for: .seconds(6))
            kill(pid, SIGCONT)
            let continuedAt = realtime()
            let recreated = await eventually(within: .seconds(10)) {
                let output = (try? String(contentsOfFile: lab.clientOutput(of: user), encoding: .utf8)) ?? ""
                return output.contains("sip.subscription-recreated")
            }
            #expect(recreated, "no SUBSCRIBE recreated the dropped subscription after SIGCONT")
            let resubscribed = SIPRegistrarFaultTests.authorizedSubscribes(lab, user: user, after: continuedAt)
            #expect(resubscribed.contains { $0.package == "reg" }, "SUBSCRIBEs after SIGCONT: \(resubscribed)")
            #expect(
                lab.lines("REGISTERED", user: user).contains { $0.at > continuedAt },
                "not registered again after SIGCONT")
        }
    }

    /// Kamailio restarted forgets the subscriptions with the bindings: a UDP account's query finds
    /// its binding gone, and it registers again, then recreates its subscription, within one
    /// flow-ping interval of the restart, the REGISTER first.
    @Test func overUDPARestartedRegistrarsForgottenSubscriptionIsRecreatedAfterTheBindingWithinOneFlowPing()
        async throws
    {
        let user = "forgotsub"
        try await DaemonLab.registered(
            user, account: ["flow-ping: \(Int(Self.flowPing))s", "subscriptions:", "  - { package: reg }"]
        ) { lab in
            let subscribed = await eventually(within: .seconds(10)) {
                lab.actionLog(of: user).contains { $0.service.hasSuffix("reg") && $0.outcome == "succeeded" }
            }
            try #require(subscribed, "not subscribed: \(lab.actionLog(of: user))")
            await lab.registrar.stop()
            try await lab.registrar.start()
            let upAt = realtime()
            let renewed = await eventually(within: .seconds(Self.flowPing * 4)) {
                SIPRegistrarFaultTests.authorizedSubscribes(lab, user: user, after: upAt).contains {
                    $0.package == "reg"
                }
            }
            #expect(renewed, "no SUBSCRIBE after the restart")
            let bound = lab.lines("REGISTERED", user: user).first { $0.at > upAt }?.at
            let subscribe = SIPRegistrarFaultTests.authorizedSubscribes(lab, user: user, after: upAt).first?.at
            #expect(bound.map { $0 - upAt <= Self.flowPing } == true, "bound again \((bound ?? 0) - upAt) s after")
            #expect(
                subscribe.map { $0 - upAt <= Self.flowPing && $0 > (bound ?? .infinity) } == true,
                "REGISTERED at \(bound ?? 0), SUBSCRIBE at \(subscribe ?? 0), restart at \(upAt)")
        }
    }
}
