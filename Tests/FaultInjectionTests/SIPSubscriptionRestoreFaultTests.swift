import Foundation
import NetworkLab
import Testing

/// `netres run` with an account's subscriptions, through a link flap, in foreground and in
/// background: what the registrar sees SUBSCRIBEd again after the restore, and in which order.
@Suite(.serialized, .needsNamespaces, .enabled(if: DaemonLab.isInstalled, "needs kamailio"), .timeLimit(.minutes(3)))
struct SIPSubscriptionRestoreFaultTests {
    /// The account's subscriptions, named as `netres run` names their packages.
    static let packages: Set<String> = ["presence-self", "presence-others", "reg", "message-summary"]
    static let account = [
        "subscriptions:",
        "  - { package: presence-self }",
        "  - { package: presence-others, resource: \"sip:buddy@\(LabAddress.service4)\" }",
        "  - { package: reg }",
        "  - { package: message-summary }",
    ]

    /// The client's SUBSCRIBE requests (not Kamailio's own) that reached the registrar after
    /// `instant`, each named by its package: the Event header, with presence split by To user.
    func subscribes(_ lab: DaemonLab, user: String, after instant: Double) -> [(
        package: String, expires: String, at: Double
    )] {
        lab.lines("SUBSCRIBE", user: user).filter {
            $0.at > instant && $0.fields["src"]?.hasPrefix("\(lab.initial.ipv4):") == true
        }
        .map { line in
            var package = line.fields["event"] ?? ""
            if package == "presence" { package = line.fields["to"] == user ? "presence-self" : "presence-others" }
            return (package, line.fields["expires"] ?? "", line.at)
        }
    }

    /// Runs `body` once the client with the subscriptions is up and netres reports every one
    /// subscribed (≤ 10 s).
    func withSubscribedClient(_ user: String, _ body: (DaemonLab) async throws -> Void) async throws {
        try await DaemonLab.registered(user, account: Self.account) { lab in
            let services = Set(Self.packages.map { "\(user).subscription.\($0)" }).subtracting(
                ["\(user).subscription.presence-others"]
            ).union(["\(user).subscription.presence-others.sip:buddy@\(LabAddress.service4)"])
            let subscribed = await eventually(within: .seconds(10)) {
                // subscribe or refresh-subscription, depending on the policy's start-up trigger.
                let done = lab.actionLog(of: user).filter {
                    ["subscribe", "refresh-subscription"].contains($0.action) && $0.outcome == "succeeded"
                }
                return Set(done.map(\.service)) == services
            }
            try #require(subscribed, "not every subscription succeeded: \(lab.actionLog(of: user))")
            try await body(lab)
        }
    }

    /// Registration came before the subscriptions on the restore after `instant`, in both views.
    /// netres's: the `network.restored` registration succeeded before any subscription started.
    /// The registrar's: every SUBSCRIBE arrived after the authenticated REGISTER that bound the
    /// client (REGISTERED itself is logged by another Kamailio process after the 200 OK is sent,
    /// so it may be stamped after a SUBSCRIBE the client sent on receiving that 200).
    func expectRegisteredBeforeSubscribing(_ lab: DaemonLab, user: String, after instant: Double) throws {
        let log = lab.actionLog(of: user)
        let restore = log.filter { $0.event == "network.restored" }
        let registered = try #require(
            restore.firstIndex { $0.service == "\(user).registration" && $0.outcome == "succeeded" },
            "netres's actions: \(log.map { "\($0.event) \($0.service) \($0.action) \($0.outcome)" })")
        let firstSubscription = try #require(
            restore.firstIndex { $0.service.hasPrefix("\(user).subscription.") && $0.outcome == "started" })
        #expect(registered < firstSubscription, "netres's restore actions: \(restore)")

        let binding = try #require(lab.lines("REGISTERED", user: user).first { $0.at > instant }?.at)
        let register = try #require(lab.lines("REGISTER", user: user).last { $0.at > instant && $0.at < binding }?.at)
        let firstSubscribe = try #require(subscribes(lab, user: user, after: instant).first?.at)
        #expect(register < firstSubscribe, "REGISTER that bound at \(register), first SUBSCRIBE at \(firstSubscribe)")
    }

    @Test func inForegroundEverySubscriptionIsRenewedAfterTheRegistrationOnRestore() async throws {
        let user = "fgwatch"
        try await withSubscribedClient(user) { lab in
            let (_, upAt) = try await lab.flapClientLink()
            let renewed = await eventually(within: .seconds(3)) {
                Set(subscribes(lab, user: user, after: upAt).map(\.package)) == Self.packages
            }
            #expect(renewed, "SUBSCRIBEd after the restore: \(subscribes(lab, user: user, after: upAt).map(\.package))")
            try expectRegisteredBeforeSubscribing(lab, user: user, after: upAt)
        }
    }

    @Test func inBackgroundOthersPresenceIsDroppedAndNotRenewedOnRestore() async throws {
        let user = "bgwatch"
        try await withSubscribedClient(user) { lab in
            let backgroundAt = realtime()
            let reply = try await lab.ctl(user, ["state", "background"])
            #expect(reply.contains("ok state background"), "netres ctl: \(reply)")
            let dropped = await eventually(within: .seconds(3)) {
                subscribes(lab, user: user, after: backgroundAt).contains {
                    $0.package == "presence-others" && $0.expires == "0"
                }
            }
            #expect(dropped, "no SUBSCRIBE with Expires: 0 for others' presence on entering background")

            let (_, upAt) = try await lab.flapClientLink()
            let kept = Self.packages.subtracting(["presence-others"])
            let renewed = await eventually(within: .seconds(3)) {
                Set(subscribes(lab, user: user, after: upAt).map(\.package)).isSuperset(of: kept)
            }
            // The restore's subscriptions run as one batch: one more second is ample for a stray one.
            try await Task.sleep(for: .seconds(1))
            let after = subscribes(lab, user: user, after: upAt).map(\.package)
            #expect(renewed, "SUBSCRIBEd after the restore: \(after)")
            #expect(!after.contains("presence-others"), "others' presence was SUBSCRIBEd in background: \(after)")
            try expectRegisteredBeforeSubscribing(lab, user: user, after: upAt)
        }
    }
}
