import ArgumentParser
import Foundation
import ResilienceOutput
import ResiliencePolicyFile

extension ResilienceCommand {
    /// `netres policy`: print, check and explain policy files.
    struct Policy: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "policy",
            abstract: "Print, check and explain policy files.",
            subcommands: [Default.self, Check.self, Explain.self]
        )
    }
}

extension ResilienceCommand.Policy {
    /// Writes text to standard error (errors and diagnostics never go to standard output).
    static func printError(_ text: String) {
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }

    /// Pretty, key-sorted JSON of a value, as one string.
    static func json(_ value: JSONValue) -> String {
        value.sortingKeys().prettyRendered
    }

    /// Prints a policy-file error (human or JSON) and returns the failure exit code.
    static func report(_ error: PolicyFileError, json asJSON: Bool) -> ExitCode {
        if asJSON {
            print(json(error.jsonReport))
        } else {
            printError(error.description)
        }
        return ExitCode(1)
    }
}
