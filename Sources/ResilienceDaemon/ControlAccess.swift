internal import Glibc

/// Who may use the control socket, decided from the kernel's `SO_PEERCRED` of each connection
/// (not from the socket file's mode, which anyone with root can loosen by mistake).
///
/// Invariant: root, the daemon's effective user and, when a group is configured, that group's
/// members (primary or supplementary) are allowed; everyone else is refused.
public struct ControlAccess: Hashable, Sendable {
    /// Users always allowed: root and the daemon's effective user.
    public var users: Set<UInt32>
    /// Members of this group are allowed too.
    public var group: UInt32?

    /// - Parameter users: nil means root and this process's effective user.
    public init(users: Set<UInt32>? = nil, group: UInt32? = nil) {
        self.users = users ?? [0, UInt32(geteuid())]
        self.group = group
    }

    /// The connecting process as the kernel saw it at `connect`.
    public struct Peer: Hashable, Sendable, CustomStringConvertible {
        public init(pid: Int32, uid: UInt32, gid: UInt32) {
            (self.pid, self.uid, self.gid) = (pid, uid, gid)
        }

        public var pid: Int32
        public var uid: UInt32
        public var gid: UInt32

        public var description: String { "pid \(pid) uid \(uid) gid \(gid)" }
    }

    /// The kernel's `struct ucred` (pid, uid, gid: three 32-bit fields), which Swift's Glibc
    /// module does not export; read as the `SO_PEERCRED` socket option.
    struct KernelCredentials: Sendable {
        var pid: Int32 = 0
        var uid: UInt32 = 0
        var gid: UInt32 = 0
    }

    /// Why `peer` is refused, or nil when it may connect. `groups` lists the peer user's
    /// supplementary groups (only consulted when a group is configured).
    public func refusal(of peer: Peer, groups: () -> [UInt32] = { [] }) -> String? {
        if users.contains(peer.uid) { return nil }
        if let group {
            if peer.gid == group || groups().contains(group) { return nil }
            return "uid \(peer.uid) is not root, the daemon's user or a member of group \(group)"
        }
        return "uid \(peer.uid) is not root or the daemon's user"
    }

    /// The supplementary groups of user `uid` from the user database (empty when unknown), at most 256.
    public static func groups(ofUser uid: UInt32) -> [UInt32] {
        var entry = passwd()
        var found: UnsafeMutablePointer<passwd>?
        var text = [CChar](repeating: 0, count: 4096)
        guard getpwuid_r(uid, &entry, &text, text.count, &found) == 0, found != nil, let name = entry.pw_name else {
            return []
        }
        var count: Int32 = 256
        var list = [gid_t](repeating: 0, count: Int(count))
        guard getgrouplist(name, entry.pw_gid, &list, &count) >= 0 else { return [] }
        return Array(list.prefix(Int(max(0, min(count, 256)))))
    }

    /// The gid of group `name`, or nil when there is no such group.
    public static func groupID(named name: String) -> UInt32? {
        var entry = Glibc.group()
        var found: UnsafeMutablePointer<Glibc.group>?
        var text = [CChar](repeating: 0, count: 16_384)
        guard getgrnam_r(name, &entry, &text, text.count, &found) == 0, found != nil else { return nil }
        return entry.gr_gid
    }
}
