import CNetlink
import Glibc

/// The one owner of a libnl socket, and the only file that calls `nl_*`.
///
/// Invariants: the socket is connected to `NETLINK_ROUTE` for its whole life; sequence checks are
/// off (multicast events carry seq 0) and message peeking is on, so a datagram is never truncated
/// by a too-small user buffer; `deinit` frees it (which closes the descriptor).
struct NetlinkSocket: ~Copyable {
    /// rtnetlink multicast groups the event socket joins.
    static let eventGroups: [UInt32] = [
        RTNLGRP_LINK.rawValue, RTNLGRP_IPV4_IFADDR.rawValue, RTNLGRP_IPV6_IFADDR.rawValue,
        RTNLGRP_IPV4_ROUTE.rawValue, RTNLGRP_IPV6_ROUTE.rawValue,
    ]

    private let raw: OpaquePointer
    let fileDescriptor: Int32

    /// Opens and connects a socket, joining `groups` (none for a dump socket).
    init(groups: [UInt32] = [], nonBlocking: Bool = false) throws(NetlinkError) {
        guard let raw = nl_socket_alloc() else { throw Self.error(-NLE_NOMEM, "allocating a netlink socket") }
        nl_socket_disable_seq_check(raw)
        nl_socket_disable_auto_ack(raw)
        nl_socket_enable_msg_peek(raw)
        var rc = nl_connect(raw, NETLINK_ROUTE)
        for group in groups where rc >= 0 { rc = nl_socket_add_membership(raw, Int32(group)) }
        if rc >= 0, nonBlocking { rc = nl_socket_set_nonblocking(raw) }
        guard rc >= 0 else {
            nl_socket_free(raw)
            throw Self.error(rc, "opening the rtnetlink socket")
        }
        self.raw = raw
        self.fileDescriptor = nl_socket_get_fd(raw)
    }

    deinit { nl_socket_free(raw) }

    /// Asks for `bytes` of receive buffer, with `SO_RCVBUFFORCE` (root may pass `rmem_max`) and
    /// then `SO_RCVBUF`. Returns the size the kernel granted (it doubles the request for overhead).
    func setReceiveBuffer(_ bytes: Int) -> Int {
        var size = Int32(clamping: bytes)
        let length = socklen_t(MemoryLayout<Int32>.size)
        if setsockopt(fileDescriptor, SOL_SOCKET, SO_RCVBUFFORCE, &size, length) != 0 {
            _ = setsockopt(fileDescriptor, SOL_SOCKET, SO_RCVBUF, &size, length)
        }
        var granted: Int32 = 0
        var grantedLength = length
        _ = getsockopt(fileDescriptor, SOL_SOCKET, SO_RCVBUF, &granted, &grantedLength)
        return Int(granted)
    }

    /// What one read produced.
    enum Received {
        case datagram([RouteMessageDecoder.Framed])
        /// Nothing queued (`EAGAIN`): the socket is drained.
        case empty
        /// The kernel dropped messages (`ENOBUFS`, reported by libnl as `NLE_NOMEM`) or a message
        /// was truncated: the cache must be rebuilt from a dump.
        case overrun
    }

    /// Reads one datagram and decodes it. Datagrams not sent by the kernel are dropped.
    func receive() throws(NetlinkError) -> Received {
        var sender = sockaddr_nl()
        var buffer: UnsafeMutablePointer<UInt8>?
        let count = nl_recv(raw, &sender, &buffer, nil)
        defer { free(buffer) }
        switch count {
        case -NLE_AGAIN, 0: return .empty
        case -NLE_NOMEM, -NLE_MSG_TRUNC: return .overrun
        case ..<0: throw Self.error(count, "reading rtnetlink")
        default:
            guard sender.nl_pid == 0, let buffer else { return .datagram([]) }
            return .datagram(RouteMessageDecoder.decode(UnsafeRawBufferPointer(start: buffer, count: Int(count))))
        }
    }

    /// Dumps one table (`RTM_GETLINK`, `RTM_GETADDR`, `RTM_GETROUTE`) on a blocking socket.
    ///
    /// - Returns: the messages, or nil when the kernel flagged the dump as interrupted
    ///   (`NLM_F_DUMP_INTR`: the table changed meanwhile) and it must be repeated.
    func dump(_ request: RouteRequest) throws(NetlinkError) -> [RouteMessage]? {
        let rc = nl_rtgen_request(raw, request.rawValue, AF_UNSPEC, 0x300 /* NLM_F_DUMP */)
        guard rc >= 0 else { throw Self.error(rc, "requesting an rtnetlink dump") }
        var messages: [RouteMessage] = []
        var interrupted = false
        for _ in 0..<1_000_000 {
            guard case .datagram(let frames) = try receive() else {
                throw Self.error(-NLE_DUMP_INTR, "dump socket overran or closed")
            }
            for frame in frames {
                if frame.flags & Wire.flagDumpInterrupted != 0 { interrupted = true }
                switch frame.message {
                case .done: return interrupted ? nil : messages
                case .error(let code) where code < 0: throw NetlinkError(.system(-code), "dump failed: errno \(-code)")
                default: messages.append(frame.message)
                }
            }
        }
        throw Self.error(-NLE_RANGE, "dump did not end")
    }

    /// Moves the calling thread into the named network namespace (`/var/run/netns/NAME`, as
    /// `ip netns add` creates it). Sockets opened afterwards on this thread belong to it.
    static func enterNamespace(named name: String) throws(NetlinkError) {
        let fd = open("/var/run/netns/\(name)", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw systemError("opening network namespace \(name)") }
        defer { close(fd) }
        guard cnetlink_enter_net_namespace(fd) == 0 else { throw systemError("entering network namespace \(name)") }
    }

    /// `NLE_DUMP_INTR`, for callers that give up on repeated interrupted dumps.
    static let dumpInterrupted = NLE_DUMP_INTR

    static func error(_ code: Int32, _ doing: String) -> NetlinkError {
        NetlinkError(.library(abs(code)), "\(doing): \(String(cString: nl_geterror(code)))")
    }

    static func systemError(_ doing: String) -> NetlinkError {
        let code = Glibc.errno
        return NetlinkError(.system(code), "\(doing): \(String(cString: strerror(code)))")
    }
}

extension RouteRequest {
    static let links = RouteRequest(rawValue: Int32(RTM_GETLINK))
    static let addresses = RouteRequest(rawValue: Int32(RTM_GETADDR))
    static let routes = RouteRequest(rawValue: Int32(RTM_GETROUTE))
}

/// Which table to dump; a wrapper so callers need not see the C constants.
struct RouteRequest: RawRepresentable, Sendable {
    var rawValue: Int32
}
