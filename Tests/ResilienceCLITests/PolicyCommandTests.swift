import ChildProcesses
import Foundation
import Testing

/// Runs the built `netres` binary (next to the test bundle in the build products directory).
struct PolicyCommandTests {
    static let products = Bundle.main.bundleURL
    static let netres = products.appendingPathComponent("netres")
    static let built = FileManager.default.isExecutableFile(atPath: netres.path)

    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// `netres ARGUMENTS`, waited for off the concurrency pool (see `ChildProcess.runOffThePool`).
    static func run(_ arguments: String...) async throws -> Result {
        let finished = try await ChildProcess.runOffThePool([netres.path] + arguments)
        return Result(status: finished.exitCode, stdout: finished.output, stderr: finished.errors)
    }

    static func temporaryFile(_ contents: [UInt8]) throws -> String {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("netres-policy-\(UUID()).yaml")
        try Data(contents).write(to: url)
        return url.path
    }

    @Test(.enabled(if: built, "netres is not built"))
    func theDefaultPolicyPrintsAndChecksClean() async throws {
        let printed = try await Self.run("policy", "default")
        #expect(printed.status == 0)
        #expect(printed.stdout.contains("levels:"))
        let file = try Self.temporaryFile(Array(printed.stdout.utf8))
        defer { try? FileManager.default.removeItem(atPath: file) }
        let checked = try await Self.run("policy", "check", file)
        #expect(checked.status == 0)
        #expect(checked.stdout.contains("valid"))
        let json = try await Self.run("policy", "check", file, "--json")
        #expect(json.status == 0)
        #expect(json.stdout.contains("\"valid\" : true"))
    }

    @Test(.enabled(if: built, "netres is not built"))
    func aBadFileFailsWithALocatedHint() async throws {
        let file = try Self.temporaryFile(Array("levels:\n  - service: htpp\n    foreground: full\n".utf8))
        defer { try? FileManager.default.removeItem(atPath: file) }
        let checked = try await Self.run("policy", "check", file)
        #expect(checked.status == 1)
        #expect(checked.stderr.hasPrefix("\(file):2:14: error: unknown service \"htpp\""))
        #expect(checked.stderr.contains("hint: did you mean \"http\"?"))
        let json = try await Self.run("policy", "check", file, "--json")
        #expect(json.status == 1)
        #expect(json.stdout.contains("\"line\" : 2") && json.stdout.contains("\"code\" : \"unknown-name\""))
    }

    @Test(.enabled(if: built, "netres is not built"))
    func nonUTF8AndMissingFilesFailWithoutCrashing() async throws {
        let file = try Self.temporaryFile([0x76, 0x3A, 0x20, 0xFF, 0x0A])
        defer { try? FileManager.default.removeItem(atPath: file) }
        #expect(try await Self.run("policy", "check", file).status == 1)
        #expect(try await Self.run("policy", "check", "/nonexistent.yaml").status == 1)
        let endless = try await Self.run("policy", "check", "/dev/zero")
        #expect(endless.status == 1 && endless.stderr.contains("larger than 1 MiB"))
        let empty = try Self.temporaryFile([])
        defer { try? FileManager.default.removeItem(atPath: empty) }
        let checked = try await Self.run("policy", "check", empty)
        #expect(checked.status == 1 && checked.stderr.contains("\(empty):1:1: error: the file has no YAML document"))
    }

    @Test(.enabled(if: built, "netres is not built"))
    func explainShowsTheBackgroundTable() async throws {
        let result = try await Self.run(
            "policy", "explain", "--state", "foreground", "--trigger", "app.entered-background")
        #expect(result.status == 0)
        #expect(result.stdout.contains("1. unsubscribe  <- rule background-unsubscribe"))
        #expect(result.stdout.contains("2. drain-http  <- rule background-drain-http"))
        #expect(result.stdout.contains("call.incoming.held            level signaling-only"))
        let json = try await Self.run(
            "policy", "explain", "--state", "background", "--trigger", "network.restored", "--json")
        #expect(json.status == 0)
        let decoded = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
        let services = decoded?["services"] as? [[String: Any]] ?? []
        #expect(services.count == 15)
        let http = services.first { $0["id"] as? String == "http" }
        #expect(http?["level"] as? String == "none")
        #expect((http?["actions"] as? [Any])?.isEmpty == true)
    }

    @Test(.enabled(if: built, "netres is not built"))
    func explainRejectsUnknownNamesWithAHint() async throws {
        let result = try await Self.run("policy", "explain", "--state", "background", "--trigger", "network.restord")
        #expect(result.status != 0)
        #expect(result.stderr.contains("did you mean \"network.restored\"?"))
        let state = try await Self.run("policy", "explain", "--state", "backgroud", "--trigger", "shutdown")
        #expect(state.status != 0)
        #expect(state.stderr.contains("did you mean \"background\"?"))
    }
}
