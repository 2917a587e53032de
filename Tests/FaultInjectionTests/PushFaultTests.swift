import Foundation
import NetworkLab
import Testing

/// RFC 8599 end to end: the built `netres run` (alice, UDP, push token in a file) in a `phone`
/// host, Kamailio in a `server` host as the push proxy (tsilo, msilo, http_client), the lab's
/// push service delivering each push by running `netres ctl push` in the phone host after a
/// seeded 50–300 ms, and sipp calling alice. Witnesses: the registrar's request log (PUSH,
/// REGISTERED, the relayed INVITE), the push service's log, sipp's messages, netres's log and the
/// phone namespace's IPv4 packet counter (`/proc/net/snmp`, `Ip: OutRequests`).
///
/// Scaled down (the ratio kept): a 3 s wake window instead of 10 s, 4 s of sleep watched for
/// packets instead of 10 minutes (`netres-bench` measures the long one). Every bound is a hang guard.
@Suite(
    .enabled(if: NetworkLab.isSupported, "needs root and iproute2: SKIPPED"),
    .enabled(if: LabRegistrar.isInstalled && LabSIPp.isInstalled, "needs kamailio and sipp: SKIPPED"),
    .timeLimit(.minutes(2)))
struct PushFaultTests {
    static let pushPort = 8088

    /// The push lab: alice's token file holds `token` when given (else she starts without one);
    /// `expires` her registration's lifetime, `refreshLead` the push service's (see its docs).
    static func lab(
        _ lab: NetworkLab, token: String?, expires: Int = 600, refreshLead: Duration? = nil
    ) async throws -> (CallFaultLab, LabPushService) {
        let tokenFile = lab.directory + "/alice.token"
        if let token { try (token + "\n").write(toFile: tokenFile, atomically: true, encoding: .utf8) }
        let f = try await CallFaultLab(
            lab, options: RegistrarOptions(pushService: "\(LabAddress.service4):\(pushPort)"),
            account: ", expires: \(expires), push: {provider: apns, token-file: \(tokenFile)}",
            settings: "state-directory: \(lab.directory)/state", policy: "push-wake-window: 3s\n")
        let service = try await lab.startPushService(
            in: f.server, address: LabAddress.service4, port: pushPort, deliverIn: f.phone,
            command: [CallFaultLab.netres, "ctl", "--socket", f.socket, "push", "@ACCOUNT@", "--kind", "@KIND@"],
            delay: .milliseconds(50) ... .milliseconds(300), refreshLead: refreshLead)
        return (f, service)
    }

    /// IPv4 packets the phone host has sent so far (`Ip: OutRequests` of its namespace).
    static func packetsSent(_ f: CallFaultLab) async throws -> Int {
        let snmp = try await f.lab.run(in: f.phone, ["cat", "/proc/net/snmp"])
        let ip = snmp.split(separator: "\n").filter { $0.hasPrefix("Ip:") }.map { $0.split(separator: " ") }
        guard ip.count == 2, let column = ip[0].firstIndex(of: "OutRequests"), let value = Int(ip[1][column]) else {
            throw NetworkLabError(.commandFailed, "no Ip OutRequests in /proc/net/snmp: \(snmp.prefix(300))")
        }
        return value
    }

    /// The registrar log's last binding reports and errors (a diagnostic).
    static func registrarErrors(_ f: CallFaultLab) -> String {
        let log = (try? String(contentsOfFile: f.registrar.logPath, encoding: .utf8)) ?? ""
        return log.split(separator: "\n").filter { $0.contains("binding") || $0.contains("ERROR") }.suffix(8)
            .joined(separator: "\n")
    }

    /// netres's log lines for a succeeded `release-flow` of alice's registration.
    static func flowsReleased(_ f: CallFaultLab) -> Int {
        f.log(limit: 200_000).split(separator: "\n").filter {
            $0.contains(" release-flow alice") && $0.contains("-> succeeded")
        }.count
    }

    /// Suspends netres and waits until alice's flow is released (her binding stays), then watches
    /// `seconds` of sleep: no packet leaves the phone, no request reaches the registrar.
    static func sleep(_ f: CallFaultLab, released: Int = 1, watching seconds: Int) async throws {
        try await f.ctl("state", "suspended")
        let asleep = await eventually(within: .seconds(10)) { flowsReleased(f) >= released }
        try #require(asleep, "no release-flow: \(f.log())")
        try #require(try await f.registrar.contacts().contains { $0.contains("pn-prid=") }, "the binding stays")
        let before = try await packetsSent(f)
        let requests = f.registrar.requests().count
        try await Task.sleep(for: .seconds(seconds))
        #expect(try await packetsSent(f) == before, "packets sent while asleep; netres: \(f.log())")
        #expect(f.registrar.requests().count == requests, "requests while asleep: \(f.registrar.requests().suffix(3))")
    }

    /// A suspended netres holding no flow gets a call: the proxy holds the INVITE and pushes, the
    /// push service runs `netres ctl push alice --kind call`, netres registers through a new flow,
    /// the proxy relays the INVITE, netres rings (180) and is answered through `netres ctl`.
    @Test func aSleepingClientIsWokenByAPushForACallRingsAndAnswers() async throws {
        try await withNetworkLab { lab in
            let (f, service) = try await Self.lab(lab, token: "f00dcafe")
            try await Self.sleep(f, watching: 4)

            let caller = try await f.caller("uac-push-call")
            let rang = await eventually(within: .seconds(15)) {
                caller.messages().contains { !$0.sent && $0.status == 180 }
            }
            try #require(rang, "no 180: \(caller.diagnostics()); netres: \(f.log())")
            #expect(service.requests.map(\.kind) == ["call"])
            #expect(service.requests.first?.token == "f00dcafe")
            // RFC 8599 §4.1: the proxy pushes, the device registers, then the proxy forwards the request.
            let log = f.registrar.requests()
            let pushed = try #require(log.firstIndex { $0.kind == "PUSH" }, "no PUSH: \(log.suffix(5))")
            let registered = try #require(
                log.indices.first { $0 > pushed && log[$0].kind == "REGISTERED" }, "no REGISTER after the push")
            #expect(log[registered].contact.contains("pn-prid=f00dcafe"))
            #expect(f.log().contains("push call alice"), "the push is logged: \(f.log())")

            var listed: [String: Any]?
            _ = await eventually(within: .seconds(5)) {
                listed = try? await f.calls().first
                return listed != nil
            }
            let id = try #require(listed?["id"] as? String, "ctl calls: \(String(describing: listed))")
            try await f.ctl("answer", id)
            #expect(await caller.exitCode(within: .seconds(20)) == 0, "sipp: \(caller.diagnostics())")
        }
    }

    /// Token delays (the Avaya SDK's section 3) and a push that brings nothing: netres starts
    /// without a token ("push service not available", a binding without pn parameters), registers
    /// again when the token arrives and when it changes; suspended it sleeps, a `refresh` push
    /// registers it, and after the 3 s window it releases its flow and sends nothing again.
    @Test func tokenArrivalAndChangeRegisterAgainAndAPushThatBringsNothingSleepsAfterTheWindow() async throws {
        try await withNetworkLab { lab in
            let (f, _) = try await Self.lab(lab, token: nil)
            #expect(f.log().contains("push service not available"), "netres: \(f.log())")
            #expect(try await f.registrar.contacts().allSatisfy { !$0.contains("pn-") })

            for token in ["tok-1", "tok-2"] {
                try await f.ctl("push-token", CallFaultLab.user, token)
                let bound = await eventually(within: .seconds(10)) {
                    (try? await f.registrar.contacts())?.contains { $0.contains("pn-prid=\(token)") } == true
                }
                let contacts = (try? await f.registrar.contacts()) ?? []
                #expect(bound, "no binding with \(token): \(contacts)")
            }

            try await Self.sleep(f, watching: 1)
            let registers = f.registrar.requests().filter { $0.kind == "REGISTERED" }.count
            try await f.ctl("push", CallFaultLab.user, "--kind", "refresh", "--payload", "binding-expiring")
            let woken = await eventually(within: .seconds(10)) {
                f.registrar.requests().filter { $0.kind == "REGISTERED" }.count > registers
            }
            #expect(woken, "no REGISTER after the push: \(f.log())")
            // The window (3 s) ends with nothing to do: asleep again, and silent.
            let slept = await eventually(within: .seconds(10)) { Self.flowsReleased(f) >= 2 }
            #expect(slept, "no release-flow after the window: \(f.log())")
            #expect(f.log().contains("decision push.window-ended"), "netres: \(f.log())")
            let before = try await Self.packetsSent(f)
            try await Task.sleep(for: .seconds(2))
            #expect(try await Self.packetsSent(f) == before, "packets after the window; netres: \(f.log())")
        }
    }

    /// RFC 8599 (abstract): it "describes how the UA can send binding-refresh REGISTER requests
    /// [...] in an environment in which the UA may be suspended": the proxy pushes before the
    /// binding expires (§4.1). Asleep, netres keeps no refresh timer; alice's binding is 60 s
    /// (netres's shortest) and the push service refreshes 50 s before the expiry (10 s after a
    /// save, scaled down from a third of the lifetime), so without the proxy's refresh push the
    /// binding would lapse at the original expiry. With it: a `refresh` push, a REGISTER, asleep
    /// again after the 3 s window, and the binding outlives the original expiry.
    @Test func aSleepingClientWithAShortBindingIsRefreshedByAPushAndSleepsAgain() async throws {
        try await withNetworkLab { lab in
            // The token comes once the push service runs (the registrar reports bindings to it).
            let (f, service) = try await Self.lab(lab, token: nil, expires: 60, refreshLead: .seconds(50))
            try await f.ctl("push-token", CallFaultLab.user, "feedf00d")
            let bound = await eventually(within: .seconds(10)) {
                f.registrar.requests().contains { $0.kind == "REGISTERED" && $0.contact.contains("pn-prid=feedf00d") }
            }
            try #require(bound, "no binding with the token: \(f.log())")
            let saved = try #require(f.registrar.requests().last { $0.kind == "REGISTERED" })
            let originalExpiry = saved.at + 60
            try await Self.sleep(f, watching: 1)
            #expect(service.bindings.last?.token == "feedf00d", "bindings told: \(service.bindings)")

            let pushed = await eventually(within: .seconds(20)) { service.requests.contains { $0.kind == "refresh" } }
            let push = try #require(
                service.requests.first { $0.kind == "refresh" },
                "no refresh push: \(service.bindings), \(service.refused) refused; registrar: \(Self.registrarErrors(f))"
            )
            #expect(pushed && push.token == "feedf00d" && push.at < originalExpiry)
            let registered = await eventually(within: .seconds(10)) {
                f.registrar.requests().contains { $0.kind == "REGISTERED" && $0.at > push.at }
            }
            #expect(registered, "no REGISTER after the refresh push: \(f.log())")
            let slept = await eventually(within: .seconds(10)) { Self.flowsReleased(f) >= 2 }
            #expect(slept, "not asleep again after the window: \(f.log())")
            // The binding now lives past the original expiry (ul.dump's seconds left).
            let left = try await f.registrar.bindings().compactMap(\.expiresIn).max() ?? 0
            #expect(realtime() + Double(left) > originalExpiry + 5, "binding left \(left) s")
        }
    }

    /// A MESSAGE sent while netres sleeps is stored by the proxy (202) and pushed for; after the
    /// message push's REGISTER the proxy delivers it, netres answers 200, logs it escaped, counts
    /// it, and `netres ctl messages` lists it; then the window ends and it sleeps again.
    @Test func aMessageStoredWhileAsleepIsDeliveredAfterTheMessagePush() async throws {
        try await withNetworkLab { lab in
            let (f, service) = try await Self.lab(lab, token: "beefcafe")
            try await Self.sleep(f, watching: 1)
            let sender = try await f.caller("uac-message")
            #expect(await sender.exitCode(within: .seconds(15)) == 0, "sipp: \(sender.diagnostics())")
            var listing = ""
            let delivered = await eventually(within: .seconds(15)) {
                listing = (try? await f.ctl("messages", "--json")) ?? ""
                return listing.contains("stored while you slept")
            }
            #expect(delivered, "ctl messages: \(listing); netres: \(f.log())")
            #expect(service.requests.map(\.kind) == ["message"])
            #expect(listing.contains(#"\"zzz\""#), "the body keeps its quotes, JSON-escaped: \(listing)")
            #expect(f.log(limit: 200_000).contains("message alice from="), "logged: \(f.log())")
            // Delivered once: msilo got the 200 and dropped it (no second copy at the next REGISTER).
            #expect(listing.components(separatedBy: "stored while you slept").count == 2, "\(listing)")
            let slept = await eventually(within: .seconds(10)) { Self.flowsReleased(f) >= 2 }
            #expect(slept, "no release-flow after the window: \(f.log())")
        }
    }

    /// The same wake with a real phone calling: baresip (carol, in a third host) dials alice while
    /// she sleeps; the proxy holds the INVITE and pushes, netres registers, rings (carol gets 180)
    /// and is answered through `netres ctl answer` (carol ACKs the 200).
    @Test(.enabled(if: LabBaresip.isInstalled, "needs baresip: SKIPPED"))
    func aSleepingClientIsWokenForABaresipCallAndAnswersIt() async throws {
        try await withNetworkLab { lab in
            let (f, service) = try await Self.lab(lab, token: "cafe01")
            let far = try await lab.addHost("far")
            let lan = try await lab.connect(far, to: f.server, as: "lan")
            let carol = try await lab.startBaresip(
                in: far, user: "carol", registrar: f.registrar, address: await lab.addresses(of: lan).ipv4,
                port: 5062, controlPort: 4445)
            try await Self.sleep(f, watching: 1)
            try await carol.dial("sip:\(CallFaultLab.user)@\(f.registrar.address)")
            var id: String?
            _ = await eventually(within: .seconds(15)) {
                id = try? await f.calls().first { $0["direction"] as? String == "incoming" }?["id"] as? String
                return id != nil
            }
            let ringing = try #require(id, "netres lists no incoming call: \(carol.diagnostics()); netres: \(f.log())")
            #expect(service.requests.map(\.kind) == ["call"])
            let rang = await eventually(within: .seconds(5)) {
                carol.messages().contains { !$0.sent && $0.status == 180 }
            }
            #expect(rang, "carol got no 180: \(carol.diagnostics())")
            try await f.ctl("answer", ringing)
            let acked = await eventually(within: .seconds(15)) {
                carol.messages().contains { $0.sent && $0.method == "ACK" }
            }
            #expect(acked, "\(carol.diagnostics()); netres: \(f.log())")
            try await f.ctl("hangup", ringing)
        }
    }
}
