internal import Foundation
internal import Glibc
internal import Synchronization

/// One daemon per control socket: an exclusive `flock` on `SOCKET.lock`, beside the socket,
/// holding the owner's PID.
///
/// Invariants:
/// - While one instance holds the lock, ``acquire(socket:)`` in any other (or a second time in
///   the same process) throws a ``DaemonError`` naming the holder's PID; so only the holder ever
///   binds, replaces or removes the socket: a live daemon's socket is never taken over, while a
///   dead one's lock is released by the kernel and its stale socket is replaced.
/// - The lock file itself is never removed (removing it would let two instances lock two files).
public final class InstanceLock: Sendable {
    public let path: String
    private let descriptor: Mutex<Int32>

    private init(path: String, descriptor: Int32) {
        self.path = path
        self.descriptor = Mutex(descriptor)
    }

    /// The lock file of the control socket at `socket`.
    public static func lockPath(socket: String) -> String { socket + ".lock" }

    /// Creates the socket's directory (0700) when missing, then takes the lock and writes our PID.
    /// - Throws: ``DaemonError`` naming the running instance's PID when another one holds it.
    public static func acquire(socket: String) throws(DaemonError) -> InstanceLock {
        try ensureDirectory(of: socket)
        let path = lockPath(socket: socket)
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw .system("open \(path)") }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let busy = errno == EWOULDBLOCK
            let holder = busy ? readPID(fd) : nil
            let failure = DaemonError.system("flock \(path)")
            close(fd)
            guard busy else { throw failure }
            throw DaemonError(
                "another netres run (pid \(holder.map(String.init) ?? "unknown")) already serves \(socket)"
                    + " (lock \(path)); stop it first or give this config its own control-socket")
        }
        let text = Array("\(getpid())\n".utf8)
        guard ftruncate(fd, 0) == 0, pwrite(fd, text, text.count, 0) == text.count else {
            let failure = DaemonError.system("write \(path)")
            close(fd)
            throw failure
        }
        return InstanceLock(path: path, descriptor: fd)
    }

    /// Releases the lock (the kernel also does when the process dies); idempotent.
    public func release() {
        descriptor.withLock { fd in
            if fd >= 0 { close(fd) }
            fd = -1
        }
    }

    deinit { release() }

    /// The PID written in the lock file, read from its first 32 bytes and range-checked.
    static func readPID(_ fd: Int32) -> Int32? {
        var bytes = [UInt8](repeating: 0, count: 32)
        let count = pread(fd, &bytes, bytes.count, 0)
        guard count > 0 else { return nil }
        let text = String(decoding: bytes[..<count], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard let pid = Int32(text), pid > 0 else { return nil }
        return pid
    }

    /// Creates the parent directory of `socket` with mode 0700 when it does not exist.
    static func ensureDirectory(of socket: String) throws(DaemonError) {
        let directory = URL(fileURLWithPath: socket).deletingLastPathComponent().path
        if !FileManager.default.fileExists(atPath: directory) {
            guard mkdir(directory, 0o700) == 0 || errno == EEXIST else { throw .system("mkdir \(directory)") }
        }
    }
}
