import ArgumentParser
import ResiliencePolicyFile

extension ResilienceCommand.Policy {
    /// `netres policy default`: prints the commented default policy (the seed's service table).
    struct Default: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "default",
            abstract: "Print the default policy as a commented YAML file."
        )

        func run() throws {
            let text = PolicyFile.defaultYAML
            guard !text.isEmpty else {
                ResilienceCommand.Policy.printError("error: the default policy resource is missing")
                throw ExitCode(2)
            }
            print(text, terminator: text.hasSuffix("\n") ? "" : "\n")
        }
    }
}
