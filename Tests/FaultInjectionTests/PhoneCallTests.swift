import Foundation
import NetworkLab
import Testing

/// Real phones: calls both ways between the built `netres run` (alice) and Debian baresip 1.0
/// (bob answers alice's call, carol calls alice) through Kamailio, with and without
/// record-routing. Both calls are up at once in one lab, so one 60 s window holds both
/// directions, a flap and an address change on netres's side, hold and resume of each call, and
/// then a hang-up from each side.
///
/// Witnesses: baresip's SIP trace (what reached the phone and what it answered: the 200 to each
/// re-INVITE, BYE or none), baresip's own call list (`ctrl_tcp` `listcalls`) and `netres ctl calls`.
/// RFC 3261 §12.1.1: "the UAS MUST copy all Record-Route header field values from the request into
/// the response"; §12.2.1.1: the in-dialog requests go to the remote target through the route set.
/// Without record-routing they go to the Contact itself (§8.1.1.8: "the URI ... where the UA would
/// like to be contacted for subsequent requests").
///
/// Each test has its own lab; the two run in parallel (~75 s each). Every bound is a hang guard.
@Suite(
    .enabled(if: NetworkLab.isSupported, "needs root and iproute2: SKIPPED"),
    .enabled(if: LabRegistrar.isInstalled && LabBaresip.isInstalled, "needs kamailio and baresip: SKIPPED"),
    .timeLimit(.minutes(3)))
struct PhoneCallTests {
    @Test func callsBothWaysWithBaresipThroughARecordRoutingProxyLastAMinuteThroughFaultsAndEndWithBye()
        async throws
    {
        try await withNetworkLab { lab in try await Self.callsBothWays(lab, recordRoute: true) }
    }

    @Test func callsBothWaysWithBaresipThroughAProxyThatDoesNotRecordRouteLastAMinuteThroughFaultsAndEndWithBye()
        async throws
    {
        // With an empty route set netres sends its own in-dialog requests (the ACK of a 2xx,
        // re-INVITEs, BYE) to the remote target, the phone's Contact (RFC 3261 §12.2.1.1 with
        // §8.1.2), never through the proxy (`checkRouting`).
        try await withNetworkLab { lab in try await Self.callsBothWays(lab, recordRoute: false) }
    }

    /// The common scenario. Every check is an `#expect` per call, so a broken direction still
    /// reports every check of the other; a call that never came up is left out of the rest.
    static func callsBothWays(_ lab: NetworkLab, recordRoute: Bool) async throws {
        let f = try await PhoneCallLab(lab, recordRoute: recordRoute)
        let (bob, carol) = (f.bob, f.carol)
        let incoming = try await f.carolCallsAlice()
        let outgoing = await f.aliceCallsBob()
        let established = ContinuousClock.now
        let establishedAt = realtime()
        let both = [(outgoing, bob), (incoming, carol)].compactMap { id, phone in id.map { ($0, phone) } }
        // Once both calls are over (or failed): which of their in-dialog requests crossed the proxy.
        defer { checkRouting(of: [bob, carol].map(PhoneCallLab.callID), in: f, after: establishedAt, recordRoute) }
        guard !both.isEmpty else { return }

        // A 3 s carrier loss on netres's link: each phone answers netres's re-INVITE 200.
        var marks = both.map { $0.1.messages().count }
        try await lab.inject(.carrierLoss(f.calls.wifi, for: .seconds(3)))
        for ((id, phone), mark) in zip(both, marks) {
            let answered = await eventually(within: .seconds(20)) {
                PhoneCallLab.answeredReinvite(phone, since: mark) != nil
            }
            #expect(answered, "call \(id) after the flap: \(phone.diagnostics()); netres: \(f.calls.log())")
        }

        // An address change: the re-INVITE carries the new address in Contact and `c=`.
        marks = both.map { $0.1.messages().count }
        try await lab.inject(.addressChange(f.calls.wifi, .makeBeforeBreak))
        let new = await lab.addresses(of: f.calls.wifi).ipv4
        for ((id, phone), mark) in zip(both, marks) {
            var reinvite: SIPpMessage?
            _ = await eventually(within: .seconds(20)) {
                reinvite = PhoneCallLab.answeredReinvite(phone, since: mark)
                return reinvite != nil
            }
            #expect(
                reinvite?.header("Contact")?.contains("@\(new):") == true,
                "call \(id) after the change to \(new): \(phone.diagnostics()); netres: \(f.calls.log())")
            #expect(reinvite?.connectionAddress == new, "\(reinvite?.text ?? "no re-INVITE answered")")
        }

        // Hold and resume each call: netres offers `sendonly`, then `sendrecv`; the phone answers both 200.
        for (id, phone) in both {
            for (command, direction) in [("hold", "a=sendonly"), ("resume", "a=sendrecv")] {
                let mark = phone.messages().count
                let reply = try? await f.calls.ctl(command, id, within: .seconds(20))
                #expect(
                    reply?.hasPrefix("ok") == true, "ctl \(command) \(id): \(reply ?? "no reply"); \(f.calls.log())")
                let answered = await eventually(within: .seconds(5)) {
                    PhoneCallLab.answeredReinvite(phone, since: mark)?.text.contains(direction) == true
                }
                #expect(answered, "\(command) of \(id): \(phone.diagnostics())")
            }
        }

        // A minute after both were up: both calls are still listed by both ends, with no BYE.
        try await Task.sleep(until: established + .seconds(60), clock: .continuous)
        let listed = try await f.calls.calls()
        for (id, phone) in both {
            let state = listed.first { $0["id"] as? String == id }?["state"] as? String
            #expect(state == "active", "netres lists call \(id) as \(state ?? "gone") after 60 s: \(listed)")
            #expect(try await phone.callCount() == 1, "\(phone.user) lists no call after 60 s: \(phone.diagnostics())")
            #expect(PhoneCallLab.byes(phone).isEmpty, "a BYE within 60 s: \(phone.diagnostics())")
        }

        // netres hangs up the outgoing call: bob gets the BYE and answers it.
        if let outgoing {
            let reply = try? await f.calls.ctl("hangup", outgoing)
            let answered = await eventually(within: .seconds(15)) {
                !bob.received("BYE").isEmpty && !bob.sent(200, to: "BYE").isEmpty
            }
            #expect(answered, "BYE to bob: ctl hangup: \(reply ?? "no reply"); \(bob.diagnostics())")
            #expect(await eventually(within: .seconds(10)) { (try? await bob.callCount()) == 0 })
        }

        // carol hangs up the incoming call: netres answers her BYE 200 and ends the call.
        guard let incoming else { return }
        try await carol.hangUp()
        let byeAnswered = await eventually(within: .seconds(15)) {
            carol.messages().contains { !$0.sent && $0.status == 200 && $0.header("CSeq")?.hasSuffix(" BYE") == true }
        }
        #expect(byeAnswered, "netres's 200 to carol's BYE: \(carol.diagnostics()); netres: \(f.calls.log())")
        #expect(
            await eventually(within: .seconds(10)) { (try? await f.calls.state(of: incoming)) == nil },
            "netres still lists \(incoming): \(f.calls.log())")
    }

    /// RFC 3261 §16.6 step 4: a proxy that record-routes "wishes to remain on the path of future
    /// requests in a dialog", so each call's BYE passes through Kamailio; §12.2.1.1: with an empty
    /// route set "the UAC MUST place the remote target URI into the Request-URI" and the request goes
    /// there, so without record-routing no in-dialog request of either call reaches Kamailio.
    static func checkRouting(of callIDs: [String], in f: PhoneCallLab, after established: Double, _ recordRoute: Bool) {
        for callID in callIDs {
            let through = f.requestsThroughProxy(callID: callID, after: established)
            let seen = through.map { "\($0.kind) cseq=\($0.fields["cseq"] ?? "?") src=\($0.fields["src"] ?? "?")" }
            if recordRoute {
                #expect(through.contains { $0.kind == "BYE" }, "no BYE of \(callID) through the proxy: \(seen)")
            } else {
                #expect(through.isEmpty, "in-dialog requests of \(callID) through the proxy: \(seen)")
            }
        }
    }
}
