internal import Foundation
internal import Glibc

/// Push tokens (RFC 8599 `pn-prid`) on disk, one file per account.
///
/// Invariants: a write is atomic (a temporary file in the same directory, fsync, rename), so a
/// reader sees the old token or the new one, never a torn file; files are created mode 0600 and a
/// missing parent directory 0700. A missing or empty file means "no token known".
public enum PushTokenStore {
    /// The token in `path`, or nil when the file is missing, unreadable or empty.
    public static func read(_ path: String) -> String? {
        guard let data = FileManager.default.contents(atPath: path),
            let line = String(data: data, encoding: .utf8)?.split(whereSeparator: \.isNewline).first,
            !line.isEmpty
        else { return nil }
        return String(line)
    }

    /// Whether `token` can go into a Contact URI parameter unescaped (APNs hex, FCM `a-z0-9:_-`).
    public static func isValid(_ token: String) -> Bool {
        !token.isEmpty && token.utf8.count <= 4096
            && token.unicodeScalars.allSatisfy {
                $0.isASCII && (isAlphanumeric($0) || "-._:~".unicodeScalars.contains($0))
            }
    }

    private static func isAlphanumeric(_ s: Unicode.Scalar) -> Bool {
        ("a"..."z").contains(s) || ("A"..."Z").contains(s) || ("0"..."9").contains(s)
    }

    /// Replaces the token in `path` atomically.
    /// - Throws: ``DaemonError`` naming the path and the errno text.
    public static func write(_ token: String, to path: String) throws(DaemonError) {
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
        if !FileManager.default.fileExists(atPath: directory) {
            guard mkdir(directory, 0o700) == 0 || errno == EEXIST else { throw .system("mkdir \(directory)") }
        }
        let temporary = path + ".tmp-\(getpid())"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .system("open \(temporary)") }
        let bytes = Array((token + "\n").utf8)
        let written = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        let synced = fsync(fd) == 0
        close(fd)
        guard written == bytes.count, synced, rename(temporary, path) == 0 else {
            let error = DaemonError.system("write \(path)")
            unlink(temporary)
            throw error
        }
    }
}

/// Why the daemon could not start or carry out a command.
public struct DaemonError: Error, Hashable, Sendable, CustomStringConvertible {
    public var description: String

    public init(_ description: String) { self.description = description }

    /// `what: strerror(errno)`, read at once.
    static func system(_ what: String) -> DaemonError {
        DaemonError("\(what): \(String(cString: strerror(errno)))")
    }
}
