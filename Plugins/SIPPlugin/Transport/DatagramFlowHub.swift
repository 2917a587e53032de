internal import NIOCore
internal import NIOPosix
internal import Synchronization

/// The shared UDP sockets of one plugin: one per local address (and interface,
/// ``InterfaceBinding``) and registrar address, carrying
/// every account registering there (``SharedDatagramSocket``), so 1,000 accounts need one
/// descriptor (two with the socket's Contact twin, ``ContactListener``) and one event loop
/// instead of 1,000 of each.
///
/// Invariants:
/// - Two accounts with the same user never share a socket (requests are told apart by the
///   Request-URI's user): the second gets a socket of its own, under the same key.
/// - Concurrent opens for one key share one socket being opened; a failed open is forgotten,
///   so the next request tries again.
/// - A socket closes when its last account leaves (``release(user:from:)``), and is forgotten
///   when it closes on its own (ECONNREFUSED), so the next flow opens a fresh one.
final class DatagramFlowHub: Sendable {
    private struct Key: Hashable {
        var local: String
        var interface: Int32?
        var remote: SocketAddress
    }
    private struct Entry {
        var id: UInt64
        var users: Set<String>
        var socket: EventLoopFuture<SharedDatagramSocket>
    }
    private struct State {
        var entries: [Key: [Entry]] = [:]
        var nextID: UInt64 = 0
    }
    private let state = Mutex(State())
    let log: ThrottledLog
    /// What the plugin's accounts (UDP and stream alike) share about their registrars' memory:
    /// the binding queries' turns and the alarm when one registrar forgot (``BindingWatch``).
    let bindingWatch = BindingWatch()

    /// - Parameter log: malformed datagrams on the shared sockets are logged here, rate-limited.
    init(log: ThrottledLog) { self.log = log }

    /// The sockets open now (for tests and status).
    var socketCount: Int { state.withLock { $0.entries.values.reduce(0) { $0 + $1.count } } }

    /// A socket from `local` (bound to `interface` when given) to `remote` on which `user` is
    /// reserved; the caller attaches its flow and calls ``release(user:from:)`` when the flow ends.
    func socket(for user: String, local: String, interface: Int32? = nil, remote: SocketAddress) async throws -> (
        socket: SharedDatagramSocket, entry: UInt64
    ) {
        let key = Key(local: local, interface: interface, remote: remote)
        let localAddress = try SocketAddress(ipAddress: local, port: 0)
        let (entry, opening) = state.withLock { state -> (Entry, EventLoopPromise<SharedDatagramSocket>?) in
            if let index = state.entries[key]?.firstIndex(where: { !$0.users.contains(user) }) {
                state.entries[key]![index].users.insert(user)
                return (state.entries[key]![index], nil)
            }
            state.nextID += 1
            let promise = MultiThreadedEventLoopGroup.singleton.any().makePromise(of: SharedDatagramSocket.self)
            let entry = Entry(id: state.nextID, users: [user], socket: promise.futureResult)
            state.entries[key, default: []].append(entry)
            return (entry, promise)
        }
        // The open starts outside the lock: its callbacks take the lock.
        if let opening {
            let id = entry.id
            let opened = SharedDatagramSocket.open(
                local: localAddress, interface: interface, remote: remote, log: log
            ) { [weak self] in
                self?.forget(id, key: key)
            }
            opened.whenFailure { [weak self] _ in self?.forget(id, key: key) }
            opening.completeWith(opened)
        }
        do {
            return (try await entry.socket.get(), entry.id)
        } catch {
            release(user: user, from: entry.id)
            throw error
        }
    }

    /// `user` left socket `id`; the socket closes when nobody is left on it.
    func release(user: String, from id: UInt64) {
        let emptied = state.withLock { state -> EventLoopFuture<SharedDatagramSocket>? in
            for (key, entries) in state.entries {
                guard let index = entries.firstIndex(where: { $0.id == id }) else { continue }
                state.entries[key]![index].users.remove(user)
                guard state.entries[key]![index].users.isEmpty else { return nil }
                let socket = state.entries[key]!.remove(at: index).socket
                if state.entries[key]!.isEmpty { state.entries.removeValue(forKey: key) }
                return socket
            }
            return nil
        }
        emptied?.whenSuccess { $0.channel.close(promise: nil) }
    }

    private func forget(_ id: UInt64, key: Key) {
        state.withLock { state in
            state.entries[key]?.removeAll { $0.id == id }
            if state.entries[key]?.isEmpty == true { state.entries.removeValue(forKey: key) }
        }
    }
}
