import Foundation
import Logging
import NetlinkMonitor
import ResilienceCore
import ResilienceRules
import ResilienceRuntime
import SIPPlugin

/// The NetResilience client of `sip-recovery`: `netres-bench sip-client USER`, started by the lab
/// inside the client namespace (so its sockets live there). It is what `netres run` does for one
/// account: NetlinkMonitor on `nrc0` (hold-down 0) → ResilienceManager with the default policy →
/// SIPPlugin registering USER (password `secret-USER`) at 198.18.0.1 over UDP. As the daemon does,
/// an initial satisfied path is answered with `resumed` so the first REGISTER goes out at start;
/// after that only the manager's own decisions act. Runs until killed.
func runSIPBenchClient(user: String) async throws {
    var logger = Logger(label: "netres-bench.sip-client")
    logger.logLevel = .notice
    let monitor = NetlinkMonitor(filter: InterfaceFilter(["nrc0"]), holdDown: .zero, logger: logger)
    try await monitor.start()
    var policy = Policy.default
    policy.lossHoldDown = .zero
    let account = SIPAccount(
        name: user, registrarHost: SIPLab.registrarAddress, registrarPort: SIPLab.port, user: user,
        domain: SIPLab.registrarAddress, password: "secret-\(user)")
    let sip = SIPPlugin(accounts: [account], logger: logger)
    let manager = ResilienceManager(source: monitor, policy: policy, plugins: [sip], logger: logger)
    for service in sip.services { await manager.register(service) }
    let events = manager.events()
    try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { try await manager.run() }
        group.addTask {
            for await event in events {
                if case .transition(let transition) = event, transition.kind == .initial, transition.path.isSatisfied {
                    await manager.handle(.resumed)
                }
            }
        }
        try await group.next()
        group.cancelAll()
    }
}
