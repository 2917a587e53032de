import Logging
import ResilienceCore
import ResilienceTesting
import Synchronization

@testable import SIPPlugin

/// A path with one loopback address, as the path tracker would hand it to the plugin.
func loopbackPath(_ address: String = "127.0.0.1") -> NetworkPath {
    let family: AddressFamily = address.contains(":") ? .ipv6 : .ipv4
    return NetworkPath(
        status: .satisfied, primaryInterface: InterfaceRef(ifindex: 1, name: "lo"),
        addresses: [
            InterfaceAddress(
                ifindex: 1, family: family, address: address, prefixLength: family == .ipv4 ? 8 : 128, scope: 254)
        ])
}

func testLogger(_ label: String) -> Logger {
    var logger = Logger(label: "sip-test.\(label)")
    logger.logLevel = .info
    return logger
}

func context(_ address: String = "127.0.0.1", seconds: Int = 40) -> PluginContext {
    .fixture(path: loopbackPath(address), timeout: .seconds(seconds), logger: testLogger("context"))
}

func action(_ kind: ActionKind, _ service: ServiceID) -> PlannedAction {
    .fixture(kind, for: service)
}

/// A unique user name so tests never share registrar state.
func uniqueUser(_ prefix: String) -> String { "\(prefix)\(UInt32.random(in: 100_000...999_999))" }

/// What a test-side server (sipp, a scripted peer) could not do.
struct HarnessError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Awaits `task` under a hang guard: once `seconds` of real time pass (generous: a guard against
/// hanging the run, never a bound on speed) the guard cancels the task and says so, so a test
/// whose behaviour is missing fails instead of waiting forever on a clock nobody moves.
func outcome<T: Sendable>(
    of task: Task<T, any Error>, hangGuard seconds: Double = 30
) async -> (result: Result<T, any Error>, guardFired: Bool) {
    let fired = Mutex(false)
    let guardTask = Task {
        try await Task.sleep(for: .milliseconds(Int(seconds * 1000)))
        fired.withLock { $0 = true }
        task.cancel()
    }
    defer { guardTask.cancel() }
    let result = await task.result
    return (result, fired.withLock { $0 })
}

/// What an agent reported through `onFlowLost`, in order.
final class LossRecorder: Sendable {
    private let reports = Mutex<[[ServiceID]]>([])

    var all: [[ServiceID]] { reports.withLock { $0 } }

    func record(_ services: [ServiceID]) { reports.withLock { $0.append(services) } }
}

/// The first flow loss on `plugin.reports`, or nil after `seconds`.
func firstLoss(of plugin: SIPPlugin, within seconds: Int = 5) async -> [ServiceID]? {
    await withTaskGroup(of: [ServiceID]?.self) { group in
        group.addTask {
            for await report in plugin.reports { if case .flowLost(let lost) = report { return lost } }
            return nil
        }
        group.addTask {
            try? await Task.sleep(for: .seconds(seconds))
            return nil
        }
        let first = await group.next() ?? nil
        group.cancelAll()
        return first
    }
}

/// A request as a peer sends it: top Via from `sentBy` with `branch`, From with a tag, To,
/// Call-ID and CSeq.
func peerRequest(
    _ method: String, uri: String = "sip:alice@198.18.0.2:5060", sentBy: String = "198.18.0.1:5060",
    branch: String = "z9hG4bKpeer", callID: String = "unsolicited-1", cseq: Int = 1, toTag: String? = nil
) -> SIPMessage {
    var request = SIPMessage.request(method, uri: uri)
    request.headers.add("Via", "SIP/2.0/UDP \(sentBy);branch=\(branch)")
    request.headers.add("From", "<sip:bob@198.18.0.1>;tag=peer")
    request.headers.add("To", "<\(uri)>" + (toTag.map { ";tag=\($0)" } ?? ""))
    request.headers.add("Call-ID", callID)
    request.headers.add("CSeq", "\(cseq) \(method)")
    return request
}
