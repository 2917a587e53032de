import ChildProcesses
import Foundation
import Glibc
import NetworkLab
import Testing

/// `netres lab` as a non-Swift user runs it: scenario files, a command in the client host, and
/// nothing left behind, even when `netres lab` itself is killed mid-run.
@Suite(.needsNamespaces, .timeLimit(.minutes(2)))
struct LabCommandTests {
    static let netres = Bundle.main.bundleURL.appendingPathComponent("netres").path

    /// Runs `netres ARGUMENTS` to completion (≤ 60 s); exit status and output.
    func netres(_ arguments: [String]) async throws -> (status: Int32, output: String) {
        let output = NSTemporaryDirectory() + "netres-lab-\(UUID().uuidString).out"
        defer { unlink(output) }
        let child = try ChildProcess([Self.netres] + arguments, output: output, newProcessGroup: true)
        let exited = await eventually(within: .seconds(60)) { child.hasExitedUnreaped() }
        if !exited { kill(-child.pid, SIGKILL) }
        let status = child.waitForExit()
        return ((status >> 8) & 0xff, (try? String(contentsOfFile: output, encoding: .utf8)) ?? "")
    }

    func scenario(_ text: String) throws -> String {
        let path = NSTemporaryDirectory() + "netres-lab-\(UUID().uuidString).yaml"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test func aBadStepIsRejectedWithFileLineAndColumnBeforeAnyNamespaceIsMade() async throws {
        let file = try scenario("links: [wifi]\ntimeline:\n  - at 2s carrier-los for 3s\n")
        defer { unlink(file) }
        let (status, output) = try await netres(["lab", "run", file, "--", "/bin/true"])
        #expect(status == 1)
        #expect(!output.contains("seed"), "no lab was made")
        #expect(output.contains("\(file):3:11: error: unknown fault \"carrier-los\""), "\(output)")
        #expect(output.contains("did you mean \"carrier-loss\""))
    }

    @Test func anySeedALabPrintsCanBeReplayedFromTheScenario() async throws {
        let file = try scenario("seed: 18446744073709551615\nlinks: [wifi]\n")
        defer { unlink(file) }
        let (status, output) = try await netres(["lab", "check", file])
        #expect(status == 0, "\(output)")
        let zero = try scenario("seed: 0\n")
        defer { unlink(zero) }
        let (rejected, message) = try await netres(["lab", "check", zero])
        #expect(rejected == 1 && message.contains("\(zero):1:7: error: seed must be"), "\(message)")
    }

    @Test func theCommandRunsInTheClientHostWhileTheTimelinePlaysAndTheTimelineIsPrinted() async throws {
        let file = try scenario(
            """
            links: [wifi]
            duration: 20s
            timeline:
              - at 0s carrier-loss wifi for 500ms
              - at 1s address-change break-before-make
            """)
        defer { unlink(file) }
        let (status, output) = try await netres([
            "lab", "run", file, "--", "/bin/sh", "-c", "sleep 2; ip -o -4 address show wifi; exit 3",
        ])
        #expect(status == 3, "the command's exit status: \(output)")
        #expect(output.contains("carrier-loss wifi for 0.5 seconds: end [iproute2]"), "\(output)")
        #expect(output.contains("address-change wifi break-before-make: end"))
        #expect(output.contains("wifi    inet 198.18.1."), "the command saw the client host's link")
        #expect(!output.contains("198.18.1.2/24"), "the address had changed before the command looked")
    }

    /// A command that ends while steps still wait: the steps are dropped, the report is whole
    /// and the status is the command's (it once ended in `Error: CancellationError()`, exit 1).
    @Test func aCommandEndingBeforeTheTimelineGetsTheWholeReportAndItsOwnStatus() async throws {
        let file = try scenario(
            """
            links: [wifi]
            duration: 40s
            timeline:
              - at 0s carrier-loss wifi for 200ms
              - at 30s address-change
            """)
        defer { unlink(file) }
        let (status, output) = try await netres(["lab", "run", file, "--", "/bin/sh", "-c", "sleep 2; exit 5"])
        #expect(status == 5, "the command's exit status: \(output)")
        #expect(output.contains("netres lab: timeline"), "\(output)")
        #expect(output.contains("carrier-loss wifi for 0.2 seconds: end [iproute2]"))
        #expect(!output.contains("address-change"), "the step after the command's end was not played")
        #expect(!output.contains("CancellationError"))
        let (_, help) = try await netres(["lab", "run", "--help"])
        let words = help.split(whereSeparator: \.isWhitespace).joined(separator: " ")  // the help is wrapped
        #expect(words.contains("whichever comes first") && words.contains("the whole report"), "\(help)")
    }

    /// A command that does not exist fails at once, naming it, before the timeline starts.
    @Test func aMissingCommandFailsAtOnceNamingIt() async throws {
        let file = try scenario("links: [wifi]\nduration: 40s\n")
        defer { unlink(file) }
        let missing = "/nonexistent/netres-\(UUID().uuidString)"
        let (status, output) = try await netres(["lab", "run", file, "--", missing])
        #expect(status == 2, "\(output)")
        #expect(output.contains("cannot start \(missing)"), "\(output)")
    }

    @Test func aKilledLabLeavesObjectsThatTheNextGarbageCollectionRemoves() async throws {
        let file = try scenario("registrar: \(LabRegistrar.isInstalled)\nlinks: [wifi]\nduration: 60s\n")
        defer { unlink(file) }
        let output = NSTemporaryDirectory() + "netres-lab-\(UUID().uuidString).out"
        defer { unlink(output) }
        let marker = "labmark-\(UUID().uuidString)"
        let child = try ChildProcess(
            [Self.netres, "lab", "run", file, "--", "/bin/sh", "-c", "sleep 50; : \(marker)"], output: output)
        let prefix = "\(LabOwnership.prefix)\(child.pid)-"
        let up = await eventually(within: .seconds(20)) {
            (try? String(contentsOfFile: output, encoding: .utf8))?.contains("seed") == true
                && LabOwnership.namespaces().filter { $0.hasPrefix(prefix) }.count == 2
                && (!LabRegistrar.isInstalled || processes(inPathsContaining: prefix) > 0)
                && processes(inPathsContaining: marker) > 0
        }
        kill(child.pid, SIGKILL)
        _ = child.waitForExit()
        #expect(up, "the lab came up: \((try? String(contentsOfFile: output, encoding: .utf8)) ?? "")")
        #expect(LabOwnership.namespaces().contains { $0.hasPrefix(prefix) }, "the killed lab left its namespaces")
        let (status, gc) = try await netres(["lab", "gc"])
        #expect(status == 0, "\(gc)")
        // Every lab start runs the same collection of dead owners' labs, so another suite's lab
        // starting between the kill and `netres lab gc` may be the next collection (gc then
        // names nothing of this lab): either way everything of the lab is gone after it.
        #expect(!LabOwnership.namespaces().contains { $0.hasPrefix(prefix) })
        let files = (try? FileManager.default.contentsOfDirectory(atPath: "/tmp")) ?? []
        #expect(!files.contains { $0.hasPrefix(prefix) }, "its folder and command files are gone")
        #expect(processes(inPathsContaining: prefix) == 0, "Kamailio is gone too")
        #expect(processes(inPathsContaining: marker) == 0, "the command is gone too")
    }

    /// Processes whose command line mentions `text` (the lab folder Kamailio and its config live in,
    /// or the namespace name `ip netns exec` carries).
    func processes(inPathsContaining text: String) -> Int {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.filter { entry in
            guard Int32(entry) != nil, let data = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline") else {
                return false
            }
            return String(decoding: data.map { $0 == 0 ? 32 : $0 }, as: UTF8.self).contains(text)
        }.count
    }
}
