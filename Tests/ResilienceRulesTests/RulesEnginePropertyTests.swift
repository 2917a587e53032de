import ResilienceCore
import ResilienceRules
import Testing

/// Properties of the default policy over seeded random services and trigger sequences.
struct RulesEnginePropertyTests {
    static let seeds: [UInt64] = Array(1...200)
    let t0 = Fixtures.t0

    /// Runs one scenario like a host would: after `interrupted` the held calls report `held` for
    /// the interruption, after a `resume-call` `active`, and sometimes a call changes state on
    /// its own (no longer held for the interruption unless still held) before a
    /// `call.state-changed`.
    struct Step: Equatable {
        var before: RulesEngine
        var after: RulesEngine
        var trigger: Trigger
        var services: [ClientService]
        var batch: [PlannedAction]
    }

    func scenario(seed: UInt64) -> [Step] {
        var rng = SeededGenerator(seed: seed)
        var services = rng.services(at: t0)
        var policy = Policy.default
        if rng.chance(0.5) {
            // Shuffle the level table's values: the engine's guarantees hold for any table.
            for i in policy.levels.indices {
                let row = policy.levels[i]
                policy.levels[i] = ServiceLevelRow(
                    row.selector, foreground: rng.pick(ServiceLevel.allCases),
                    background: rng.pick(ServiceLevel.allCases),
                    suspended: rng.pick(ServiceLevel.allCases), allowedOn: row.allowedOn)
            }
        }
        var engine = RulesEngine(
            policy: policy, appState: rng.pick(AppState.allCases), networkAvailable: rng.chance(0.8))
        engine.pushAccounts = rng.chance(0.5) ? ["a", "b"] : []
        var steps: [Step] = []
        for step in 0..<30 {
            var trigger = rng.trigger(for: services)
            if case .callStateChanged = trigger, let i = services.indices.randomElement(using: &rng),
                case .call(let d, _) = services[i].kind
            {
                let state = rng.pick(CallState.allCases)
                services[i].kind = .call(d, state)
                services[i].heldByInterruption = services[i].heldByInterruption && state == .held
                trigger = .callStateChanged(services[i].id)
            }
            let before = engine
            let batch = engine.decide(trigger, services: services, at: t0 + .seconds(step))
            steps.append(Step(before: before, after: engine, trigger: trigger, services: services, batch: batch))
            for i in services.indices {
                guard case .call(let d, _) = services[i].kind else { continue }
                if trigger == .app(.interrupted), batch.contains(where: { $0.service == services[i].id }) {
                    services[i].kind = .call(d, .held)
                    services[i].heldByInterruption = true
                }
                if batch.contains(where: { $0.service == services[i].id && $0.kind == .resumeCall }) {
                    services[i].kind = .call(d, .active)
                    services[i].heldByInterruption = false
                }
            }
        }
        return steps
    }

    @Test(arguments: seeds)
    func sameInputGivesSameDecisions(seed: UInt64) {
        let first = scenario(seed: seed)
        let second = scenario(seed: seed)
        #expect(first == second)
    }

    @Test(arguments: seeds)
    func noActionBringsUpAServiceWhoseLevelIsNone(seed: UInt64) {
        for step in scenario(seed: seed) {
            let (after, trigger, services, batch) = (step.after, step.trigger, step.services, step.batch)
            for action in batch where action.kind.bringsUp {
                let service = services.first { $0.id == action.service }!
                let allowed = after.policy.row(for: service.kind)?.allowedOn.contains { $0.matches(trigger) } ?? false
                #expect(after.level(of: service, in: after.appState) > .none || allowed, "\(action)")
            }
        }
    }

    @Test(arguments: seeds)
    func networkActionsOnlyWithANetworkAndOnlyPushAndSleepWhileSuspended(seed: UInt64) {
        for step in scenario(seed: seed) {
            let (after, batch) = (step.after, step.batch)
            if !after.networkAvailable { #expect(batch.allSatisfy { !$0.kind.needsNetwork }) }
            // Suspended, only RFC 8599 acts: a push registers, sleep releases the flow.
            guard after.appState == .suspended else { continue }
            for action in batch {
                if case .push = step.trigger {
                    #expect(action.kind == .register, "\(action)")
                } else {
                    #expect(action.kind == .releaseFlow, "\(action)")
                }
            }
        }
    }

    @Test(arguments: seeds)
    func batchesAreOrderedRegistrationFirstAndNamed(seed: UInt64) {
        for step in scenario(seed: seed) {
            let (services, batch) = (step.services, step.batch)
            let kindOf = Dictionary(uniqueKeysWithValues: services.map { ($0.id, $0) })
            for (i, action) in batch.enumerated() {
                #expect(action.source.hasPrefix("rule "))
                #expect(batch.filter { $0.kind == action.kind && $0.service == action.service }.count == 1)
                for dependency in action.after {
                    #expect(batch[..<i].contains { $0.service == dependency }, "\(action) runs after \(dependency)")
                }
                let service = kindOf[action.service]!
                guard service.kind != .registration, action.kind != .unregister else { continue }
                let registrations = batch.filter {
                    $0.kind != .unregister && kindOf[$0.service]!.kind == .registration
                        && kindOf[$0.service]!.account == service.account
                }
                #expect(Set(registrations.map(\.service)).isSubset(of: action.after))
            }
        }
    }

    @Test(arguments: seeds)
    func resumesMatchOnlyTheHoldsOfTheInterruption(seed: UInt64) {
        for step in scenario(seed: seed) {
            let (after, trigger, services, batch) = (step.after, step.trigger, step.services, step.batch)
            let resumed = Set(batch.filter { $0.kind == .resumeCall }.map(\.service))
            let heldByInterruption = Set(services.filter(\.heldByInterruption).map(\.id))
            #expect(resumed.isSubset(of: heldByInterruption))
            let endsOrRestores: Bool =
                switch trigger {
                case .app(.interruptionEnded), .network(.restored), .network(.changed): true
                default: false
                }
            if !endsOrRestores || after.isInterrupted { #expect(resumed.isEmpty) }
        }
    }
}

extension RulesEnginePropertyTests {
    /// Guards the properties against vacuity: the scenarios do reach every default action.
    @Test func theScenariosExerciseEveryDefaultAction() {
        var seen: Set<ActionKind> = []
        for seed in Self.seeds {
            for step in scenario(seed: seed) { seen.formUnion(step.batch.map(\.kind)) }
        }
        #expect(seen == Set(Policy.default.rules.flatMap(\.actions)))
    }
}
