import Foundation
import NetworkLab
import Testing

/// The built `netres run` takes SIGTERM and SIGINT through its own pipe (no `DispatchSource`):
/// each still shuts it down gracefully, unregistering at the real registrar, and exits 0.
@Suite(.serialized, .needsNamespaces, .enabled(if: DaemonLab.isInstalled, "needs kamailio"), .timeLimit(.minutes(3)))
struct SignalShutdownFaultTests {
    @Test(arguments: [SIGTERM, SIGINT])
    func aSignalUnregistersAndExitsZero(signal: Int32) async throws {
        let user = "signal\(signal)"
        try await DaemonLab.with { lab in
            let pid = try await lab.startClient(user: user, config: try lab.writeDaemonConfig(user: user))
            try #require(await eventually(within: .seconds(10)) { !lab.lines("REGISTERED", user: user).isEmpty })
            #expect(try await lab.boundContacts().contains { $0.contains("sip:\(user)@") })
            kill(pid, signal)
            var status: Int32?
            // Hang guard only: the README promises a stop within 5 s of the signal.
            let exited = await eventually(within: .seconds(10)) {
                status = await lab.lab.exitStatus(of: pid)
                return status != nil
            }
            try #require(exited, "netres run did not exit within 10 s of signal \(signal)")
            #expect(status == 0, "exit status word \(status ?? -1)")
            #expect(try await !lab.boundContacts().contains { $0.contains("sip:\(user)@") })
        }
    }
}
