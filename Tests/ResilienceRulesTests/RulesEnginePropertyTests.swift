import ResilienceCore
import ResilienceRules
import Testing

/// Properties of the default policy over seeded random services and trigger sequences.
struct RulesEnginePropertyTests {
    static let seeds: [UInt64] = Array(1...200)
    let t0 = Fixtures.t0

    /// Runs one scenario like a host would: after `interrupted` the held calls report `held`, and
    /// sometimes a call changes state on its own before a `call.state-changed`.
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
                services[i].kind = .call(d, rng.pick(CallState.allCases))
                trigger = .callStateChanged(services[i].id)
            }
            let before = engine
            let batch = engine.decide(trigger, services: services, at: t0 + .seconds(step))
            steps.append(Step(before: before, after: engine, trigger: trigger, services: services, batch: batch))
            if trigger == .app(.interrupted) {
                for i in services.indices where batch.contains(where: { $0.service == services[i].id }) {
                    if case .call(let d, _) = services[i].kind { services[i].kind = .call(d, .held) }
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
        var heldByInterruption: Set<ServiceID> = []
        for step in scenario(seed: seed) {
            let (after, trigger, services, batch) = (step.after, step.trigger, step.services, step.batch)
            let resumed = Set(batch.filter { $0.kind == .resumeCall }.map(\.service))
            #expect(resumed.isSubset(of: heldByInterruption))
            let endsOrRestores: Bool =
                switch trigger {
                case .app(.interruptionEnded), .network(.restored), .network(.changed): true
                default: false
                }
            if !endsOrRestores || after.isInterrupted { #expect(resumed.isEmpty) }
            if case .callStateChanged(let id) = trigger,
                let call = services.first(where: { $0.id == id }), call.kind != .call(.incoming, .held),
                call.kind != .call(.outgoing, .held)
            {
                heldByInterruption.remove(id)
            }
            heldByInterruption.subtract(resumed)
            if trigger == .app(.interrupted) {
                heldByInterruption.formUnion(batch.filter { $0.kind == .holdCall }.map(\.service))
            }
            #expect(after.callsHeldByInterruption == heldByInterruption)
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
