import Foundation
import Logging
import ResilienceCore
import ResilienceDaemon
import ResilienceRuntime
import ResilienceTesting
import ServiceLifecycle
import Testing

extension DaemonKamailioTests {
    /// The config's `app-state` is where the daemon starts: in the background a 1 s flow-ping
    /// interval sends no ping (the first may come after the 600 s minimum background interval);
    /// in the foreground the same config pings within seconds, so the guard can fail.
    @Test(arguments: [AppState.background, .foreground])
    func theConfigsAppStateDecidesTheFirstFlowPing(state: AppState) async throws {
        let kamailio = try await offPool { try KamailioHarness() }
        do {
            try await startIn(state, kamailio)
        } catch {
            _ = try? await offPool { kamailio.stop() }
            throw error
        }
        _ = try await offPool { kamailio.stop() }
    }

    func startIn(_ state: AppState, _ kamailio: KamailioHarness) async throws {
        let user = uniqueUser("appstate")
        let directory = URL(fileURLWithPath: "/tmp/netres-appstate-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let configPath = directory.appendingPathComponent("netres.yaml").path
        try """
        log-format: json
        control-socket: ctl.sock
        app-state: \(state.rawValue)
        \(accountsEntry(user, kamailio))
            password: secret-\(user)
            flow-ping: 1s
        """.write(toFile: configPath, atomically: true, encoding: .utf8)
        let (daemon, group, running, lines) = try await startDaemon(configPath: configPath)
        let startedAt = ContinuousClock.now
        defer { running.cancel() }

        #expect(try await eventually { try await contacts(kamailio).count == 1 })
        #expect(await daemon.manager.status().appState == state)
        func pinged() async -> Bool { await lines.all.contains { $0.contains(#""action":"ping-flow""#) } }
        if state == .foreground {
            #expect(try await eventually { await pinged() })
        } else {
            // Four ping intervals (a hang guard's length, not a timing assertion): none is sent,
            // and the next wake-up is minutes away (the refresh at 600 − 30 s, or the first ping
            // after the 600 s minimum background interval), not the 1 s ping interval.
            try await Task.sleep(for: .seconds(4))
            #expect(!(await pinged()))
            let next = try #require(await daemon.manager.status().nextWakeUp)
            #expect(next - startedAt >= .seconds(500))
        }
        await group.triggerGracefulShutdown()
        try await running.value
        await daemon.stop()
    }
}
