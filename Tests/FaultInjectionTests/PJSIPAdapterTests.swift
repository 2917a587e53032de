import Foundation
import NetworkLab
import Testing

/// A PJSIP application (pjsua2 2.15, through the repository's adapter) keeps its registration
/// and an established call across an address change and a flap with netres deciding, through
/// Kamailio with record-routing and a real far end (baresip). Without netres the same
/// application does not move: PJSIP's own documentation leaves the detection of an IP change
/// to the application (`Endpoint.handleIpChange()`), and its next refresh is minutes away.
@Suite(
    .serialized, .needsNamespaces,
    .enabled(if: PJSIPCallLab.isAvailable, "needs .build/pjsua2-venv (make test installs it), Kamailio, baresip"),
    .timeLimit(.minutes(5)))
struct PJSIPAdapterTests {
    @Test func withNetresACallAndItsBindingFollowAnAddressChangeAndSurviveAFlap() async throws {
        try await withNetworkLab { lab in
            let f = try await PJSIPCallLab(lab, netres: true)
            // RFC 3261 §12.2.1.1: a target refresh request (a re-INVITE) carries the new Contact;
            // RFC 3264 §8: the new offer's c= line the address media goes to.
            var mark = f.bob.messages().count
            try await lab.inject(.addressChange(f.wifi, .makeBeforeBreak))
            let new = await lab.addresses(of: f.wifi).ipv4
            let bound = try await eventually(within: .seconds(20)) { try await f.boundAt(new) }
            #expect(bound, "alice not bound at \(new): \(f.tail(f.adapterLog)); netres: \(f.tail(f.netresLog))")
            let moved = await eventually(within: .seconds(20)) { f.reinvite(to: new, since: mark) != nil }
            #expect(moved, "no re-INVITE to \(new) answered: \(f.bob.diagnostics()); \(f.tail(f.adapterLog))")
            #expect(f.reports("perform").contains { $0["action"] as? String == "close-stale-transports" })

            // A flap (2 s down, same address): re-registered, and the call still up (no BYE).
            mark = f.bob.messages().count
            let registers = f.registrar.requests().filter { $0.kind == "REGISTER" && $0.user == PJSIPCallLab.user }
            try await lab.linkDown(f.wifi)
            try await Task.sleep(for: .seconds(2))
            try await lab.linkUp(f.wifi)
            let registered = await eventually(within: .seconds(20)) {
                f.registrar.requests().filter { $0.kind == "REGISTER" && $0.user == PJSIPCallLab.user }.count
                    > registers.count
            }
            #expect(
                registered,
                "no REGISTER after the flap: \(f.tail(f.adapterLog, limit: 4000)); netres: \(f.tail(f.netresLog, limit: 6000))"
            )
            let refreshed = await eventually(within: .seconds(20)) { f.reinvite(to: new, since: mark) != nil }
            #expect(refreshed, "no re-INVITE after the flap: \(f.bob.diagnostics()); \(f.tail(f.adapterLog))")
            #expect(f.bob.messages().filter { $0.method == "BYE" }.isEmpty, "the call ended: \(f.bob.diagnostics())")
            #expect(try await f.boundAt(new))
        }
    }

    @Test func withoutNetresTheSameApplicationStaysAtTheOldAddress() async throws {
        try await withNetworkLab { lab in
            let f = try await PJSIPCallLab(lab, netres: false)
            let old = await lab.addresses(of: f.wifi).ipv4
            let mark = f.bob.messages().count
            try await lab.inject(.addressChange(f.wifi, .makeBeforeBreak))
            let new = await lab.addresses(of: f.wifi).ipv4
            // 20 s, the bound the netres test gives itself: nothing moves, the binding stays at the
            // vanished address and bob is never re-INVITEd.
            let moved = try await eventually(within: .seconds(20)) {
                try await f.boundAt(new) || f.reinvite(to: new, since: mark) != nil
            }
            #expect(!moved, "PJSIP moved by itself: \(f.tail(f.adapterLog))")
            #expect(try await f.boundAt(old))
            #expect(f.reports("perform").isEmpty)
        }
    }

    /// A carrier flap shorter than the policy's hold-down (2 s) is decided as nothing, so nothing
    /// reaches PJSIP: no IP-change cycle, no REGISTER, no re-INVITE (an outside detector that
    /// calls `handleIpChange()` on every link event would run the whole cycle). An admin-down
    /// counts at once (the interface was taken down on purpose), so the flap is a carrier loss.
    @Test func aFlapWithinTheHoldDownReachesPJSIPNotAtAll() async throws {
        try await withNetworkLab { lab in
            let f = try await PJSIPCallLab(lab, netres: true, holdDownZero: false)
            let registers = f.registrar.requests().filter { $0.kind == "REGISTER" }.count
            let mark = f.bob.messages().count
            try await lab.inject(.carrierLoss(f.wifi, for: .milliseconds(300)))
            let coalesced = await eventually(within: .seconds(20)) {
                f.tail(f.netresLog, limit: 20_000).contains("flap")
            }
            #expect(coalesced, "netres: \(f.tail(f.netresLog))")
            #expect(f.reports("perform").isEmpty, "\(f.tail(f.adapterLog))")
            #expect(f.registrar.requests().filter { $0.kind == "REGISTER" }.count == registers)
            #expect(PhoneCallLab.answeredReinvite(f.bob, since: mark) == nil)
        }
    }
}
