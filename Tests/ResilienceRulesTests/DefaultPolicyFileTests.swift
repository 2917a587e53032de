import ResilienceCore
import ResiliencePolicyFile
import ResilienceRules
import Testing

struct DefaultPolicyFileTests {
    @Test func theShippedDefaultFileParsesToExactlyPolicyDefault() throws {
        let text = PolicyFile.defaultYAML
        #expect(!text.isEmpty)
        let document = try PolicyFile.parse(text, file: "default-policy.yaml")
        #expect(document.policy.levels == Policy.default.levels)
        #expect(document.policy.rules == Policy.default.rules)
        #expect(document.policy == Policy.default)
        #expect(document.services.isEmpty)
    }

    @Test func theDefaultPolicyHasNoContradictions() {
        #expect(Policy.default.conflicts().isEmpty)
    }

    @Test func theDefaultFileIsCommented() {
        let lines = PolicyFile.defaultYAML.split(separator: "\n")
        #expect(lines.filter { $0.trimmingPrefix(while: \.isWhitespace).hasPrefix("#") }.count >= 10)
    }

    @Test func anEmptyMappingKeepsEveryDefault() throws {
        let document = try PolicyFile.parse("version: 1\n", file: "min.yaml")
        #expect(document.policy == Policy.default)
    }

    @Test(arguments: [
        ("2s", Duration.seconds(2)), ("600s", .seconds(600)), ("500ms", .milliseconds(500)), ("2m", .seconds(120)),
        ("1h", .seconds(3600)), ("0", .zero), ("1.5s", .milliseconds(1500)),
    ])
    func durationsParseInEveryUnit(text: String, expected: Duration) throws {
        let document = try PolicyFile.parse("hold-down: \(text)\n", file: "d.yaml")
        #expect(document.policy.holdDown == expected)
    }

    @Test func settingsAndExtraRulesAreRead() throws {
        let yaml = """
            hold-down: 0
            backoff: {initial: 500ms, multiplier: 2, jitter: 0.1, max: 1m}
            wake-up-minimum-interval: 2m
            refresh-margin: 10s
            call-survival-budget: 0
            flap-damping: {penalty: 500, suppress: 1200, reuse: 400, half-life: 5s, max-suppression: 20s}
            extra-rules:
              - name: close-on-loss
                on: network.lost
                for: registration
                do: close-stale-transports
            services:
              - {id: a.reg, kind: registration, account: a}
              - {id: c1, kind: call.incoming.alerting, account: a}
            """
        let document = try PolicyFile.parse(yaml, file: "s.yaml")
        let policy = document.policy
        #expect(policy.holdDown == .zero)
        #expect(
            policy.backoff
                == BackoffPolicy(initial: .milliseconds(500), multiplier: 2, jitter: 0.1, maximum: .seconds(60)))
        #expect(policy.wakeUpMinimumInterval == .seconds(120))
        #expect(policy.refreshMargin == .seconds(10))
        #expect(policy.callSurvivalBudget == .zero, "0 keeps calls across any outage")
        #expect(Policy.default.callSurvivalBudget == .seconds(30))
        #expect(
            policy.flapDamping
                == FlapDampingPolicy(
                    penalty: 500, suppressThreshold: 1200, reuseThreshold: 400, halfLife: .seconds(5),
                    maximumSuppression: .seconds(20)))
        #expect(policy.rules.count == Policy.defaultRules.count + 1)
        #expect(policy.rules.last?.name == "close-on-loss")
        #expect(document.services.map(\.id) == ["a.reg", "c1"])
        #expect(document.services.last?.kind == .call(.incoming, .alerting))
    }
}
