internal import Glibc

extension SIPTLSSettings {
    /// What is at `path` when it is there but is not a regular file ("a FIFO", "a directory",
    /// ...), nil for a regular file or nothing at all. A stat, never an open: asking cannot block.
    public static func nonRegularKind(at path: String) -> String? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        switch info.st_mode & S_IFMT {
        case S_IFREG: return nil
        case S_IFIFO: return "a FIFO"
        case S_IFDIR: return "a directory"
        case S_IFCHR, S_IFBLK: return "a device"
        case S_IFSOCK: return "a socket"
        default: return "not a plain file"
        }
    }

    /// The first of the configured files that is there but is not a regular file, with what it
    /// is: reading it could block an event loop for ever (a FIFO nobody writes).
    var nonRegularFile: (path: String, kind: String)? {
        for path in [caFile, certificateFile, keyFile].compactMap({ $0 }) {
            if let kind = Self.nonRegularKind(at: path) { return (path, kind) }
        }
        return nil
    }
}
