import Glibc

/// A dedicated OS thread for blocking work (poll(2) on netlink), kept off the cooperative pool
/// so a blocked reader never starves tasks.
enum ReaderThread {
    private final class Body {
        let run: @Sendable () -> Void
        init(_ run: @escaping @Sendable () -> Void) { self.run = run }
    }

    /// The name the reader thread carries in `/proc/self/task/*/comm` (at most 15 bytes), so
    /// its wake-ups can be counted from outside.
    static let name = "netres-netlink"

    /// Starts a detached thread named ``name`` running `body`. Returns false when the thread
    /// could not start.
    static func spawn(_ body: @escaping @Sendable () -> Void) -> Bool {
        let context = Unmanaged.passRetained(
            Body {
                nameCurrentThread()
                body()
            }
        ).toOpaque()
        var thread = pthread_t()
        let rc = pthread_create(
            &thread, nil,
            { context in
                Unmanaged<Body>.fromOpaque(context!).takeRetainedValue().run()
                return nil
            }, context)
        guard rc == 0 else {
            Unmanaged<Body>.fromOpaque(context).release()
            return false
        }
        pthread_detach(thread)
        return true
    }
}

extension ReaderThread {
    /// The calling thread's kernel id, read from the `/proc/thread-self` link ("PID/task/TID").
    static func currentID() -> Int32? {
        var buffer = [CChar](repeating: 0, count: 64)
        let count = readlink("/proc/thread-self", &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        let text = String(decoding: buffer.prefix(count).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return text.split(separator: "/").last.flatMap { Int32($0) }
    }
}

/// Names the calling thread through `/proc/thread-self/comm` (pthread_setname_np is hidden
/// without _GNU_SOURCE). Best effort: a failure only loses the name.
private func nameCurrentThread() {
    let fd = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
    guard fd >= 0 else { return }
    defer { close(fd) }
    var bytes = Array(ReaderThread.name.utf8)
    _ = write(fd, &bytes, bytes.count)
}

/// A self-pipe that wakes the reader out of poll(2) (shutdown, pause, resume, dump requests).
///
/// Invariant: both ends are non-blocking and close-on-exec; writes never block (a full pipe
/// already means "wake up"), and the reader drains it on every wake-up.
struct WakePipe: Sendable {
    let readEnd: Int32
    let writeEnd: Int32

    init() throws(NetlinkError) {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { throw NetlinkSocket.systemError("creating the wake-up pipe") }
        for fd in fds {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
        readEnd = fds[0]
        writeEnd = fds[1]
    }

    /// A pipe that is already closed: `start()` then fails instead of the initialiser.
    static let unavailable = WakePipe(readEnd: -1, writeEnd: -1)

    private init(readEnd: Int32, writeEnd: Int32) {
        self.readEnd = readEnd
        self.writeEnd = writeEnd
    }

    func wake() {
        var byte: UInt8 = 1
        _ = write(writeEnd, &byte, 1)
    }

    func drain() {
        var buffer = [UInt8](repeating: 0, count: 64)
        while read(readEnd, &buffer, buffer.count) > 0 {}
    }

    func close() {
        _ = Glibc.close(readEnd)
        _ = Glibc.close(writeEnd)
    }
}
