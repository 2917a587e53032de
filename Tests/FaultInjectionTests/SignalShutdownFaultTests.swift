import Foundation
import Testing

/// The built `netres run` takes SIGTERM and SIGINT through its own pipe (no `DispatchSource`):
/// each still shuts it down gracefully, unregistering at the real registrar, and exits 0.
@Suite(.serialized, .needsNamespaces, .enabled(if: RegistrarLab.isInstalled, "needs kamailio"), .timeLimit(.minutes(1)))
struct SignalShutdownFaultTests {
    @Test(arguments: [SIGTERM, SIGINT])
    func aSignalUnregistersAndExitsZero(signal: Int32) async throws {
        let user = "signal\(signal)"
        let lab = try await RegistrarLab.running()
        defer { lab.stop() }
        let pid = try lab.startClient(user: user, config: try lab.writeDaemonConfig(user: user))
        try #require(await waitUntil(seconds: 10) { !lab.lines("REGISTERED", user: user).isEmpty })
        #expect(try await lab.boundContacts().contains { $0.contains("sip:\(user)@") })
        kill(pid, signal)
        var status: Int32 = -1
        // Hang guard only: the README promises a stop within 5 s of the signal.
        let exited = blockingWait(seconds: 10) { waitpid(pid, &status, WNOHANG) == pid }
        try #require(exited, "netres run did not exit within 10 s of signal \(signal)")
        lab.forget(pid)
        #expect(status == 0, "exit status word \(status)")
        #expect(try await !lab.boundContacts().contains { $0.contains("sip:\(user)@") })
    }
}
