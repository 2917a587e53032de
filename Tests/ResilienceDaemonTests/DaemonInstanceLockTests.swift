import ChildProcesses
import Foundation
import Logging
import ResilienceDaemon
import ResilienceTesting
import ServiceLifecycle
import Testing

/// One daemon per config: a second one is refused naming the first's PID and leaves its socket
/// alone; a stale socket file left by a dead daemon is replaced.
@Suite(.timeLimit(.minutes(3)))
struct DaemonInstanceLockTests {
    let directory = "/tmp/netres-lock-\(UUID().uuidString)"
    var socket: String { directory + "/ctl.sock" }

    func makeDaemon() throws -> Daemon {
        let config = try configWithoutAccounts(
            "control-socket: ctl.sock\n", file: directory + "/netres.yaml", directory: directory)
        var logger = Logger(label: "lock-test")
        logger.logLevel = .critical
        return try Daemon(config: config, source: ScriptedNetworkSource(), output: { _ in }, logger: logger)
    }

    /// `status` over the socket on a thread of its own, retried for up to 2 s while it appears.
    func status() async -> String? {
        for _ in 0..<200 {
            let reply = await OffThePool.run { try? ControlClient.send("status", socket: socket, timeoutSeconds: 10) }
            if let reply { return reply }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return nil
    }

    /// Leaves a socket file nobody listens on, as a daemon killed with SIGKILL does.
    func plantStaleSocket() throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, byte) in Array(socket.utf8).enumerated() { raw[i] = byte }
        }
        let fd = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        try #require(fd >= 0 && bound == 0)
    }

    @Test func aSecondDaemonIsRefusedNamingTheFirstAndTheFirstKeepsItsSocket() async throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try plantStaleSocket()
        #expect(await status() == nil, "nobody answers on the stale socket")

        let first = try makeDaemon()
        try await first.start()
        let group = first.makeGroup(signals: [])
        let running = Task { try await group.run() }
        #expect(await status() != nil, "the stale socket was replaced by a live one")

        let second = try makeDaemon()
        let error = await #expect(throws: DaemonError.self) { try await second.start() }
        #expect(error?.description.contains("pid \(getpid())") == true, "\(String(describing: error))")
        #expect(error?.description.contains(socket) == true)
        await second.stop()
        #expect(await status() != nil, "the first daemon still answers on its socket")

        await group.triggerGracefulShutdown()
        try await running.value
        await first.stop()
        #expect(!FileManager.default.fileExists(atPath: socket), "the first daemon removed its own socket")

        // Its lock is released: a new daemon for the same config starts.
        let third = try makeDaemon()
        try await third.start()
        await third.stop()
    }
}
