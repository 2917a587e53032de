// doc:begin Sources/ResilienceCore/ResilienceCore.docc/EmbeddingInAClientStack.md
import Logging
import ResilienceCore
import ResilienceRules
import ResilienceRuntime
import ServiceLifecycle
import UnixSignals

/// Starts resilience for one SIP account and the app's HTTP client.
/// `monitor` is the netlink monitor in production, a ScriptedNetworkSource in tests.
func runClient(
    monitor: some NetworkEventSource,
    sip: some ResiliencePlugin,
    http: some ResiliencePlugin,
    appStates: AsyncStream<AppState>
) async throws {
    let logger = Logger(label: "client.resilience")
    var policy = Policy.default
    policy.holdDown = .seconds(3)  // a loss is decided once it has lasted 3 s

    let manager = ResilienceManager(source: monitor, policy: policy, plugins: [sip, http], logger: logger)

    let now = ContinuousClock.now
    await manager.register(
        ClientService(id: "alice.registration", kind: .registration, account: "alice", expires: now + .seconds(3600)))
    await manager.register(
        ClientService(
            id: "alice.mwi", kind: .subscription(.messageSummary), account: "alice", expires: now + .seconds(3600)))
    await manager.register(ClientService(id: "api", kind: .http))

    let group = ServiceGroup(services: [manager], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)

    try await withThrowingTaskGroup(of: Void.self) { tasks in
        tasks.addTask { try await group.run() }
        tasks.addTask {
            for await state in appStates { await manager.setAppState(state) }
        }
        tasks.addTask {
            for await event in manager.events() {
                if case .action(let action) = event, case .failed(let error) = action.outcome {
                    logger.warning(
                        "gave up", metadata: ["service.id": "\(action.action.service)", "error": "\(error)"])
                }
            }
        }
        _ = try await tasks.next()
        tasks.cancelAll()
    }
}
// doc:end

// doc:begin Sources/ResilienceCore/ResilienceCore.docc/EmbeddingInAClientStack.md
func reportTheGrantedExpiry(  // doc:hidden
    of service: ClientService, context: PluginContext, expiresFromOK: Int,  // doc:hidden
    reportContinuation: AsyncStream<PluginReport>.Continuation  // doc:hidden
) {  // doc:hidden
    var registration = service
    registration.expires = context.now + .seconds(expiresFromOK)  // the 200 OK's Expires, clamped
    reportContinuation.yield(.serviceChanged(registration))  // read by the manager's run()
}  // doc:hidden
// doc:end
