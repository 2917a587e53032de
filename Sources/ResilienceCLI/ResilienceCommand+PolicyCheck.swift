import ArgumentParser
import ResilienceOutput
import ResiliencePolicyFile
import ResilienceRules

extension ResilienceCommand.Policy {
    /// `netres policy check FILE`: exit 0 when the file is a valid policy, 1 with a located error.
    struct Check: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "check",
            abstract: "Validate a policy file; exit 0 when valid."
        )

        @Argument(help: "The YAML policy file.")
        var file: String

        @Flag(help: "Print the result as JSON.")
        var json = false

        struct Summary {
            var valid = true
            var file: String
            var levels: Int
            var rules: Int
            var services: Int

            var json: JSONValue {
                .object(
                    JSONObject([
                        ("valid", .bool(valid)), ("file", .string(file)), ("levels", .int(Int64(levels))),
                        ("rules", .int(Int64(rules))), ("services", .int(Int64(services))),
                    ]))
            }
        }

        func run() throws {
            let document: PolicyDocument
            do {
                document = try PolicyFile.load(path: file)
            } catch {
                throw ResilienceCommand.Policy.report(error, json: json)
            }
            let summary = Summary(
                file: file, levels: document.policy.levels.count, rules: document.policy.rules.count,
                services: document.services.count)
            if json {
                print(ResilienceCommand.Policy.json(summary.json))
            } else {
                print("\(file): valid (\(summary.levels) level rows, \(summary.rules) rules)")
            }
        }
    }
}
