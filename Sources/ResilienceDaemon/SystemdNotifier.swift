internal import Foundation
import Glibc
import NIOPosix
import ResilienceRuntime
import ServiceLifecycle

/// systemd's readiness protocol (`sd_notify(3)`) without libsystemd: one datagram per message to
/// the unix socket named by `NOTIFY_SOCKET` (a path, or `@name` for the abstract namespace).
///
/// Invariants: nil when `NOTIFY_SOCKET` is unset or unusable (not under systemd); a failed send is
/// ignored (systemd gone) and never blocks; `watchdogInterval` is set only when `WATCHDOG_USEC`
/// holds a positive number and `WATCHDOG_PID`, when present, names this process.
public struct SystemdNotifier: Sendable {
    /// The socket address, as systemd gave it.
    public let socketPath: String
    /// How often systemd expects `WATCHDOG=1` at least (the unit's `WatchdogSec`).
    public let watchdogInterval: Duration?

    /// This process's environment.
    public static var processEnvironment: [String: String] { ProcessInfo.processInfo.environment }

    public init?(environment: [String: String]) {
        guard let path = environment["NOTIFY_SOCKET"], path.hasPrefix("/") || path.hasPrefix("@"),
            path.utf8.count < 108
        else { return nil }
        socketPath = path
        let pidMatches = environment["WATCHDOG_PID"].map { $0 == String(getpid()) } ?? true
        if pidMatches, let text = environment["WATCHDOG_USEC"], let usec = Int64(text), usec > 0,
            usec <= 86_400_000_000
        {
            watchdogInterval = .microseconds(usec)
        } else {
            watchdogInterval = nil
        }
    }

    /// Sends one message (`READY=1`, `WATCHDOG=1`, `STOPPING=1`); returns whether it was sent.
    @discardableResult
    public func notify(_ message: String) -> Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var bytes = Array(socketPath.utf8)
        if bytes.first == UInt8(ascii: "@") { bytes[0] = 0 }  // the abstract namespace
        guard var address = sockaddr_un(path: bytes) else { return false }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count)
        let sent = message.utf8CString.withUnsafeBufferPointer { text in
            withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(fd, text.baseAddress, text.count - 1, Int32(MSG_NOSIGNAL), $0, length)
                }
            }
        }
        return sent == message.utf8.count
    }
}

/// Sends `WATCHDOG=1` at once and then every half watchdog interval, each time only after the
/// manager answered a status request: a wedged manager stops the pings and systemd restarts it.
/// Sleeps on an ``EventLoopClock``, never `Task.sleep`: one `Task.sleep` starts libdispatch's
/// once-a-second pool monitor for good (see `QuietConcurrencyRuntime`).
struct WatchdogPinger: Service {
    let notifier: SystemdNotifier
    let manager: ResilienceManager

    func run() async throws {
        guard let interval = notifier.watchdogInterval else { return }
        let clock = EventLoopClock(eventLoop: MultiThreadedEventLoopGroup.singleton.next())
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                _ = await manager.status()
                notifier.notify("WATCHDOG=1")
                try? await clock.sleep(for: interval / 2)
            }
        }
    }
}
