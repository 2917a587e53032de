import ChildProcesses
import Foundation
import NetworkLab
import ResilienceDaemon
import Testing

/// The built `netres run` (a TCP account, Kamailio in the lab) while 2,000 idle clients hold its
/// control socket: `ctl` still answers, the daemon holds no descriptor per client, and its SIP
/// flow still reconnects (an address change needs a new TCP connection).
@Suite(.serialized, .needsNamespaces, .enabled(if: DaemonLab.isInstalled, "needs kamailio"), .timeLimit(.minutes(3)))
struct ControlSocketFaultTests {
    /// The pid of the `netres run` whose command line names `config`.
    func daemonPID(config: String) -> pid_t? {
        let pids = (try? FileManager.default.contentsOfDirectory(atPath: "/proc"))?.compactMap { pid_t($0) } ?? []
        return pids.first { pid in
            guard let data = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") else { return false }
            let words = data.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
            return words.contains("run") && words.contains(config) && words.first?.hasSuffix("netres") == true
        }
    }

    @Test func twoThousandIdleControlClientsLeaveCtlAnsweringAndTheSIPFlowReconnecting() async throws {
        let user = "crowd"
        try await DaemonLab.registered(user, transport: "tcp") { lab in
            let config = lab.directory + "/netres-\(user).yaml"
            let pid = try #require(daemonPID(config: config))
            OpenFileLimit.raiseToHard()
            let socket = lab.controlSocket(of: user)
            let clients = await OffThePool.run {
                (0..<2000).compactMap { _ in try? ControlClient.connect(socket: socket, timeoutSeconds: 5) }
            }
            defer { for fd in clients { close(fd) } }
            #expect(clients.count == 2000)

            let status = try await lab.ctl(user, ["status"])
            #expect(status.contains(user), "netres ctl status: \(status)")
            let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? 0
            #expect(descriptors > 0 && descriptors < 500, "netres holds \(descriptors) descriptors with 2,000 clients")

            let new = try await lab.moveClient()
            let rebound = await eventually(within: .seconds(5)) {
                lab.lines("REGISTERED", user: user).contains { isContact($0.contact, at: new) }
            }
            #expect(
                rebound, "a new TCP flow from the new address: \(lab.lines("REGISTERED", user: user).map(\.contact))")
        }
    }
}
