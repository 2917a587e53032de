import Foundation
import NetworkLab
import Testing

/// `netres run` (NetlinkMonitor, ResilienceManager and SIPPlugin, hold-down 0) in a client
/// host against Kamailio in a registrar host (``DaemonLab``), asserted through the registrar's own
/// view: its request log and `ul.dump`.
@Suite(.serialized, .needsNamespaces, .enabled(if: DaemonLab.isInstalled, "needs kamailio"), .timeLimit(.minutes(3)))
struct SIPRecoveryFaultTests {
    @Test func whileTheLinkIsDownNothingIsSentAndTheBindingIsRefreshedAtOnceWhenItReturns() async throws {
        try await DaemonLab.registered("flap") { lab in
            let (downAt, upAt) = try await lab.flapClientLink()
            #expect(lab.lines("REGISTER", user: "flap").filter { $0.at > downAt && $0.at < upAt }.isEmpty)
            #expect(
                await eventually(within: .seconds(2)) {
                    lab.lines("REGISTERED", user: "flap").contains { $0.at > upAt }
                })
        }
    }

    @Test func anAddressChangeBindsTheNewContactAndTheOldBindingIsGone() async throws {
        try await DaemonLab.registered("move") { lab in
            let old = lab.initial.ipv4
            let new = try await lab.moveClient()
            let rebound = await eventually(within: .seconds(3)) {
                lab.lines("REGISTERED", user: "move").contains { isContact($0.contact, at: new) }
            }
            #expect(rebound)
            // The registrar's own view: the new Contact bound, the old one gone (polled ≤ 3 s).
            var contacts: [String] = []
            _ = try await eventually(within: .seconds(3)) {
                contacts = try await lab.boundContacts()
                return contacts.contains { isContact($0, at: new) } && !contacts.contains { isContact($0, at: old) }
            }
            #expect(contacts.contains { isContact($0, at: new) }, "ul.dump: \(contacts)")
            #expect(!contacts.contains { isContact($0, at: old) }, "ul.dump: \(contacts)")
        }
    }
}

/// Under CI the SIP fault suite must run: a missing Kamailio is a failure, not a skip.
struct SIPRecoveryFaultSupportTests {
    @Test func kamailioIsInstalledUnderCI() {
        guard !DaemonLab.isInstalled, ProcessInfo.processInfo.environment["CI"] == "true" else { return }
        Issue.record("CI=true but kamailio/kamcmd are missing: SIPRecoveryFaultTests did not run")
    }
}
