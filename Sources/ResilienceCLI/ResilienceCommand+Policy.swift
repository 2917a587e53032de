import ArgumentParser
import Foundation
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
    static func json(_ value: some Encodable) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(value) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }

    /// The JSON shape of a ``PolicyFileError``.
    struct ErrorReport: Encodable {
        var valid = false
        var error: Body

        struct Body: Encodable {
            var code: String
            var file: String
            var line: Int
            var column: Int
            var message: String
            var expected: String
            var hint: String?
        }

        init(_ e: PolicyFileError) {
            error = Body(
                code: e.code.rawValue, file: e.file, line: e.line, column: e.column, message: e.message,
                expected: e.expected, hint: e.hint)
        }
    }

    /// Prints a policy-file error (human or JSON) and returns the failure exit code.
    static func report(_ error: PolicyFileError, json asJSON: Bool) -> ExitCode {
        if asJSON {
            print(json(ErrorReport(error)))
        } else {
            printError(error.description)
        }
        return ExitCode(1)
    }
}
