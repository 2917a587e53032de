import Glibc

extension sockaddr_un {
    /// A unix socket address holding `path` (raw bytes: a leading NUL names the abstract
    /// namespace); nil when the bytes and a terminating NUL do not fit `sun_path` (108 bytes).
    init?(path: [UInt8]) {
        self.init()
        sun_family = sa_family_t(AF_UNIX)
        guard path.count < MemoryLayout.size(ofValue: sun_path) else { return nil }
        withUnsafeMutableBytes(of: &sun_path) { raw in raw.copyBytes(from: path) }
    }
}
