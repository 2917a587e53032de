import Foundation
import Glibc
import Logging
import ResilienceCore
import ResilienceDaemon
import ResilienceTesting
import ServiceLifecycle
import Testing

/// A fake `NOTIFY_SOCKET`: a datagram unix socket the test binds, read on a dedicated thread
/// (blocking `recv` never runs on Swift's shared threads) into a stream of messages.
final class FakeNotifySocket: Sendable {
    let path: String
    let messages: AsyncStream<String>
    private let fd: Int32

    init() throws {
        let path = "/tmp/netres-notify-\(UInt32.random(in: 0...UInt32.max)).sock"
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        (self.path, self.fd) = (path, fd)
        guard fd >= 0 else { throw POSIXError(.EIO) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in path.utf8.enumerated() { raw[index] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard bound == 0 else {
            close(fd)
            throw POSIXError(.EADDRINUSE)
        }
        var timeout = timeval(tv_sec: 1, tv_usec: 0)  // lets the reader notice the close
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let (stream, continuation) = AsyncStream<String>.makeStream()
        messages = stream
        Thread.detachNewThread {
            var buffer = [UInt8](repeating: 0, count: 4096)
            for _ in 0..<120 {  // at most 120 one-second waits: a hang guard
                let count = recv(fd, &buffer, buffer.count, 0)
                if count > 0 {
                    continuation.yield(String(decoding: buffer[..<count], as: UTF8.self))
                } else if count < 0 && errno != EAGAIN && errno != EINTR {
                    break
                }
            }
            close(fd)
            continuation.finish()
        }
    }

    func remove() {
        shutdown(fd, Int32(SHUT_RDWR))
        unlink(path)
    }
}

@Suite(.timeLimit(.minutes(3)))
struct SystemdNotifierTests {
    @Test func theDaemonSaysReadyOnceThePathIsKnownAndPingsTheWatchdog() async throws {
        let socket = try FakeNotifySocket()
        defer { socket.remove() }
        let messages = EventRecorder.recording(socket.messages)
        let directory = "/tmp/netres-notify-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let config = try configWithoutAccounts(
            "control-socket: ctl.sock\n", file: directory + "/netres.yaml", directory: directory)
        var logger = Logger(label: "notify-test")
        logger.logLevel = .warning
        let daemon = try Daemon(
            config: config, source: ScriptedNetworkSource(),
            environment: ["NOTIFY_SOCKET": socket.path, "WATCHDOG_USEC": "200000"], output: { _ in }, logger: logger)
        try await daemon.start()
        let group = daemon.makeGroup(signals: [])
        let running = Task { try await group.run() }
        let seen = try await messages.wait("READY=1 and three watchdog pings") {
            $0.contains("READY=1") && $0.filter { $0 == "WATCHDOG=1" }.count >= 3
        }
        await group.triggerGracefulShutdown()
        try await running.value
        await daemon.stop()
        #expect(seen.filter { $0 == "READY=1" }.count == 1)
    }

    @Test func withoutNotifySocketThereIsNoNotifierAndABadWatchdogIsIgnored() {
        #expect(SystemdNotifier(environment: [:]) == nil)
        #expect(SystemdNotifier(environment: ["NOTIFY_SOCKET": "relative"]) == nil)
        let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": "@netres-test", "WATCHDOG_USEC": "-5"])
        #expect(notifier?.socketPath == "@netres-test" && notifier?.watchdogInterval == nil)
        let other = SystemdNotifier(
            environment: ["NOTIFY_SOCKET": "/run/x", "WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "1"])
        #expect(other?.watchdogInterval == nil, "WATCHDOG_PID names another process")
        let mine = SystemdNotifier(
            environment: ["NOTIFY_SOCKET": "/run/x", "WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "\(getpid())"])
        #expect(mine?.watchdogInterval == .seconds(30))
    }
}
