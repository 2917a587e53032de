import Foundation
import Testing

/// What an operator installs and asks first: the version line and the shell completions.
struct OperatorCommandTests {
    @Test(.enabled(if: PolicyCommandTests.built, "netres is not built"))
    func versionNamesThePackageAndTheLibnlInUse() async throws {
        let result = try await PolicyCommandTests.run("--version")
        #expect(result.status == 0)
        let line = result.stdout.trimmingCharacters(in: .newlines)
        #expect(line.hasPrefix("netres "), "\(line)")
        let libnl = try #require(line.split(separator: "(libnl ").last?.dropLast())
        let parts = libnl.split(separator: ".")
        #expect(parts.count == 3 && parts.allSatisfy { Int($0) != nil }, "libnl version \(libnl)")
        #expect(parts.first == "3", "libnl-3")
    }

    @Test(
        .enabled(if: PolicyCommandTests.built, "netres is not built"),
        arguments: [("bash", "-F _netres netres"), ("zsh", "#compdef netres"), ("fish", "complete -c 'netres'")])
    func completionScriptsComeFromTheArgumentParser(shell: String, marker: String) async throws {
        let result = try await PolicyCommandTests.run("--generate-completion-script", shell)
        #expect(result.status == 0)
        #expect(result.stdout.contains(marker), "\(result.stdout.prefix(300))")
        for subcommand in ["watch", "status", "wait-online", "policy", "run", "ctl"] {
            #expect(result.stdout.contains(subcommand), "\(shell) completion knows \(subcommand)")
        }
        for call in ["calls", "answer", "hangup", "resume", "interruption"] {
            #expect(result.stdout.contains(call), "\(shell) completion knows ctl \(call)")
        }
    }
}
