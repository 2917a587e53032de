import ResilienceCore
import ResilienceRules
import Yams

extension LocatedYAML {
    static let topKeys = [
        "version", "hold-down", "backoff", "wake-up-minimum-interval", "refresh-margin", "flap-damping",
        "call-survival-budget", "push-wake-window", "levels", "rules", "extra-rules", "services",
    ]
    static let dampingKeys = ["penalty", "suppress", "reuse", "half-life", "max-suppression"]
    static let backoffKeys = ["initial", "multiplier", "jitter", "max"]
    static let levelKeys = ["service", "foreground", "background", "suspended", "allowed-on", "note"]
    static let ruleKeys = ["name", "on", "when", "for", "if", "do"]
    static let serviceKeys = ["id", "kind", "account"]

    /// Floors and ceilings that keep every repetition sane: no retry storm (`initial` of at least
    /// 100 ms, the runtime's own floor), no wake-up storm (a minimum wake-up interval of at least 1 s),
    /// no refresh storm (a margin of at most 30 min: a larger one is at or beyond any sane lifetime
    /// and would refresh continuously), and no wait so long it is a silent outage.
    static let holdDownRange = Duration.zero ... .seconds(3_600)
    static let wakeUpMinimumRange = Duration.seconds(1) ... .seconds(86_400)
    static let refreshMarginRange = Duration.seconds(1) ... .seconds(1_800)
    static let backoffInitialRange = Duration.milliseconds(100) ... .seconds(3_600)
    static let backoffMaximumRange = Duration.milliseconds(100) ... .seconds(86_400)
    static let dampingTimeRange = Duration.seconds(1) ... .seconds(3_600)
    /// 0 keeps calls across any outage; more than a day is a typo, not a budget.
    static let callSurvivalBudgetRange = Duration.zero ... .seconds(86_400)
    /// A window under a second cannot carry a REGISTER and an INVITE; over 10 min is no sleep.
    static let pushWakeWindowRange = Duration.seconds(1) ... .seconds(600)

    /// The whole file: settings, level table, rules and explain services.
    func document(_ root: Node) throws(PolicyFileError) -> PolicyDocument {
        var policy = Policy.default
        var services: [ClientService] = []
        var fileRules: [(Rule, Node?)]?
        var extraRules: [(Rule, Node?)] = []
        for entry in try mapping(root, keys: Self.topKeys, what: "the policy") {
            let node = entry.value
            switch entry.key {
            case "version":
                guard try scalar(node, expected: "1") == "1" else {
                    throw fail(.invalidValue, at: node, "unsupported version", expected: "1")
                }
            case "hold-down": policy.holdDown = try duration(node, what: "hold-down", in: Self.holdDownRange)
            case "wake-up-minimum-interval":
                policy.wakeUpMinimumInterval = try duration(
                    node, what: "wake-up-minimum-interval", in: Self.wakeUpMinimumRange)
            case "refresh-margin":
                policy.refreshMargin = try duration(node, what: "refresh-margin", in: Self.refreshMarginRange)
            case "backoff": policy.backoff = try backoff(node)
            case "flap-damping": policy.flapDamping = try flapDamping(node)
            case "call-survival-budget":
                policy.callSurvivalBudget = try duration(
                    node, what: "call-survival-budget", in: Self.callSurvivalBudgetRange)
            case "push-wake-window":
                policy.pushWakeWindow = try duration(node, what: "push-wake-window", in: Self.pushWakeWindowRange)
            case "levels": policy.levels = try levels(node)
            case "rules": fileRules = try rules(node, what: entry.key)
            case "extra-rules": extraRules = try rules(node, what: entry.key)
            default: services = try self.services(node)
            }
        }
        let all = (fileRules ?? Policy.defaultRules.map { ($0, nil) }) + extraRules
        var seen: Set<String> = []
        for (rule, node) in all where !seen.insert(rule.name).inserted {
            throw fail(
                .duplicateKey, at: node ?? root, "rule \"\(rule.name)\" is defined twice", expected: "unique rule names"
            )
        }
        policy.rules = all.map(\.0)
        try checkConflicts(policy, ruleNodes: all.map(\.1), root: root)
        return PolicyDocument(policy: policy, services: services)
    }

    func backoff(_ node: Node) throws(PolicyFileError) -> BackoffPolicy {
        var backoff = BackoffPolicy()
        var maxNode: Node?
        for entry in try mapping(node, keys: Self.backoffKeys, what: "backoff") {
            switch entry.key {
            case "initial":
                backoff.initial = try duration(entry.value, what: "backoff.initial", in: Self.backoffInitialRange)
            case "multiplier": backoff.multiplier = try number(entry.value, in: 1...100, what: "backoff.multiplier")
            case "jitter": backoff.jitter = try number(entry.value, in: 0...1, what: "backoff.jitter")
            default:
                backoff.maximum = try duration(entry.value, what: "backoff.max", in: Self.backoffMaximumRange)
                maxNode = entry.value
            }
        }
        if backoff.maximum < backoff.initial {
            throw fail(
                .contradiction, at: maxNode ?? node, "backoff.max is shorter than backoff.initial",
                expected: "max at least initial")
        }
        return backoff
    }

    /// `flap-damping: { penalty, suppress, reuse, half-life, max-suppression }`; reuse below suppress.
    func flapDamping(_ node: Node) throws(PolicyFileError) -> FlapDampingPolicy {
        var damping = FlapDampingPolicy()
        var reuseNode: Node?
        for entry in try mapping(node, keys: Self.dampingKeys, what: "flap-damping") {
            let value = entry.value
            switch entry.key {
            case "penalty": damping.penalty = try number(value, in: 0...1_000_000, what: "flap-damping.penalty")
            case "suppress":
                damping.suppressThreshold = try number(value, in: 1...1_000_000, what: "flap-damping.suppress")
            case "reuse":
                damping.reuseThreshold = try number(value, in: 1...1_000_000, what: "flap-damping.reuse")
                reuseNode = value
            case "half-life":
                damping.halfLife = try duration(value, what: "flap-damping.half-life", in: Self.dampingTimeRange)
            default:
                damping.maximumSuppression = try duration(
                    value, what: "flap-damping.max-suppression", in: Self.dampingTimeRange)
            }
        }
        guard damping.reuseThreshold < damping.suppressThreshold else {
            throw fail(
                .contradiction, at: reuseNode ?? node, "flap-damping.reuse is not below flap-damping.suppress",
                expected: "reuse below suppress (suppression must be able to end)")
        }
        return damping
    }

    func levels(_ node: Node) throws(PolicyFileError) -> [ServiceLevelRow] {
        guard case .sequence(let items) = node else {
            throw fail(
                .wrongType, at: node, "levels must be a list, found \(describe(node))", expected: "a list of rows")
        }
        var rows: [ServiceLevelRow] = []
        for item in items {
            let entries = try mapping(item, keys: Self.levelKeys, what: "a level row")
            let serviceNode = try require("service", in: entries, of: item, what: "a level row")
            let selector = try self.selector(serviceNode)
            if let previous = rows.first(where: { $0.selector == selector }) {
                throw fail(
                    .contradiction, at: serviceNode, "service \(selector) already has a level row",
                    expected: "one row per service",
                    hint: "merge it with the earlier row (foreground \(previous.foreground.rawValue))")
            }
            let foreground = try level(try require("foreground", in: entries, of: item, what: "a level row"))
            let background = try level(try require("background", in: entries, of: item, what: "a level row"))
            var suspended: ServiceLevel?
            var allowedOn: [TriggerPattern] = []
            var note: String?
            for entry in entries {
                switch entry.key {
                case "suspended": suspended = try level(entry.value)
                case "allowed-on": allowedOn = try list(entry.value, expected: "trigger names", trigger)
                case "note": note = try scalar(entry.value, expected: "text")
                default: break
                }
            }
            rows.append(
                ServiceLevelRow(
                    selector, foreground: foreground, background: background, suspended: suspended,
                    allowedOn: allowedOn, note: note))
        }
        return rows
    }

    func rules(_ node: Node, what: String) throws(PolicyFileError) -> [(Rule, Node?)] {
        guard case .sequence(let items) = node else {
            throw fail(
                .wrongType, at: node, "\(what) must be a list, found \(describe(node))", expected: "a list of rules")
        }
        var rules: [Rule] = []
        for item in items {
            let entries = try mapping(item, keys: Self.ruleKeys, what: "a rule")
            let nameNode = try require("name", in: entries, of: item, what: "a rule")
            let name = try scalar(nameNode, expected: "a rule name")
            if rules.contains(where: { $0.name == name }) {
                throw fail(
                    .duplicateKey, at: nameNode, "rule \"\(name)\" is defined twice", expected: "unique rule names")
            }
            let on = try list(
                try require("on", in: entries, of: item, what: "rule \(name)"), expected: "triggers", trigger)
            let selectors = try list(
                try require("for", in: entries, of: item, what: "rule \(name)"), expected: "services", selector)
            let actionsNode = try require("do", in: entries, of: item, what: "rule \(name)")
            let actions = try list(actionsNode, expected: "actions", action)
            var when = Set(AppState.allCases)
            var conditions: [RuleCondition] = []
            for entry in entries {
                switch entry.key {
                case "when": when = Set(try list(entry.value, expected: "app states", state))
                case "if": conditions = try list(entry.value, expected: "conditions", condition)
                default: break
                }
            }
            try checkApplicable(actions, to: selectors, at: actionsNode, rule: name)
            rules.append(Rule(name, on: on, when: when, for: selectors, if: conditions, do: actions))
        }
        return zip(rules, items).map { ($0, $1) }
    }

    /// Every built-in action must apply to every service family the rule selects.
    func checkApplicable(
        _ actions: [ActionKind], to selectors: [ServiceSelector], at node: Node, rule: String
    ) throws(PolicyFileError) {
        for action in actions {
            guard let families = action.families else { continue }
            for selector in selectors where selector.family.map({ !families.contains($0) }) ?? true {
                let fitting = ActionKind.builtIn.filter { $0.families?.contains(selector.family ?? .http) ?? true }
                throw fail(
                    .invalidValue, at: node, "action \(action) does not apply to \(selector) in rule \(rule)",
                    expected: "an action for \(selector): \(fitting.map(\.rawValue).joined(separator: ", "))")
            }
        }
    }

    func checkConflicts(_ policy: Policy, ruleNodes: [Node?], root: Node) throws(PolicyFileError) {
        if let (index, action) = policy.unreachableActions().first {
            let rule = policy.rules[index]
            throw fail(
                .contradiction, at: ruleNodes[index] ?? root,
                "rule \(rule.name) can never \(action): every service it selects is at level none when it runs",
                expected: "a rule that brings services up only in states where their level is above none",
                hint: "change its `when`, or the services' levels, or the row's allowed-on")
        }
        guard let conflict = policy.conflicts().first else { return }
        let node = ruleNodes[conflict.second] ?? ruleNodes[conflict.first] ?? root
        let names = (policy.rules[conflict.first].name, policy.rules[conflict.second].name)
        throw fail(
            .contradiction, at: node,
            "rules \(names.0) and \(names.1) contradict: \(conflict)",
            expected: "rules that never plan opposite actions for one service on one trigger",
            hint: "narrow `on`, `when`, `for` or `if` of one of them")
    }

    func services(_ node: Node) throws(PolicyFileError) -> [ClientService] {
        guard case .sequence(let items) = node else {
            throw fail(.wrongType, at: node, "services must be a list, found \(describe(node))", expected: "a list")
        }
        var services: [ClientService] = []
        for item in items {
            let entries = try mapping(item, keys: Self.serviceKeys, what: "a service")
            let idNode = try require("id", in: entries, of: item, what: "a service")
            let id = ServiceID(try scalar(idNode, expected: "a service id"))
            guard !services.contains(where: { $0.id == id }) else {
                throw fail(.duplicateKey, at: idNode, "service id \(id) appears twice", expected: "unique ids")
            }
            let exact = ServiceKind.representatives.map { ServiceSelector(exactly: $0).name }
            let kind = try name(
                try require("kind", in: entries, of: item, what: "service \(id)"), kind: "service kind", among: exact
            ) { text in ServiceKind.representatives.first { ServiceSelector(exactly: $0).name == text } }
            let account = try entries.first { $0.key == "account" }.map { e throws(PolicyFileError) in
                try scalar(e.value, expected: "an account name")
            }
            services.append(ClientService(id: id, kind: kind, account: account))
        }
        return services
    }
}
