import ArgumentParser
import ResilienceCore
import ResilienceOutput
import ResiliencePolicyFile
import ResilienceRules

extension ResilienceCommand.Policy {
    /// `netres policy explain`: per service, the ordered actions a trigger causes in a state and
    /// the rule and level row behind each.
    struct Explain: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "explain",
            abstract: "Show, per service, the actions a trigger causes in an app state, and why.",
            discussion: """
                Services: one of each kind (registration, each subscription package, a call in each state, \
                presence publish, HTTP), or the `services` of --policy. Registrations and subscriptions count as \
                expired. Actions are numbered in batch order; `after` names services whose actions go first.

                Triggers: \(TriggerPattern.concreteNames.joined(separator: ", ")).
                """
        )

        @Option(
            help:
                "The app state when the trigger arrives: \(AppState.allCases.map(\.rawValue).joined(separator: ", ")).")
        var state: String

        @Option(help: "The trigger, e.g. network.restored, network.changed.address, app.entered-background.")
        var trigger: String

        @Option(help: "A YAML policy file (default: the built-in policy). Its `services` replace the sample set.")
        var policy: String?

        @Flag(help: "Print the explanation as JSON.")
        var json = false

        @Flag(
            help:
                "Explain for accounts without a push token (RFC 8599): suspended keeps its flow instead of sleeping.")
        var noPushToken = false

        func run() throws {
            guard let appState = AppState(rawValue: state) else {
                throw usage("state", state, among: AppState.allCases.map(\.rawValue))
            }
            var document = PolicyDocument(policy: .default)
            if let policy {
                do {
                    document = try PolicyFile.load(path: policy)
                } catch {
                    throw ResilienceCommand.Policy.report(error, json: json)
                }
            }
            let now = ContinuousClock.now
            let services =
                document.services.isEmpty ? PolicyExplainer.representativeServices(expiringAt: now) : document.services
            guard TriggerPattern.allNames.contains(trigger),
                let resolved = PolicyExplainer.trigger(named: trigger, services: services)
            else {
                throw usage("trigger", trigger, among: TriggerPattern.concreteNames)
            }
            let explanation = PolicyExplainer.explain(
                policy: document.policy, state: appState, trigger: resolved, services: services, at: now,
                pushToken: !noPushToken)
            print(json ? ResilienceCommand.Policy.json(explanation.json) : Self.render(explanation, policy: policy))
        }

        private func usage(_ option: String, _ value: String, among names: [String]) -> any Error {
            var message = "unknown \(option) \"\(value)\"; expected one of \(names.joined(separator: ", "))"
            if let hint = NameHint.suggestion(for: value, among: names) { message += "\nhint: \(hint)" }
            return ValidationError(message)
        }

        /// Human output: a header, then one block per service.
        static func render(_ e: PolicyExplanation, policy: String?) -> String {
            var lines = [
                "policy: \(policy ?? "default")",
                "state: \(e.state), trigger: \(e.trigger) -> state: \(e.stateAfter)",
            ]
            lines += e.setup.map { "setup: \($0)" }
            let width = (e.services.map(\.id.count).max() ?? 0) + 2
            for service in e.services {
                let id = service.id + String(repeating: " ", count: width - service.id.count)
                var head = "\(id)level \(service.level)"
                if let row = service.row { head += "  (row \(row)\(service.note.map { ": \($0)" } ?? ""))" }
                lines.append("")
                lines.append(head)
                if service.actions.isEmpty { lines.append("  - no action") }
                for step in service.actions {
                    lines.append("  \(step.order). \(step.action)  <- \(step.source)")
                    if !step.after.isEmpty { lines.append("     after: \(step.after.joined(separator: ", "))") }
                }
            }
            return lines.joined(separator: "\n")
        }
    }
}
