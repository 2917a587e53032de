import ChildProcesses
import Foundation
import NetworkLab
import Testing

/// `netres-ctl`, the small control client a push handler starts per push: it links no
/// Foundation, ICU or NIO (what makes `netres` itself take ~15 ms to start), and it speaks to a
/// real `netres run` as `netres ctl` does, with the same exit statuses.
@Suite(.serialized, .needsNamespaces, .enabled(if: DaemonLab.isInstalled, "needs kamailio"), .timeLimit(.minutes(3)))
struct NetresCtlTests {
    static let netresCtl = Bundle.main.bundleURL.appendingPathComponent("netres-ctl").path

    @Test func itNeedsOnlyTheStandardLibraryAndC() async throws {
        let dynamic = try await ChildProcess.runOffThePool(["/usr/bin/readelf", "-d", Self.netresCtl])
        let needed = dynamic.output.split(separator: "\n").filter { $0.contains("(NEEDED)") }
        #expect(!needed.isEmpty, "\(dynamic.output)")
        for library in needed {
            #expect(
                !["Foundation", "icu", "NIO", "dispatch", "XCTest"].contains { library.contains($0) },
                "netres-ctl links \(library)")
        }
    }

    @Test func itAnswersLikeNetresCtlWithTheSameExitStatuses() async throws {
        try await DaemonLab.registered("ctlfast") { lab in
            let socket = lab.controlSocket(of: "ctlfast")
            func ctl(_ words: String...) async throws -> ChildProcess.Finished {
                try await ChildProcess.runOffThePool([Self.netresCtl, "--socket", socket] + words)
            }
            let status = try await ctl("status", "--json")
            #expect(status.exitCode == 0 && status.output.contains("\"ctlfast.registration\""), "\(status.output)")
            let state = try await ctl("state", "background")
            #expect(state.exitCode == 0 && state.output == "ok state background\n")
            let push = try await ctl("push", "ctlfast", "--kind", "message", "--payload", "two words")
            #expect(push.exitCode == 0 && push.output == "ok push ctlfast message\n", "\(push.errors)")
            let wrong = try await ctl("state", "asleep")
            #expect(wrong.exitCode == 1 && wrong.errors.hasPrefix("error: unknown app state"), "\(wrong.errors)")
            let away = try await ChildProcess.runOffThePool([Self.netresCtl, "--socket", socket + ".gone", "status"])
            #expect(away.exitCode == 2)
            // `netres ctl events` and `netres-ctl events` print the stream, a welcome first.
            let events = try await ChildProcess.runOffThePool(
                [DaemonLab.netres, "ctl", "--socket", socket, "events", "--count", "1"])
            #expect(events.output.hasPrefix(#"{"type":"welcome","protocol":1"#), "\(events.output)\(events.errors)")
        }
    }
}
