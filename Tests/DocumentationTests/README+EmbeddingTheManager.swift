// doc:begin README.md
import Logging
import NetResilience
import ServiceLifecycle
import UnixSignals

/// Your protocol stack, wrapped as a plugin: the manager decides what to do and when.
struct ChatPlugin: ResiliencePlugin {
    let id = "chat"
    func performs(_ kind: ActionKind, for service: ServiceID) -> Bool {
        service == "chat.session" && [.register, .refreshRegistration, .unregister].contains(kind)
    }

    func perform(_ action: PlannedAction, context: PluginContext) async throws {
        switch action.kind {
        case .register, .refreshRegistration:
            context.logger.info("reconnecting", metadata: ["from": "\(context.path.addresses.first?.address ?? "-")"])
        case .unregister:
            context.logger.info("closing")
        default:
            break
        }
    }
}

func embedTheManager() async throws {  // doc:hidden
    let logger = Logger(label: "app")
    let monitor = NetlinkMonitor(logger: logger)
    try await monitor.start()
    let manager = ResilienceManager(source: monitor, plugins: [ChatPlugin()], logger: logger)
    await manager.register(ClientService(id: "chat.session", kind: .registration, account: "me"))
    let group = ServiceGroup(services: [manager], gracefulShutdownSignals: [.sigterm], logger: logger)
    try await group.run()  // meanwhile: await manager.setAppState(.background), ...
}  // doc:hidden
// doc:end
