import ChildProcesses
import Foundation
import Testing

/// systemd's offline unit checker, when installed.
let systemdAnalyze = ["/usr/bin/systemd-analyze", "/bin/systemd-analyze"].first {
    FileManager.default.isExecutableFile(atPath: $0)
}

/// `examples/netres.service` as systemd itself reads it (`systemd-analyze`, offline: no systemd
/// needs to run here), with `ExecStart` pointed at the built `netres`.
@Suite(.enabled(if: systemdAnalyze != nil, "needs systemd-analyze (Debian systemd)"))
struct SystemdUnitTests {
    static let example = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../examples/netres.service").standardized
    static let netres = Bundle.main.bundleURL.appendingPathComponent("netres").path

    /// The example with the built binary in place of `/usr/local/bin/netres`, in a fresh folder
    /// (systemd names the unit after the file).
    func installedCopy() throws -> URL {
        let text = try String(contentsOf: Self.example, encoding: .utf8)
        #expect(text.contains("ExecStart=/usr/local/bin/netres run --config "))
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("netres-unit-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let unit = folder.appendingPathComponent("netres.service")
        try text.replacingOccurrences(of: "/usr/local/bin/netres", with: Self.netres)
            .write(to: unit, atomically: true, encoding: .utf8)
        return unit
    }

    /// `systemd-analyze ARGUMENTS` (seconds under load), waited for off the concurrency pool.
    func analyze(_ arguments: [String]) async throws -> (status: Int32, output: String) {
        let finished = try await ChildProcess.runOffThePool([systemdAnalyze!] + arguments)
        return (finished.exitCode, finished.output + finished.errors)
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: netres), "netres is not built"))
    func theExampleUnitVerifiesClean() async throws {
        let unit = try installedCopy()
        defer { try? FileManager.default.removeItem(at: unit.deletingLastPathComponent()) }
        let result = try await analyze(["verify", unit.path])
        #expect(result.status == 0, "systemd-analyze verify: \(result.output)")
        #expect(!result.output.contains("netres.service"), "\(result.output)")
    }

    /// The hardening stays in place: systemd's own exposure score stays in its "OK" band (< 4.0;
    /// an unhardened service scores 9.6).
    @Test func theExampleUnitIsHardened() async throws {
        let unit = try installedCopy()
        defer { try? FileManager.default.removeItem(at: unit.deletingLastPathComponent()) }
        let result = try await analyze(["security", "--offline=yes", unit.path])
        let marker = "Overall exposure level for netres.service: "
        let line = result.output.split(separator: "\n").first { $0.contains(marker) }
        let score = line.flatMap { Double($0.components(separatedBy: marker)[1].prefix { $0 != " " }) }
        let found = try #require(score, "no exposure level in: \(result.output)")
        #expect(found < 4.0, "\(line ?? "")")
    }

    /// `make install-unit` (part of `make install`) writes the unit with `ExecStart` under the
    /// install prefix, and systemd verifies it where it lands, for both usual prefixes: checked in
    /// a throw-away root holding the system's own units and an executable at the prefix's
    /// `bin/netres` (what `make install` puts there; its content does not matter to `verify`).
    @Test(arguments: ["/usr", "/usr/local"])
    func theInstalledUnitStartsTheInstalledNetresAndVerifies(prefix: String) async throws {
        let make = try #require(
            ["/usr/bin/make", "/bin/make"].first { FileManager.default.isExecutableFile(atPath: $0) }, "needs make")
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("netres-root-\(UUID().uuidString)")
            .path
        defer { try? FileManager.default.removeItem(atPath: root) }
        let units = root + "/usr/lib/systemd/system"
        try FileManager.default.createDirectory(atPath: units, withIntermediateDirectories: true)
        for unit in try FileManager.default.contentsOfDirectory(atPath: "/usr/lib/systemd/system") {
            try? FileManager.default.copyItem(atPath: "/usr/lib/systemd/system/" + unit, toPath: units + "/" + unit)
        }
        let repository = Self.example.deletingLastPathComponent().deletingLastPathComponent().path
        let installed = try await ChildProcess.runOffThePool([
            make, "-s", "-C", repository, "install-unit", "DESTDIR=\(root)", "PREFIX=\(prefix)",
        ])
        #expect(installed.exitCode == 0, "make install-unit: \(installed.output)\(installed.errors)")
        let unit = "\(root)\(prefix)/lib/systemd/system/netres.service"
        let text = try String(contentsOfFile: unit, encoding: .utf8)
        #expect(text.contains("\nExecStart=\(prefix)/bin/netres run --config /etc/netres/netres.yaml\n"), "\(text)")
        try FileManager.default.createDirectory(atPath: "\(root)\(prefix)/bin", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: "/bin/true", toPath: "\(root)\(prefix)/bin/netres")
        let result = try await analyze(["verify", "--root=\(root)", unit])
        #expect(result.status == 0 && result.output.isEmpty, "systemd-analyze verify: \(result.output)")
    }

    /// The unit gives `netres run` more time to stop than it may take: the manager's teardown
    /// deadline (5 s), then a running hook's default timeout (10 s) and its kill grace (2 s).
    @Test func theStopTimeoutCoversTheTeardownDeadline() throws {
        let text = try String(contentsOf: Self.example, encoding: .utf8)
        let line = text.split(separator: "\n").first { $0.hasPrefix("TimeoutStopSec=") }
        let seconds = try #require(line.flatMap { Int($0.dropFirst("TimeoutStopSec=".count)) })
        #expect(seconds > 5 + 10 + 2)
        #expect(text.contains("KillSignal=SIGTERM"))
    }
}

/// Under CI the unit must be checked: a missing systemd-analyze is a failure, not a skip.
struct SystemdUnitSupportTests {
    @Test func systemdAnalyzeIsInstalledUnderCI() {
        guard systemdAnalyze == nil, ProcessInfo.processInfo.environment["CI"] == "true" else { return }
        Issue.record("CI=true but systemd-analyze is missing: the example unit was not checked")
    }
}
