import Foundation
import NetworkLab
import Testing

/// The repository's `examples/netres.yaml`, as shipped except for what a lab must change (where
/// the registrar, the interface, sockets and files are, a 1 s flow ping so a registrar restart is noticed
/// quickly, JSON logs), run by the built `netres run` against Kamailio through link loss, an
/// address change and a registrar restart: registered and subscribed after each.
@Suite(.serialized, .needsNamespaces, .enabled(if: DaemonLab.isInstalled, "needs kamailio"), .timeLimit(.minutes(2)))
struct ExampleConfigFaultTests {
    static let example = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../examples/netres.yaml").standardized
    /// The example's subscriptions, as `netres run` names their services.
    static let subscriptions = [
        "alice.subscription.reg", "alice.subscription.message-summary",
        "alice.subscription.presence-others.sip:bob@example.test",
    ]

    /// The example with the lab's paths and interface; fails when a line it rewrites is gone.
    func labConfig(_ lab: DaemonLab) throws -> String {
        var text = try String(contentsOf: Self.example, encoding: .utf8)
        let folder = lab.directory
        let rewrites = [
            ("log-format: human", "log-format: json"),
            ("control-socket: /run/netres/control.sock", "control-socket: \(lab.controlSocket(of: "alice"))"),
            ("interfaces: [eth0, \"wlan*\"]", "interfaces: [\(lab.initial.interface)]"),
            ("flow-ping: 25s", "flow-ping: 1s"),
            ("registrar: 198.18.0.1", "registrar: \(lab.registrarAddress)"),
            ("token-file: /var/lib/netres/alice.push", "token-file: \(folder)/alice.push"),
            ("state-directory: /var/lib/netres", "state-directory: \(folder)/state"),
        ]
        for (old, new) in rewrites {
            try #require(text.contains(old), "examples/netres.yaml no longer has \"\(old)\"")
            text = text.replacingOccurrences(of: old, with: new)
        }
        // The lab registrar's password for user U is "secret-U"; the example reads a file.
        try "secret-alice\n".write(toFile: folder + "/alice.password", atomically: true, encoding: .utf8)
        let path = folder + "/netres.yaml"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// Whether the registration and every subscription succeeded in netres's action log after its
    /// first `mark` lines.
    func servicesUp(_ lab: DaemonLab, since mark: Int) -> Bool {
        let done = lab.actionLog(of: "alice").dropFirst(mark).filter { $0.outcome == "succeeded" }
        let services = Set(done.map(\.service))
        return services.isSuperset(of: Self.subscriptions + ["alice.registration"])
    }

    @Test func theExampleConfigStaysRegisteredAndSubscribedThroughLossChangeAndRestart() async throws {
        try await DaemonLab.with { lab in
            try await lab.startClient(user: "alice", config: try labConfig(lab))
            let output = { (try? String(contentsOfFile: lab.clientOutput(of: "alice"), encoding: .utf8)) ?? "" }
            try #require(
                await eventually(within: .seconds(10)) { servicesUp(lab, since: 0) },
                "not up at start:\n\(output().suffix(3000))")
            #expect(lab.lines("PUBLISH", user: "alice").count >= 1, "presence not published (publish-presence: true)")

            // Link loss: nothing is kept from before; registered and subscribed again after it.
            var mark = lab.actionLog(of: "alice").count
            let (_, upAt) = try await lab.flapClientLink(downFor: .seconds(3))
            #expect(
                await eventually(within: .seconds(5)) {
                    lab.lines("REGISTERED", user: "alice").contains { $0.at > upAt }
                })
            #expect(
                await eventually(within: .seconds(5)) { servicesUp(lab, since: mark) },
                "after the flap:\n\(output().suffix(3000))")

            // Address change: the new Contact is bound and the old one removed.
            mark = lab.actionLog(of: "alice").count
            let new = try await lab.moveClient()
            var contacts: [String] = []
            let moved = try await eventually(within: .seconds(5), every: .milliseconds(100)) {
                contacts = try await lab.boundContacts()
                return contacts.contains { isContact($0, of: "alice", at: new) }
                    && !contacts.contains { isContact($0, of: "alice", at: lab.initial.ipv4) }
            }
            #expect(moved, "ul.dump after the address change: \(contacts)")
            #expect(
                await eventually(within: .seconds(5)) { servicesUp(lab, since: mark) },
                "after the change:\n\(output().suffix(3000))")

            // Registrar restart: its bindings and subscriptions are gone; the 1 s flow ping notices,
            // and the account is registered and subscribed at the new registrar.
            mark = lab.actionLog(of: "alice").count
            await lab.registrar.stop()
            try await Task.sleep(for: .seconds(3))
            let restartAt = realtime()
            try await lab.registrar.start()
            #expect(
                await eventually(within: .seconds(10)) {
                    lab.lines("REGISTERED", user: "alice").contains { $0.at > restartAt }
                },
                "not registered at the restarted registrar:\n\(output().suffix(3000))")
            #expect(
                await eventually(within: .seconds(10)) { servicesUp(lab, since: mark) },
                "after the restart:\n\(output().suffix(3000))")
            let resubscribed = Set(
                lab.lines("SUBSCRIBE", user: "alice").filter { $0.at > restartAt }.compactMap { $0.fields["event"] })
            #expect(
                resubscribed.isSuperset(of: ["reg", "message-summary", "presence"]),
                "SUBSCRIBEs after the restart: \(resubscribed)")
        }
    }
}
