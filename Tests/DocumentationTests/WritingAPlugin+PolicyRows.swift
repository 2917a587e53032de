// doc:begin Sources/ResilienceCore/ResilienceCore.docc/WritingAPlugin.md
import NetResilience

extension ActionKind {
    /// The chat plugin's own action: fetch what changed in the roster while it was away.
    static let syncRoster: Self = "chat.sync-roster"
}

/// The session that receives messages takes the registration rows (up in every app state,
/// reconnected after a loss or a change); the roster's presence takes the rows of others'
/// presence (unsubscribed in the background, subscribed again in the foreground).
let chatServices = [
    ClientService(id: "chat.session", kind: .registration, account: "me"),
    ClientService(id: "chat.roster", kind: .subscription(.presenceOthers), account: "me"),
]

/// The default policy plus one rule of the chat's own: sync the roster on coming to the foreground.
let chatPolicy: Policy = {
    var policy = Policy.default
    policy.rules.append(
        Rule(
            "chat-sync-roster", on: [.named("app.entered-foreground")], when: [.foreground],
            for: [.subscription(.presenceOthers)], do: [.syncRoster]))
    return policy
}()
// doc:end
