public import ResilienceCore

/// Two rules that would plan opposite actions (subscribe / unsubscribe, hold / resume, ...) for
/// the same service on the same trigger in the same app state.
public struct RuleConflict: Hashable, Sendable, CustomStringConvertible {
    /// Index of the earlier rule in ``Policy/rules``.
    public var first: Int
    /// Index of the later rule (equal to `first` when one rule contradicts itself).
    public var second: Int
    public var firstAction: ActionKind
    public var secondAction: ActionKind
    /// A trigger name on which both fire.
    public var trigger: String
    /// A service kind both select.
    public var service: String

    public var description: String {
        "\(firstAction) and \(secondAction) for \(service) on \(trigger)"
    }
}

extension TriggerPattern {
    /// Whether the pattern matches a concrete trigger name.
    public func matches(name other: String) -> Bool { other == name || other.hasPrefix(name + ".") }
}

extension Policy {
    /// Every pair of rules that contradict each other, in rule order.
    ///
    /// Invariant: rules are assumed to overlap unless their triggers, states or selectors are
    /// disjoint, or one requires `turned-on` and the other `turned-off`.
    public func conflicts() -> [RuleConflict] {
        var found: [RuleConflict] = []
        for i in rules.indices {
            for j in i..<rules.count {
                if let conflict = conflict(between: i, and: j) { found.append(conflict) }
            }
        }
        return found
    }

    private func conflict(between i: Int, and j: Int) -> RuleConflict? {
        let a = rules[i]
        let b = rules[j]
        let opposite = a.actions.lazy.flatMap { x in b.actions.lazy.map { (x, $0) } }.first(
            where: ActionKind.areOpposite)
        guard let (x, y) = opposite, !a.when.isDisjoint(with: b.when) else { return nil }
        let exclusive: Set<RuleCondition> = [.turnedOn, .turnedOff]
        guard Set(a.conditions).union(b.conditions).intersection(exclusive).count < 2 || i == j else { return nil }
        guard
            let trigger = TriggerPattern.concreteNames.first(where: { name in
                a.on.contains { $0.matches(name: name) } && b.on.contains { $0.matches(name: name) }
            }),
            let kind = ServiceKind.representatives.first(where: { a.selects($0) && b.selects($0) })
        else { return nil }
        return RuleConflict(
            first: i, second: j, firstAction: x, secondAction: y, trigger: trigger,
            service: ServiceSelector(exactly: kind).name)
    }
}

extension Policy {
    /// Bring-up actions of a rule that the level table always drops: every service the rule selects
    /// is at level `none` in every state the rule runs in, and no row allows the rule's triggers.
    /// Such a rule contradicts the table. Returned as (rule index, action), in rule order.
    public func unreachableActions() -> [(rule: Int, action: ActionKind)] {
        var found: [(rule: Int, action: ActionKind)] = []
        for (index, rule) in rules.enumerated() {
            let kinds = ServiceKind.representatives.filter(rule.selects)
            let reachable = kinds.contains { kind in
                let allowed =
                    row(for: kind)?.allowedOn.contains { pattern in rule.on.contains(where: pattern.overlaps) }
                    ?? false
                return allowed || rule.when.contains { level(of: kind, in: $0) > .none }
            }
            guard !reachable else { continue }
            found += rule.actions.filter(\.bringsUp).map { (index, $0) }
        }
        return found
    }
}

extension TriggerPattern {
    /// Whether some concrete trigger matches both patterns.
    public func overlaps(_ other: TriggerPattern) -> Bool {
        TriggerPattern.concreteNames.contains { matches(name: $0) && other.matches(name: $0) }
    }
}
