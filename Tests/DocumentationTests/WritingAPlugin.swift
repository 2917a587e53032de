// doc:begin Sources/ResilienceCore/ResilienceCore.docc/WritingAPlugin.md
import Logging
import ResilienceCore

/// What the plugin needs from the app's transport; tests pass a fake.
protocol SessionTransport: Sendable {
    func connect(from address: String?) async throws
    func close() async
}

/// The transport's failure, with the server's status and Retry-After.
struct SessionError: Error {
    var status: Int
    var retryAfter: Duration?
}

struct SessionPlugin: ResiliencePlugin {
    let id = "example.session"
    let service: ServiceID
    let transport: any SessionTransport

    func performs(_ kind: ActionKind, for candidate: ServiceID) -> Bool {
        candidate == service && [.register, .refreshRegistration, .unregister, .pingFlow].contains(kind)
    }

    func perform(_ action: PlannedAction, context: PluginContext) async throws {
        context.logger.debug("performing", metadata: ["attempt": "\(context.attempt)"])
        switch action.kind {
        case .register, .refreshRegistration, .pingFlow:
            let address = context.path.addresses.first?.address
            do {
                try await transport.connect(from: address)
            } catch let error as SessionError where error.status == 503 {
                throw PluginError("server busy", retryAfter: error.retryAfter)
            } catch let error as SessionError where error.status == 403 {
                throw PluginError.permanent("forbidden")
            }
        case .unregister:
            await transport.close()
        default:
            throw PluginError.permanent("unsupported action \(action.kind)")
        }
    }
}
// doc:end

// doc:begin Sources/ResilienceCore/ResilienceCore.docc/WritingAPlugin.md
extension ActionKind {
    static let flushOutbox: Self = "example.flush-outbox"
}
// doc:end

// doc:begin Sources/ResilienceCore/ResilienceCore.docc/WritingAPlugin.md
extension SessionPlugin {  // doc:hidden
    var localActions: Set<ActionKind> { [.flushOutbox] }  // writes to disk, needs no network
}  // doc:hidden
// doc:end
