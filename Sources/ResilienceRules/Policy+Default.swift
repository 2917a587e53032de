import ResilienceCore

extension Policy {
    /// The seed's service table, row by row. `default-policy.yaml` must parse to exactly this.
    public static let defaultLevels: [ServiceLevelRow] = [
        ServiceLevelRow(
            .registration, foreground: .full, background: .full, note: "needed to receive incoming events"),
        ServiceLevelRow(
            .subscription, foreground: .full, background: .full,
            note: "notifications still wake the client"),
        ServiceLevelRow(.subscription(.presenceSelf), foreground: .full, background: .full, note: "self-presence"),
        ServiceLevelRow(
            .subscription(.presenceOthers), foreground: .full, background: .none,
            note: "unsubscribe on entering background, resubscribe on foreground"),
        ServiceLevelRow(
            .presencePublish, foreground: .full, background: .none, allowedOn: [.named("call.state-changed")],
            note: "in background only on call-state change"),
        ServiceLevelRow(.call(.outgoing), foreground: .full, background: .full, note: "outgoing calls proceed"),
        ServiceLevelRow(
            .call(.incoming), foreground: .full, background: .full, note: "incoming INVITE wakes the client"),
        ServiceLevelRow(.call(.active), foreground: .full, background: .full, note: "media stays"),
        ServiceLevelRow(.call(.held), foreground: .full, background: .signalingOnly, note: "no media"),
        ServiceLevelRow(
            .call(.remotelyHeld), foreground: .full, background: .full, note: "music on hold keeps playing"),
        ServiceLevelRow(
            .http, foreground: .full, background: .none,
            note: "finish pending requests, then close; refuse new ones until foreground"),
    ]

    /// The default reactions (ARCHITECTURE.md, "Typical consequences of the default policy").
    public static let defaultRules: [Rule] = {
        let restore: [TriggerPattern] = [.named("network.restored"), .named("network.changed")]
        let newAddress: [TriggerPattern] = [
            .named("network.changed.address"), .named("network.changed.interface-switched"),
        ]
        let awake: Set<AppState> = [.foreground, .background]
        let established: [ServiceSelector] = [.call(.active), .call(.held), .call(.remotelyHeld)]
        return [
            Rule("start-register", on: [.named("started")], when: awake, for: [.registration], do: [.register]),
            Rule("start-subscribe", on: [.named("started")], when: awake, for: [.subscription], do: [.subscribe]),
            Rule(
                "start-publish", on: [.named("started")], when: [.foreground], for: [.presencePublish],
                do: [.publishPresence]),
            Rule("start-open-http", on: [.named("started")], when: [.foreground], for: [.http], do: [.openHTTP]),
            Rule(
                "restore-close-stale-transports", on: newAddress, when: awake, for: [.registration],
                do: [.closeStaleTransports]),
            Rule("restore-register", on: restore, when: awake, for: [.registration], do: [.register]),
            Rule(
                "restore-unregister-old-contact", on: newAddress, when: awake, for: [.registration],
                do: [.unregisterOldContact]),
            Rule("restore-subscribe", on: restore, when: awake, for: [.subscription], do: [.subscribe]),
            Rule(
                "restore-resume", on: restore, when: awake, for: [.call(.held)], if: [.heldByInterruption],
                do: [.resumeCall]),
            Rule("restore-reinvite", on: restore, when: awake, for: established, do: [.reinviteCall]),
            // A call still ringing out is rung again from the new address (CANCEL + new INVITE).
            Rule("restore-ring-again", on: restore, when: awake, for: [.call(.progressing)], do: [.reinviteCall]),
            Rule("restore-publish", on: restore, when: [.foreground], for: [.presencePublish], do: [.publishPresence]),
            Rule("restore-open-http", on: restore, when: [.foreground], for: [.http], do: [.openHTTP]),
            Rule(
                "background-unsubscribe", on: [.named("app.entered-background")], when: [.background],
                for: [.subscription], if: [.turnedOff], do: [.unsubscribe]),
            Rule(
                "background-drain-http", on: [.named("app.entered-background")], when: [.background], for: [.http],
                if: [.turnedOff], do: [.drainHTTP]),
            Rule(
                "foreground-refresh-registration", on: [.named("app.entered-foreground")], when: [.foreground],
                for: [.registration], if: [.stale], do: [.refreshRegistration]),
            Rule(
                "foreground-resubscribe", on: [.named("app.entered-foreground")], when: [.foreground],
                for: [.subscription], if: [.turnedOn], do: [.subscribe]),
            Rule(
                "foreground-refresh-subscription", on: [.named("app.entered-foreground")], when: [.foreground],
                for: [.subscription], if: [.stale], do: [.refreshSubscription]),
            Rule(
                "foreground-open-http", on: [.named("app.entered-foreground")], when: [.foreground], for: [.http],
                if: [.turnedOn], do: [.openHTTP]),
            Rule(
                "interrupted-hold", on: [.named("app.interrupted")], when: awake, for: [.call(.active)], do: [.holdCall]
            ),
            Rule(
                "interruption-ended-resume", on: [.named("app.interruption-ended")], when: awake, for: [.call(.held)],
                if: [.heldByInterruption], do: [.resumeCall]),
            Rule(
                "resumed-refresh-registration", on: [.named("app.resumed")], when: awake, for: [.registration],
                if: [.stale], do: [.refreshRegistration]),
            Rule(
                "resumed-refresh-subscription", on: [.named("app.resumed")], when: awake, for: [.subscription],
                if: [.stale], do: [.refreshSubscription]),
            Rule(
                "call-state-publish", on: [.named("call.state-changed")], when: awake, for: [.presencePublish],
                do: [.publishPresence]),
            Rule(
                "refresh-due-registration", on: [.named("refresh.due")], when: awake, for: [.registration],
                if: [.due], do: [.refreshRegistration]),
            Rule(
                "refresh-due-subscription", on: [.named("refresh.due")], when: awake, for: [.subscription],
                if: [.due], do: [.refreshSubscription]),
            Rule(
                "flow-lost-register", on: [.named("flow.lost")], when: awake, for: [.registration], if: [.affected],
                do: [.register]),
            Rule(
                "flow-lost-subscribe", on: [.named("flow.lost")], when: awake, for: [.subscription], if: [.affected],
                do: [.subscribe]),
            Rule(
                "flow-ping", on: [.named("flow.ping-due")], when: awake, for: [.registration], if: [.affected],
                do: [.pingFlow]),
            Rule(
                "push-token-register", on: [.named("push.token-changed")], when: awake, for: [.registration],
                do: [.register]),
            // RFC 8599: suspended with a push token is asleep (no flow, no refresh, no ping); the
            // registrar keeps the binding and pushes. Without a token, suspended keeps its flow.
            Rule(
                "suspend-release-flow", on: [.named("app.suspending")], when: [.suspended], for: [.registration],
                if: [.pushAvailable, .noCall], do: [.releaseFlow]),
            // A push registers the pushed account at once through a new flow, in every state;
            // awake, its subscriptions follow (after the registration).
            Rule(
                "push-register", on: [.named("push.received")], for: [.registration], if: [.affected], do: [.register]),
            Rule(
                "push-subscribe", on: [.named("push.received")], when: awake, for: [.subscription], if: [.affected],
                do: [.subscribe]),
            Rule(
                "push-window-release-flow", on: [.named("push.window-ended")], when: [.suspended], for: [.registration],
                if: [.affected, .pushAvailable, .noCall], do: [.releaseFlow]),
            Rule(
                "shutdown-drain-http", on: [.named("shutdown")], when: awake, for: [.http], if: [.running],
                do: [.drainHTTP]),
            Rule(
                "shutdown-unsubscribe", on: [.named("shutdown")], when: awake, for: [.subscription], if: [.running],
                do: [.unsubscribe]),
            Rule("shutdown-unregister", on: [.named("shutdown")], when: awake, for: [.registration], do: [.unregister]),
        ]
    }()
}
