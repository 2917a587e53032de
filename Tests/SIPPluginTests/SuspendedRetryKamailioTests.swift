import Logging
import NetworkLab
import ResilienceCore
import ResilienceRules
import ResilienceRuntime
import ResilienceTesting
import ServiceLifecycle
import Testing

@testable import SIPPlugin

/// A suspended client wakes for nothing but a push, against a real registrar: Kamailio on
/// loopback answers every REGISTER 503 (`Retry-After: 3`), the manager (default rules) with the
/// real `SIPPlugin` goes suspended while its retry waits in backoff, and the registrar's request
/// log counts the REGISTERs. Every bound is a hang guard; the 4 s watched while suspended is
/// longer than the retry's 3 s, so without the hold the registrar sees a REGISTER in it.
@Suite(
    .serialized,
    .enabled(if: LabRegistrar.isInstalled, "Kamailio (binary, kamcmd, modules, db_text tables) missing: SKIPPED"),
    .timeLimit(.minutes(3))
)
struct SuspendedRetryKamailioTests {
    @Test func aRegisterRetryBegunInTheForegroundSendsNothingWhileSuspendedAndRegistersInTheForeground() async throws {
        try await withLoopbackRegistrar { kamailio in
            let user = uniqueUser("sleeper")
            let logger = testLogger(user)
            let account = SIPAccount(
                name: user, registrarHost: "127.0.0.1", registrarPort: kamailio.port, transport: .udp, user: user,
                domain: "127.0.0.1", password: "secret-\(user)", expires: 300)
            let plugin = SIPPlugin(accounts: [account], logger: logger)
            try await kamailio.inject(.serviceUnavailable(retryAfter: 3, count: 1_000))
            let manager = ResilienceManager(
                source: ScriptedNetworkSource(path: loopbackPath()), policy: Policy(holdDown: .zero, flapDamping: .off),
                plugins: [plugin], logger: logger)
            for service in plugin.services { await manager.register(service) }
            let events = EventRecorder.recording(manager.events())
            let group = ServiceGroup(services: [manager], logger: logger)
            let running = Task { try await group.run() }
            defer { running.cancel() }
            let registration = account.registrationService

            try await events.wait("the first REGISTER answered 503, its retry in backoff") {
                $0.contains { $0.action?.action.service == registration && $0.action?.outcome.pluginError != nil }
            }
            await manager.setAppState(.suspended)
            try await events.wait("suspended") { $0.contains { $0.decision?.trigger == .app(.suspending) } }
            let suspendedAt = realtime()
            try await Task.sleep(for: .seconds(4))
            let whileSuspended = kamailio.transactionCount(of: "REGISTER", from: user, since: suspendedAt)
            #expect(whileSuspended == 0, "REGISTERs while suspended: \(kamailio.requests().suffix(4))")
            #expect(events.recorded.contains { $0.suspensionHold?.held == [registration] })

            try await kamailio.inject(.serviceUnavailable(retryAfter: 0, count: 0))
            await manager.setAppState(.foreground)
            let bound = await eventually(within: .seconds(15)) {
                (try? await kamailio.contacts())?.contains { $0.contains(user) } == true
            }
            #expect(bound, "not registered in the foreground: \(kamailio.requests().suffix(4))")
            await group.triggerGracefulShutdown()
            try await running.value
        }
    }
}
